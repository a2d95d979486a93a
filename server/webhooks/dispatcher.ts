/**
 * The delivery worker (DESIGN §3 "Webhooks"), started with the server and never called from a
 * request handler. One loop:
 *  1. fan-out: reads the outbox after the persisted cursor and writes one message per matching,
 *     routable subscription — messages and the new cursor in one transaction;
 *  2. schedule: claims due messages within the overall and per-callback limits and sends them.
 * Every state change is in the database first, so a crash at any point loses nothing: messages
 * caught mid-attempt are sent again after a restart with the same messageId (at-least-once).
 */
import { subscriptionMatches } from '../../shared/events.js';
import type { OutboxEvent, OutboxRepository, PatientRepository, WebhookAttemptResult, WebhookMessageRecord, WebhookRepository, WebhookSubscriptionRecord } from '../db/types.js';
import type { SecretBox } from './secret-box.js';
import type { Sender, SendResult } from './sender.js';
import { deliveryHeaders, messageBody, messageIdFor } from './signer.js';
import { CallbackRefused, parseCallback, type CallbackGuard, type ResolvedAddress } from './ssrf.js';

export interface DispatcherOptions {
  retryDelaysMs: number[];
  timeoutMs: number;
  /** Attempts in flight overall. */
  maxConcurrency: number;
  /** Attempts in flight per callback origin, so one slow receiver cannot take every slot. */
  maxPerCallback: number;
  pollIntervalMs: number;
  batchSize: number;
  /** How long an approved DNS answer is reused (it is re-checked after). */
  dnsCacheMs: number;
}

export const DEFAULT_DISPATCHER_OPTIONS: Omit<DispatcherOptions, 'retryDelaysMs' | 'timeoutMs'> = {
  maxConcurrency: 128,
  maxPerCallback: 16,
  pollIntervalMs: 25,
  batchSize: 500,
  dnsCacheMs: 5000,
};

export interface DispatcherLog {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
  debug(object: object, message: string): void;
}

export interface DispatcherDeps {
  outbox: OutboxRepository;
  patients: PatientRepository;
  webhooks: WebhookRepository;
  secrets: SecretBox;
  guard: CallbackGuard;
  send: Sender;
  log: DispatcherLog;
  now?: () => number;
}

interface DueEntry {
  subscriptionId: string;
  due: number;
}

