/** Wires the delivery worker from the server's context: what start.ts runs next to the HTTP server. */
import type { ServerContext } from '../context.js';
import { DEFAULT_DISPATCHER_OPTIONS, WebhookDispatcher, type DispatcherLog, type DispatcherOptions } from './dispatcher.js';
import { DEFAULT_RETENTION_INTERVAL_MS, WebhookRetention } from './retention.js';
import { ThreadedSender } from './send-thread.js';

export interface WebhookDelivery {
  dispatcher: WebhookDispatcher;
  /** Present when PATIENT_DOCS_WEBHOOK_RETENTION_DAYS is set: what delivery has finished with goes after that many days. */
  retention: WebhookRetention | undefined;
  stop(): Promise<void>;
}

export function startWebhookDelivery(context: ServerContext, log: DispatcherLog, overrides: Partial<DispatcherOptions> = {}): WebhookDelivery {
  const options: DispatcherOptions = {
    ...DEFAULT_DISPATCHER_OPTIONS,
    retryDelaysMs: context.config.webhookRetryDelaysMs,
    timeoutMs: context.config.webhookTimeoutMs,
    ...overrides,
  };
  const sender = new ThreadedSender({ maxSocketsPerHost: options.maxPerCallback, maxSockets: options.maxConcurrency });
  const dispatcher = new WebhookDispatcher(
    {
      outbox: context.store.outbox,
      patients: context.store.patients,
      webhooks: context.store.webhooks,
      secrets: context.webhookSecrets,
      guard: context.callbackGuard,
      send: sender.send,
      log,
    },
    options,
  );
  dispatcher.start();
  const days = context.config.webhookRetentionDays;
  const retention = days === undefined ? undefined : new WebhookRetention(context.store.webhooks, { days, intervalMs: DEFAULT_RETENTION_INTERVAL_MS }, log, context.store.leases);
  retention?.start();
  return {
    dispatcher,
    retention,
    stop: async () => {
      await retention?.stop();
      await dispatcher.stop();
      await sender.close();
    },
  };
}
