/**
 * The engine's side of webhooks (DESIGN §4): the loopback listener, and a subscription created or
 * reused at start for the public URL the user gave (a tunnel's https address; never the listener's
 * own). The hmac is generated here, kept in the SecretStore and never shown. Received `document.*`
 * events tell the UI to refresh what it shows.
 */
import { randomBytes } from 'node:crypto';
import type { SubscriptionDto } from '../../../shared/schemas.js';
import type { ApiClient } from '../api/api-client.js';
import { ApiProblemError } from '../api/api-errors.js';
import type { Journal } from '../journal/journal.js';
import type { WebhookRecord } from '../journal/webhook-ledger.js';
import type { SecretStore } from '../home/secrets.js';
import { DEFAULT_WEBHOOK_PATH, STALE_TIMESTAMP_REASON, startWebhookListener, type WebhookListener, type WebhookMessage } from './webhook-listener.js';

export const WEBHOOK_HMAC_ACCOUNT = 'webhook-hmac';
export const SUBSCRIBED_EVENTS = ['document.all', 'patient.all'];

export interface WebhookStatus {
  listening: boolean;
  localUrl: string | null;
  publicUrl: string | null;
  subscribed: boolean;
  error: string | null;
}

/** Said when no subscription can exist: no public address, and the server is not this computer's own. */
export const NEEDS_PUBLIC_ADDRESS =
  'Not subscribed — needs a public address. The server cannot reach this computer’s listener, so changes made elsewhere (new patients, consent, other workstations’ uploads) show only when a screen is read again. Ask IT for a tunnel’s https address and enter it under Public address; files sync either way.';

export interface WebhookWiringOptions {
  journal: Pick<Journal, 'seenMessage' | 'recordWebhook' | 'webhookActivity'>;
  secrets: SecretStore;
  host?: string;
  onDocumentsChanged: (patientId: string | null) => void;
  /** The server says a document's stored content was lost or is back (`document.lost`, `document.restored`): synced files are checked again soon. */
  onContentLost?: () => void;
  /** Every delivery the listener judged (accepted, duplicate or rejected). */
  onActivity: () => void;
  onError?: (error: unknown) => void;
  /** This computer's clock (a seam for tests); deliveries are judged by the server's clock estimated from it. */
  now?: () => number;
}

export interface WebhookStartInput {
  port: number;
  publicUrl: string | null;
  subscriptionId: string | null;
  api: ApiClient | null;
  /**
   * The server runs on this computer (the embedded one): without a public address the server is
   * subscribed to the listener's own loopback address, which it can reach.
   */
  loopback?: boolean;
}