export class WebhookDispatcher {
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private cursor: number | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly perCallback = new Map<string, number>();
  private dueList: DueEntry[] = [];
  private dueListAt = 0;
  private rotation = 0;
  private readonly dnsCache = new Map<string, { address: ResolvedAddress; expires: number }>();
  private wakeRequested = false;
  private wakeUp: (() => void) | undefined;
  private sleepTimer: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly options: DispatcherOptions,
  ) {
    this.now = deps.now ?? Date.now;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loopDone = this.loop();
  }

  /** Stops claiming; waits briefly for attempts in flight (those cut short are re-sent after the next start). */
  async stop(graceMs = Math.min(this.options.timeoutMs, 2000)): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wake();
    await this.loopDone;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([Promise.allSettled([...this.inFlight]), grace]);
    clearTimeout(timer);
  }

  /** Ask the loop to look again now (new events, a freed slot, a redelivery). */
  wake(): void {
    this.wakeRequested = true;
    const wakeUp = this.wakeUp;
    this.wakeUp = undefined;
    if (this.sleepTimer) clearTimeout(this.sleepTimer);
    wakeUp?.();
  }

  private async loop(): Promise<void> {
    try {
      const recovered = await this.deps.webhooks.recoverInterrupted();
      if (recovered > 0) this.deps.log.info({ recovered }, 'webhook messages interrupted by a restart are pending again');
    } catch (error) {
      this.deps.log.error({ err: error }, 'webhook recovery failed');
    }
    while (this.running) {
      this.wakeRequested = false;
      try {
        await this.fanOut();
        await this.schedule();
      } catch (error) {
        this.deps.log.error({ err: error }, 'webhook dispatcher iteration failed; retrying');
      }
      await this.idle();
    }
  }

  private idle(): Promise<void> {
    if (this.wakeRequested || !this.running) return Promise.resolve();
    return new Promise((resolve) => {
      this.wakeUp = resolve;
      this.sleepTimer = setTimeout(() => {
        this.wakeUp = undefined;
        resolve();
      }, this.options.pollIntervalMs);
    });
  }

  // --- fan-out -------------------------------------------------------------------------------

  private async fanOut(): Promise<void> {
    for (let round = 0; round < 4 && this.running; round += 1) {
      this.cursor ??= await this.deps.webhooks.cursor();
      const events = await this.deps.outbox.after(this.cursor, this.options.batchSize);
      const last = events.at(-1);
      if (!last) return;
      const subscriptions = await this.deps.webhooks.activeSubscriptions();
      const routable = new Map<string, boolean>();
      const createdAt = new Date(this.now()).toISOString();
      const messages = [];
      for (const event of events) {
        for (const subscription of subscriptions) {
          if (event.sequence <= subscription.fromSequence || !subscriptionMatches(subscription.events, event.eventType)) continue;
          if (!(await this.isRoutable(event, subscription.organizationId, routable))) continue;
          const id = messageIdFor(event.id, subscription.id);
          messages.push({
            id,
            subscriptionId: subscription.id,
            eventId: event.id,
            eventType: event.eventType,
            patientId: event.patientId,
            body: messageBody(event, id, subscription.organizationId),
            nextAttemptAt: this.now(),
            createdAt,
          });
        }
      }
      await this.deps.webhooks.enqueue(messages, last.sequence);
      this.cursor = last.sequence;
      if (messages.length > 0) this.dueListAt = 0;
      if (events.length < this.options.batchSize) return;
    }
  }

  /**
   * A patient's events go only to organizations with access to and consent from the patient;
   * an event without a patient goes only to the organization that caused it.
   */
  private async isRoutable(event: Pick<OutboxEvent, 'patientId' | 'organizationId'>, organizationId: string, cache?: Map<string, boolean>): Promise<boolean> {
    if (event.patientId === null) return event.organizationId === organizationId;
    const key = `${event.patientId}|${organizationId}`;
    const cached = cache?.get(key);
    if (cached !== undefined) return cached;
    const access = await this.deps.patients.access(event.patientId, organizationId);
    const allowed = access.exists && access.access && access.consent;
    cache?.set(key, allowed);
    return allowed;
  }

  // --- scheduling ----------------------------------------------------------------------------

  private async schedule(): Promise<void> {
    const now = this.now();
    if (this.dueList.length === 0 || now - this.dueListAt >= this.options.pollIntervalMs) {
      this.dueList = await this.deps.webhooks.dueSubscriptions(now);
      this.dueListAt = now;
    }
    const count = this.dueList.length;
    if (count === 0) return;
    // Rotate the starting subscription so subscriptions sharing a callback take turns.
    this.rotation = (this.rotation + 1) % count;
    for (let index = 0; index < count && this.inFlight.size < this.options.maxConcurrency; index += 1) {
      const entry = this.dueList[(this.rotation + index) % count];
      if (!entry || entry.due <= 0) continue;
      const subscription = await this.deps.webhooks.getSubscription(entry.subscriptionId);
      if (!subscription || subscription.status !== 'active') {
        for (const message of await this.deps.webhooks.claimDue(entry.subscriptionId, now, entry.due)) {
          await this.deps.webhooks.cancel(message.id, subscription ? `subscription ${subscription.status}` : 'subscription deleted', new Date(now).toISOString());
        }
        entry.due = 0;
        continue;
      }
      const origin = callbackOrigin(subscription.callback);
      const free = Math.min(this.options.maxPerCallback - (this.perCallback.get(origin) ?? 0), this.options.maxConcurrency - this.inFlight.size, entry.due);
      if (free <= 0) continue;
      const claimed = await this.deps.webhooks.claimDue(entry.subscriptionId, now, free);
      entry.due = claimed.length < free ? 0 : entry.due - claimed.length;
      for (const message of claimed) this.launch(message, subscription, origin);
    }
    this.dueList = this.dueList.filter((entry) => entry.due > 0);
  }

  private launch(message: WebhookMessageRecord, subscription: WebhookSubscriptionRecord, origin: string): void {
    this.perCallback.set(origin, (this.perCallback.get(origin) ?? 0) + 1);
    const task = this.attempt(message, subscription)
      .catch((error: unknown) => this.deps.log.error({ err: error, messageId: message.id }, 'webhook attempt could not be recorded'))
      .finally(() => {
        this.inFlight.delete(task);
        const left = (this.perCallback.get(origin) ?? 1) - 1;
        if (left <= 0) this.perCallback.delete(origin);
        else this.perCallback.set(origin, left);
        this.wake();
      });
    this.inFlight.add(task);
  }

  // --- one attempt ---------------------------------------------------------------------------

  private async attempt(message: WebhookMessageRecord, claimedFor: WebhookSubscriptionRecord): Promise<void> {
    const attemptedAt = new Date(this.now());
    // Routing is decided again at every attempt: a revoked consent stops pending deliveries.
    const subscription = await this.deps.webhooks.getSubscription(claimedFor.id);
    if (!subscription || subscription.status !== 'active') {
      await this.deps.webhooks.cancel(message.id, subscription ? `subscription ${subscription.status}` : 'subscription deleted', attemptedAt.toISOString());
      return;
    }
    if (message.patientId !== null && !(await this.isRoutable({ patientId: message.patientId, organizationId: null }, subscription.organizationId))) {
      await this.deps.webhooks.cancel(message.id, 'the organization no longer has access to or consent from the patient', attemptedAt.toISOString());
      this.deps.log.info({ messageId: message.id, subscriptionId: subscription.id }, 'webhook message cancelled: access or consent withdrawn');
      return;
    }
    const result = await this.post(message, subscription, attemptedAt);
    const outcome = this.outcome(message, subscription, result, attemptedAt);
    await this.deps.webhooks.recordAttempt(message.id, outcome);
    const level = outcome.state === 'delivered' ? 'debug' : 'info';
    this.deps.log[level](
      { messageId: message.id, subscriptionId: subscription.id, attempt: outcome.attempt.attempt, statusCode: result.statusCode, latencyMs: result.latencyMs, error: result.error, state: outcome.state },
      'webhook attempt',
    );
  }

  private async post(message: WebhookMessageRecord, subscription: WebhookSubscriptionRecord, attemptedAt: Date): Promise<SendResult> {
    try {
      const url = parseCallback(subscription.callback);
      const address = await this.resolve(url);
      const hmac = this.deps.secrets.open(subscription.sealedSecret, subscription.id);
      return await this.deps.send({ url, address, body: message.body, headers: deliveryHeaders(message.id, message.body, hmac, attemptedAt), timeoutMs: this.options.timeoutMs });
    } catch (error) {
      if (error instanceof CallbackRefused) return { statusCode: null, latencyMs: 0, error: error.message };
      this.deps.log.error({ err: error, subscriptionId: subscription.id }, 'webhook attempt could not be prepared');
      return { statusCode: null, latencyMs: 0, error: 'the delivery could not be prepared (see the server log)' };
    }
  }

  /** The SSRF guard on every attempt; an approved answer is reused briefly and stays pinned for the connection. */
  private async resolve(url: URL): Promise<ResolvedAddress> {
    const cached = this.dnsCache.get(url.hostname);
    if (cached && cached.expires > this.now()) return cached.address;
    const address = await this.deps.guard.resolve(url);
    this.dnsCache.set(url.hostname, { address, expires: this.now() + this.options.dnsCacheMs });
    return address;
  }

  private outcome(message: WebhookMessageRecord, subscription: WebhookSubscriptionRecord, result: SendResult, attemptedAt: Date): WebhookAttemptResult {
    const attemptNumber = message.attempts + 1;
    const status = result.statusCode;
    const finished = this.now();
    const base = {
      messageId: message.id,
      subscriptionId: subscription.id,
      attempt: attemptNumber,
      attemptedAt: attemptedAt.toISOString(),
      statusCode: status,
      latencyMs: result.latencyMs,
    };
    if (status !== null && status >= 200 && status < 300) {
      return { attempt: { ...base, error: null, outcome: 'delivered' }, state: 'delivered', nextAttemptAt: finished };
    }
    const error = result.error ?? `callback answered HTTP ${status ?? '?'}`;
    if (status === 410) {
      const reason = `callback answered 410 Gone at ${attemptedAt.toISOString()}`;
      return { attempt: { ...base, error, outcome: 'gone' }, state: 'cancelled', nextAttemptAt: finished, disableSubscription: reason };
    }
    const delay = this.options.retryDelaysMs[attemptNumber - 1];
    if (delay === undefined) return { attempt: { ...base, error, outcome: 'dead' }, state: 'dead', nextAttemptAt: finished };
    return { attempt: { ...base, error, outcome: 'retry' }, state: 'pending', nextAttemptAt: finished + delay };
  }
}

function callbackOrigin(callback: string): string {
  try {
    return new URL(callback).host.toLowerCase();
  } catch {
    return callback;
  }
}