export class WebhookWiring {
  private listener: WebhookListener | undefined;
  private hmac: string | undefined;
  private status: WebhookStatus = { listening: false, localUrl: null, publicUrl: null, subscribed: false, error: null };
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: WebhookWiringOptions) {}

  current(): WebhookStatus {
    return { ...this.status };
  }

  /**
   * (Re)starts the listener and makes sure the subscription exists, or, with no public URL, that
   * none is left delivering to the old one. Returns the subscription id (null when there is none).
   */
  start(input: WebhookStartInput): Promise<string | null> {
    return this.serially(() => this.restart(input));
  }

  stop(): Promise<void> {
    return this.serially(() => this.close());
  }

  /** Two quick saves in Settings must not run two listeners, or race for one port. */
  private serially<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async restart(input: WebhookStartInput): Promise<string | null> {
    await this.close();
    this.hmac = await this.options.secrets.get(WEBHOOK_HMAC_ACCOUNT);
    const ledger = {
      seenMessage: (messageId: string) => this.options.journal.seenMessage(messageId),
      recordWebhook: (record: WebhookRecord) => {
        this.options.journal.recordWebhook(record);
        this.noteClock(record);
        this.options.onActivity();
      },
    };
    const publicCallback = input.publicUrl ? callbackUrl(input.publicUrl) : null;
    try {
      this.listener = await startWebhookListener({
        host: this.options.host ?? '127.0.0.1',
        port: input.port,
        // A tunnel passes the path on unchanged: serve the one the server is told to call.
        path: publicCallback ? new URL(publicCallback).pathname : DEFAULT_WEBHOOK_PATH,
        getSecret: () => this.hmac,
        // The replay window is judged on the server's clock (learnt from the Date of its answers), so a
        // workstation whose clock drifted does not refuse every delivery.
        now: () => (this.options.now ?? Date.now)() + (input.api?.serverClockOffsetMs() ?? 0),
        journal: ledger,
        onEvent: (message) => this.onMessage(message),
        ...(this.options.onError ? { onError: this.options.onError } : {}),
      });
    } catch (error) {
      this.listener = undefined;
      this.status = { listening: false, localUrl: null, publicUrl: input.publicUrl, subscribed: false, error: `The webhook listener could not start: ${describe(error)}` };
      return input.subscriptionId;
    }
    this.status = { listening: true, localUrl: this.listener.url, publicUrl: input.publicUrl, subscribed: false, error: null };
    if (!input.api) return input.subscriptionId;
    const callback = publicCallback ?? (input.loopback ? this.listener.url : null);
    if (!callback) {
      const left = await this.unsubscribe(input.api, input.subscriptionId);
      this.status.error ??= NEEDS_PUBLIC_ADDRESS;
      return left;
    }
    try {
      const id = await this.ensureSubscription(input.api, callback, input.subscriptionId);
      this.status.subscribed = true;
      return id;
    } catch (error) {
      this.status.error = `The webhook subscription could not be set up: ${describe(error)}`;
      return input.subscriptionId;
    }
  }

  /**
   * Deliveries refused for their time are not silent: the status says so and why (most often this
   * computer's clock, or time zone, is wrong). The first accepted one clears it.
   */
  private noteClock(record: WebhookRecord): void {
    if (record.verdict === 'rejected' && record.reason?.startsWith(STALE_TIMESTAMP_REASON)) {
      const detail = record.reason.slice(STALE_TIMESTAMP_REASON.length).replace(/^\s*\((.*)\)$/, '$1');
      this.status.error = `Server notifications (webhooks) are being refused: ${detail || 'their time is more than 5 minutes off'}. Check this computer's date, time and time zone. Files still sync: the app checks the server itself, only the instant updates are missing.`;
    } else if (record.verdict === 'accepted' && this.status.error?.startsWith('Server notifications (webhooks) are being refused')) {
      this.status.error = null;
    }
  }

  private async close(): Promise<void> {
    await this.listener?.close();
    this.listener = undefined;
    this.status = { ...this.status, listening: false, localUrl: null };
  }

  /** The public URL was cleared: the server must stop delivering patient events to the old one. */
  private async unsubscribe(api: ApiClient, subscriptionId: string | null): Promise<string | null> {
    if (!subscriptionId) return null;
    try {
      await api.json({ method: 'DELETE', url: `${apiBase(api)}/v1/webhooks/${subscriptionId}`, organization: true });
      return null;
    } catch (error) {
      if (error instanceof ApiProblemError && error.status === 404) return null;
      this.status.error = `The old webhook subscription could not be removed: ${describe(error)}`;
      return subscriptionId;
    }
  }

  private async ensureSubscription(api: ApiClient, publicUrl: string, subscriptionId: string | null): Promise<string> {
    const hadSecret = this.hmac !== undefined;
    if (!this.hmac) {
      this.hmac = randomBytes(32).toString('base64url');
      await this.options.secrets.set(WEBHOOK_HMAC_ACCOUNT, this.hmac);
    }
    const existing = await api.json<SubscriptionDto[]>({ method: 'GET', url: `${apiBase(api)}/v1/webhooks`, organization: true });
    const mine = existing.find((subscription) => subscription.id === subscriptionId) ?? existing.find((subscription) => subscription.callback === publicUrl);
    // Reusable only when it calls the same URL and we still hold the hmac it was created with.
    if (mine && hadSecret && mine.callback === publicUrl && mine.status === 'active') return mine.id;
    if (mine) await api.json({ method: 'DELETE', url: `${apiBase(api)}/v1/webhooks/${mine.id}`, organization: true });
    const created = await api.json<SubscriptionDto>({
      method: 'POST',
      url: `${apiBase(api)}/v1/webhooks/subscribe`,
      json: { events: SUBSCRIBED_EVENTS, callback: publicUrl, hmac: this.hmac },
      organization: true,
    });
    return created.id;
  }

  private onMessage(message: WebhookMessage): void {
    if (message.eventType.startsWith('document.')) this.options.onDocumentsChanged(message.patientId ?? null);
    // Lost, or back after a restore: either way the re-check has something to find.
    if (message.eventType === 'document.lost' || message.eventType === 'document.restored') this.options.onContentLost?.();
  }
}

/**
 * What the server calls: the public URL as given, or, for a bare address (a tunnel's origin), that
 * address with the listener's own path, which is what the tunnel will then forward to.
 */
export function callbackUrl(publicUrl: string): string {
  const url = new URL(publicUrl);
  if (url.pathname === '/' || url.pathname === '') url.pathname = DEFAULT_WEBHOOK_PATH;
  return url.toString();
}

function apiBase(api: ApiClient): string {
  return api.serverUrl;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
