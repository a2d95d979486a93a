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
import { composeMessageBody, messageIdFor } from './signer.js';
import { CallbackRefused, type CallbackGuard, type ResolvedAddress } from './ssrf.js';

export interface DispatcherOptions {
  retryDelaysMs: number[];
  timeoutMs: number;
  /** Requests in flight overall. */
  maxConcurrency: number;
  /** Requests in flight per callback origin, so one slow receiver cannot take every slot (see HANDED_AHEAD). */
  maxPerCallback: number;
  /** The shortest time between two looks at the queue (also the idle poll where the database sends no notifications). */
  pollIntervalMs: number;
  /**
   * Where the database notifies every instance of new work (outbox.onNotified: PostgreSQL), how
   * long an idle dispatcher waits between looks for work no notification announced (one missed
   * while the listening connection was being made again, a retry coming due).
   */
  safetyPollMs: number;
  batchSize: number;
  /** How long an approved DNS answer is reused (it is re-checked after). */
  dnsCacheMs: number;
  /**
   * The window within which the per-attempt checks (subscription still active, the organization
   * still has access to and consent from the patient) are shared between attempts: every attempt
   * is checked, but attempts launched within the same few milliseconds share one lookup.
   */
  routingMemoMs: number;
}

export const DEFAULT_DISPATCHER_OPTIONS: Omit<DispatcherOptions, 'retryDelaysMs' | 'timeoutMs'> = {
  maxConcurrency: 128,
  maxPerCallback: 16,
  pollIntervalMs: 25,
  safetyPollMs: 1000,
  batchSize: 500,
  dnsCacheMs: 5000,
  routingMemoMs: 5,
};

/** Finished attempts written in one transaction: at most this many, at most this long after the first one finished. */
const GROUP_COMMIT_MAX = 256;
const GROUP_COMMIT_MS = 20;
/** Messages claimed ahead per callback, as a multiple of its concurrency limit (refilled once it has run low). */
const CLAIM_AHEAD = 4;
/**
 * Messages handed to the sender per callback, as a multiple of its concurrency limit. The sender
 * still runs at most maxPerCallback requests per callback at once; the others wait in its
 * connection pool, so a connection that frees takes the next message at once instead of after a
 * round trip through this loop (and, with the sending thread, two thread hops). Waiting there does
 * not count against an attempt's timeout, and does not count against maxConcurrency.
 */
const HANDED_AHEAD = 2;
/**
 * Events committed within this long of the previous fan-out wait for the rest of this window and
 * are fanned out together: one transaction (and one write of each subscription's index page) for
 * several events instead of one per event. An event after a quiet moment is fanned out at once.
 */
const FAN_OUT_GAP_MS = 5;
/**
 * How long the checks a claim read with its messages (claimChecks: PostgreSQL) stand in for the
 * per-attempt checks: an attempt launched within this long of its claim uses them, one that waited
 * longer (behind a busy callback) looks again. Within the second in which every instance sees a
 * change made through another (DESIGN §6), so a revoked consent stops deliveries as promptly.
 */
const CLAIM_CHECKS_MS = 500;
/** How often a cursor advanced by events that made no message is written (see saveCursor). */
const CURSOR_SAVE_MS = 1000;

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
  private active = new Map<string, { subscription: WebhookSubscriptionRecord; origin: string }>();
  private rotation = 0;
  private readonly dnsCache = new Map<string, { address: ResolvedAddress; expires: number }>();
  /** Opened hmacs by subscription, keyed by the sealed value so a changed row is opened again. */
  private readonly secrets = new Map<string, { sealed: string; hmac: string }>();
  /** Finished attempts, written together at the top of the next iteration (group commit). */
  private results: WebhookAttemptResult[] = [];
  private resultsSince = 0;
  /** Claimed messages waiting for a slot, by callback origin: slots are refilled without a query. */
  private readonly ready = new Map<string, Array<{ message: WebhookMessageRecord; subscription: WebhookSubscriptionRecord; claimedAt: number }>>();
  private readyCount = 0;
  /** Messages claimed and not yet written back (ready, in flight or awaiting the group commit), by subscription. */
  private readonly held = new Map<string, Set<string>>();
  private lastFanOutAt = 0;
  /**
   * The earliest retry this process scheduled (an attempt it recorded as failed), not yet looked
   * for: no notification announces a retry coming due, so an idle loop wakes for it rather than at
   * the next safety poll.
   */
  private nextRetryAt = Number.POSITIVE_INFINITY;
  private wakeRequested = false;
  private wakeUp: (() => void) | undefined;
  private sleepTimer: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  /** Per-attempt check results of the current window (see routingMemoMs), and when it opened. */
  private readonly attemptChecks = new Map<string, string | boolean | undefined>();
  private attemptChecksAt = 0;

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly options: DispatcherOptions,
  ) {
    this.now = deps.now ?? Date.now;
    this.idleMs = deps.outbox.onNotified ? options.safetyPollMs : options.pollIntervalMs;
  }

  /** How long an idle loop sleeps unless woken: the safety poll where the database notifies, the poll interval otherwise. */
  private readonly idleMs: number;
  private stopNotified: (() => void) | undefined;

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopListening = this.deps.outbox.onAppended(() => {
      this.eventsAppended = true;
      this.wake();
    });
    // Another instance appended events or queued messages (or the notifications were away for a
    // while): fan out and read the due list again now.
    this.stopNotified = this.deps.outbox.onNotified?.(() => {
      this.eventsAppended = true;
      this.dueListAt = 0;
      this.wake();
    });
    this.loopDone = this.loop();
  }

  /** Set when this process committed events: fan out at once rather than at the next poll. */
  private eventsAppended = false;
  private stopListening: (() => void) | undefined;

  /** Stops claiming; waits briefly for attempts in flight (those cut short are re-sent after the next start). */
  async stop(graceMs = Math.min(this.options.timeoutMs, 2000)): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.stopListening?.();
    this.wake();
    await this.loopDone;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([Promise.allSettled([...this.inFlight]), grace]);
    clearTimeout(timer);
    await this.flushResults(true).catch((error: unknown) => this.deps.log.error({ err: error }, 'webhook attempts could not be recorded at stop'));
    await this.saveCursor(true).catch((error: unknown) => this.deps.log.error({ err: error }, 'webhook cursor could not be saved at stop'));
    // Last: where the listening connection also tells the other instances that this one lives
    // (PostgreSQL), its claims are theirs to take only once its attempts are over or given up.
    this.stopNotified?.();
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
      await this.releaseAbandoned();
    } catch (error) {
      this.deps.log.error({ err: error }, 'webhook recovery failed');
    }
    while (this.running) {
      this.wakeRequested = false;
      this.retriesCameDue();
      try {
        if (this.now() - this.releasedAt >= this.options.safetyPollMs) await this.releaseAbandoned();
        await this.renewLeases();
        await this.flushResults();
        // New events are looked for once per poll interval, or when this process committed some
        // (see FAN_OUT_GAP_MS); freed slots are refilled at once.
        if (this.fanOutDueIn() <= 0) {
          this.eventsAppended = false;
          this.lastFanOutAt = this.now();
          await this.fanOut();
        }
        await this.schedule();
      } catch (error) {
        this.deps.log.error({ err: error }, 'webhook dispatcher iteration failed; retrying');
      }
      await this.idle();
    }
  }

  /** Group commit: one transaction for many attempts, at most ~GROUP_COMMIT_MS after the first one finished. */
  private async flushResults(force = false): Promise<void> {
    if (this.results.length === 0) return;
    if (!force && this.results.length < GROUP_COMMIT_MAX && this.now() - this.resultsSince < GROUP_COMMIT_MS && this.inFlight.size > 0) return;
    const results = this.results;
    this.results = [];
    try {
      await this.deps.webhooks.recordAttempts(results);
    } catch (error) {
      // The database is busy, full or read-only for now: the outcomes wait for the next flush
      // rather than being dropped (their messages would stay claimed until a restart).
      this.results = [...results, ...this.results];
      throw error;
    }
    for (const result of results) {
      this.release(result.attempt.subscriptionId, result.attempt.messageId);
      if (result.state !== 'pending') continue;
      this.retries.push({ subscriptionId: result.attempt.subscriptionId, at: result.nextAttemptAt });
      this.nextRetryAt = Math.min(this.nextRetryAt, result.nextAttemptAt);
    }
  }

  /**
   * Retries this process scheduled that are due now go straight onto the due list: the claim is
   * the one query between the timer and the attempt (on PostgreSQL each query is a round trip,
   * and a retry should leave when its delay is over, not a few round trips later).
   */
  private retriesCameDue(): void {
    const now = this.now();
    if (now < this.nextRetryAt) return;
    const due = this.retries.filter((retry) => retry.at <= now);
    this.retries = this.retries.filter((retry) => retry.at > now);
    this.nextRetryAt = this.retries.reduce((earliest, retry) => Math.min(earliest, retry.at), Number.POSITIVE_INFINITY);
    this.addDue(due);
    // What the list holds now is what is known to be due; anything else is found at the next read.
    if (this.dueListAt !== 0) this.dueListAt = now;
  }

  /** Retries this process scheduled, not yet due (see retriesCameDue). */
  private retries: Array<{ subscriptionId: string; at: number }> = [];

  /** Where the database can tell that an instance has ended (PostgreSQL), its claims are due again at once. */
  private async releaseAbandoned(): Promise<void> {
    this.releasedAt = this.now();
    const { releaseAbandoned } = this.deps.webhooks;
    if (!releaseAbandoned) return;
    const released = await releaseAbandoned.call(this.deps.webhooks, this.releasedAt);
    if (released === 0) return;
    this.deps.log.info({ released }, 'webhook messages claimed by an instance that has ended are due again');
    this.dueListAt = 0;
  }

  private releasedAt = 0;

  /**
   * Where claims are leases (several instances on one queue), the messages this process still holds
   * are leased again every third of the lease: a message waiting behind the per-callback limit, or
   * in flight for longer than the lease, is not sent by another instance while this one lives.
   * Run in the loop only, before outcomes are written, so it never moves a message already finished.
   */
  private async renewLeases(): Promise<void> {
    const { claimLeaseMs, renewClaims } = this.deps.webhooks;
    if (claimLeaseMs === undefined || !renewClaims || this.held.size === 0) return;
    const now = this.now();
    if (now - this.renewedAt < claimLeaseMs / 3) return;
    this.renewedAt = now;
    const messages: Array<{ subscriptionId: string; id: string }> = [];
    for (const [subscriptionId, ids] of this.held) for (const id of ids) messages.push({ subscriptionId, id });
    await renewClaims.call(this.deps.webhooks, messages, now);
  }

  private renewedAt = 0;

  private hold(message: WebhookMessageRecord): void {
    const set = this.held.get(message.subscriptionId) ?? new Set<string>();
    set.add(message.id);
    this.held.set(message.subscriptionId, set);
  }

  private release(subscriptionId: string, messageId: string): void {
    const set = this.held.get(subscriptionId);
    set?.delete(messageId);
    if (set?.size === 0) this.held.delete(subscriptionId);
  }

  private async cancel(message: WebhookMessageRecord, reason: string, at: Date): Promise<void> {
    await this.deps.webhooks.cancel(message.subscriptionId, message.id, reason, at.toISOString());
    this.release(message.subscriptionId, message.id);
  }

  /** Milliseconds until the next fan-out is due (zero or less: now). */
  private fanOutDueIn(): number {
    const since = this.now() - this.lastFanOutAt;
    return Math.min(this.idleMs, this.eventsAppended ? FAN_OUT_GAP_MS : Infinity) - since;
  }

  private idle(): Promise<void> {
    if (this.wakeRequested || !this.running) return Promise.resolve();
    return new Promise((resolve) => {
      this.wakeUp = resolve;
      this.sleepTimer = setTimeout(
        () => {
          this.wakeUp = undefined;
          resolve();
        },
        Math.max(1, Math.min(this.busy() ? this.options.pollIntervalMs : this.idleMs, this.fanOutDueIn(), this.nextRetryAt - this.now())),
      );
    });
  }

  /** Work this process holds (due, claimed, in flight, outcomes to write): the loop keeps looking at the poll interval. */
  private busy(): boolean {
    return this.dueList.length > 0 || this.readyCount > 0 || this.inFlight.size > 0 || this.results.length > 0;
  }

  // --- fan-out -------------------------------------------------------------------------------

  private async fanOut(): Promise<void> {
    for (let round = 0; round < 4 && this.running; round += 1) {
      if (this.cursor === undefined) {
        this.cursor = await this.deps.webhooks.cursor();
        this.savedCursor = this.cursor;
      }
      const events = await this.deps.outbox.headsAfter(this.cursor, this.options.batchSize);
      const last = events.at(-1);
      if (!last) {
        await this.saveCursor(false);
        return;
      }
      const subscriptions = await this.deps.webhooks.activeSubscriptions();
      const routable = new Map<string, boolean>();
      const createdAt = new Date(this.now()).toISOString();
      const messages = [];
      for (const event of events) {
        for (const subscription of subscriptions) {
          if (event.sequence <= subscription.fromSequence || !subscriptionMatches(subscription.events, event.eventType)) continue;
          const known = event.patientId === null ? undefined : routable.get(`${event.patientId}|${subscription.organizationId}`);
          if (known === false || (known === undefined && !(await this.isRoutable(event, subscription.organizationId, routable)))) continue;
          const id = messageIdFor(event.id, subscription.id);
          messages.push({ id, subscriptionId: subscription.id, eventId: event.id, eventType: event.eventType, patientId: event.patientId, nextAttemptAt: this.now(), createdAt });
        }
      }
      if (messages.length > 0) {
        // The cursor moves past these events only once their messages are written.
        await this.deps.webhooks.enqueue(messages, last.sequence);
        this.cursor = last.sequence;
        this.savedCursor = last.sequence;
        this.savedCursorAt = this.now();
      } else {
        this.cursor = last.sequence;
        await this.saveCursor(false);
      }
      this.addDue(messages);
      if (events.length < this.options.batchSize) return;
    }
  }

  /**
   * Events that make no message (no subscriber, no consent) advance the cursor in memory and in the
   * database at most once a second, and at stop, rather than with a commit of their own each time:
   * a create with no subscriber otherwise costs two commits. Events re-read after a crash in that
   * second make no message again, except where access or consent was granted in the meantime.
   */
  private async saveCursor(force: boolean): Promise<void> {
    if (this.cursor === undefined || this.cursor === this.savedCursor) return;
    if (!force && this.now() - this.savedCursorAt < CURSOR_SAVE_MS) return;
    await this.deps.webhooks.enqueue([], this.cursor);
    this.savedCursor = this.cursor;
    this.savedCursorAt = this.now();
  }

  private savedCursor: number | undefined;
  private savedCursorAt = 0;

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

  /** What this process just queued is due now: added to the due list without re-reading the queue. */
  private addDue(messages: ReadonlyArray<{ subscriptionId: string }>): void {
    const added = new Map<string, number>();
    for (const message of messages) added.set(message.subscriptionId, (added.get(message.subscriptionId) ?? 0) + 1);
    for (const entry of this.dueList) {
      const count = added.get(entry.subscriptionId);
      if (count === undefined) continue;
      entry.due += count;
      added.delete(entry.subscriptionId);
    }
    for (const [subscriptionId, due] of added) this.dueList.push({ subscriptionId, due });
  }

  /**
   * The due list is re-read when it runs out (at most every poll interval), after a fan-out, and
   * at least every 10 poll intervals; in between, freed slots are refilled from it without a query.
   */
  private async refreshDue(now: number): Promise<void> {
    const age = now - this.dueListAt;
    const stale = this.dueList.length === 0 ? age >= this.options.pollIntervalMs : age >= this.options.pollIntervalMs * 10;
    if (!stale && this.dueListAt !== 0) return;
    this.dueList = await this.deps.webhooks.dueSubscriptions(now, this.options.maxPerCallback * CLAIM_AHEAD);
    this.dueListAt = now;
    if (this.dueList.length === 0) return;
    this.active = new Map((await this.deps.webhooks.activeSubscriptions()).map((subscription) => [subscription.id, { subscription, origin: callbackOrigin(subscription.callback) }]));
  }

  private async schedule(): Promise<void> {
    this.launchReady();
    const now = this.now();
    await this.refreshDue(now);
    const count = this.dueList.length;
    if (count === 0) return;
    // Claim ahead (up to CLAIM_AHEAD times the limits) so that freed slots are refilled from memory.
    let budget = this.options.maxConcurrency * CLAIM_AHEAD - this.inFlight.size - this.readyCount;
    if (budget <= 0) return;
    // Rotate the starting subscription so subscriptions sharing a callback take turns.
    this.rotation = (this.rotation + 1) % count;
    const claims: Array<{ subscriptionId: string; limit: number; skip: ReadonlySet<string> }> = [];
    const reserved = new Map<string, number>();
    for (let index = 0; index < count && budget > 0; index += 1) {
      const entry = this.dueList[(this.rotation + index) % count];
      if (!entry || entry.due <= 0) continue;
      const known = this.active.get(entry.subscriptionId) ?? (await this.subscriptionFor(entry.subscriptionId));
      const origin = known?.origin ?? '';
      const held = (this.perCallback.get(origin) ?? 0) + (this.ready.get(origin)?.length ?? 0) + (reserved.get(origin) ?? 0);
      // Refill an origin's queue only once it has run low, so claims come in batches.
      if (known && held > this.options.maxPerCallback * HANDED_AHEAD) continue;
      const limit = known ? Math.min(this.options.maxPerCallback * CLAIM_AHEAD - held, budget, entry.due) : entry.due;
      if (limit <= 0) continue;
      reserved.set(origin, (reserved.get(origin) ?? 0) + limit);
      budget -= limit;
      claims.push({ subscriptionId: entry.subscriptionId, limit, skip: this.held.get(entry.subscriptionId) ?? new Set() });
    }
    const claimed = await this.deps.webhooks.claimDue(claims, now);
    const perSubscription = new Map<string, number>();
    for (const message of claimed) {
      perSubscription.set(message.subscriptionId, (perSubscription.get(message.subscriptionId) ?? 0) + 1);
      this.hold(message);
      const known = this.active.get(message.subscriptionId);
      if (!known) {
        // Deleted or disabled since its messages were queued: they end here.
        await this.cancel(message, 'subscription deleted or disabled', new Date(now));
        continue;
      }
      const queue = this.ready.get(known.origin) ?? [];
      queue.push({ message, subscription: known.subscription, claimedAt: now });
      this.ready.set(known.origin, queue);
      this.readyCount += 1;
    }
    for (const claim of claims) {
      const entry = this.dueList.find((item) => item.subscriptionId === claim.subscriptionId);
      const got = perSubscription.get(claim.subscriptionId) ?? 0;
      // Fewer than asked: the list was ahead of the table; it is re-read next time.
      if (entry) entry.due = got < claim.limit ? 0 : entry.due - got;
    }
    this.dueList = this.dueList.filter((entry) => entry.due > 0);
    this.launchReady();
  }

  private launchReady(): void {
    const handedLimit = this.options.maxPerCallback * HANDED_AHEAD;
    let sending = this.sending();
    for (const [origin, queue] of this.ready) {
      for (;;) {
        const handed = this.perCallback.get(origin) ?? 0;
        if (queue.length === 0 || handed >= handedLimit) break;
        // One more request that can run at once, or one that waits for this callback's connections.
        const runs = handed < this.options.maxPerCallback;
        if (runs && sending >= this.options.maxConcurrency) break;
        const next = queue.shift()!;
        this.readyCount -= 1;
        this.launch(next.message, next.subscription, origin, next.claimedAt);
        if (runs) sending += 1;
      }
      if (queue.length === 0) this.ready.delete(origin);
    }
  }

  /** Requests the sender can be running at once: per callback, at most its concurrency limit. */
  private sending(): number {
    let total = 0;
    for (const handed of this.perCallback.values()) total += Math.min(handed, this.options.maxPerCallback);
    return total;
  }

  private async subscriptionFor(subscriptionId: string): Promise<{ subscription: WebhookSubscriptionRecord; origin: string } | undefined> {
    const known = this.active.get(subscriptionId);
    if (known) return known;
    const current = await this.deps.webhooks.getSubscription(subscriptionId);
    if (current?.status !== 'active') return undefined;
    const entry = { subscription: current, origin: callbackOrigin(current.callback) };
    this.active.set(current.id, entry);
    return entry;
  }

  private launch(message: WebhookMessageRecord, subscription: WebhookSubscriptionRecord, origin: string, claimedAt: number): void {
    this.perCallback.set(origin, (this.perCallback.get(origin) ?? 0) + 1);
    const task = this.attempt(message, subscription, claimedAt)
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

  private async attempt(message: WebhookMessageRecord, claimedFor: WebhookSubscriptionRecord, claimedAt: number): Promise<void> {
    const attemptedAt = new Date(this.now());
    // Routing is decided again at every attempt: a revoked consent stops pending deliveries.
    const fromClaim = message.claimChecks && attemptedAt.getTime() - claimedAt <= CLAIM_CHECKS_MS ? message.claimChecks : undefined;
    const checks = this.checkWindow(attemptedAt.getTime());
    const statusKey = `s|${claimedFor.id}`;
    let status = fromClaim ? fromClaim.status : (checks.get(statusKey) as WebhookSubscriptionRecord['status'] | undefined);
    if (status === undefined && !fromClaim) {
      status = await this.deps.webhooks.subscriptionStatus(claimedFor.id);
      if (status !== undefined) checks.set(statusKey, status);
    }
    if (status !== 'active') {
      await this.cancel(message, status ? `subscription ${status}` : 'subscription deleted', attemptedAt);
      return;
    }
    const subscription = claimedFor;
    const routable = fromClaim
      ? fromClaim.routable
      : message.patientId === null || (await this.isRoutable({ patientId: message.patientId, organizationId: null }, subscription.organizationId, checks as Map<string, boolean>));
    if (!routable) {
      await this.cancel(message, 'the organization no longer has access to or consent from the patient', attemptedAt);
      this.deps.log.info({ messageId: message.id, subscriptionId: subscription.id }, 'webhook message cancelled: access or consent withdrawn');
      return;
    }
    const result = await this.post(message, subscription, attemptedAt);
    const outcome = this.outcome(message, subscription, result, attemptedAt);
    if (this.results.length === 0) this.resultsSince = this.now();
    this.results.push(outcome);
    // Every attempt is in the delivery log (the database); the server log gets the failures only.
    if (outcome.state === 'delivered') return;
    this.deps.log.info(
      { messageId: message.id, subscriptionId: subscription.id, attempt: outcome.attempt.attempt, statusCode: result.statusCode, latencyMs: result.latencyMs, error: result.error, state: outcome.state },
      'webhook attempt',
    );
  }

  /** The memo of per-attempt checks, emptied when its window has passed. */
  private checkWindow(now: number): Map<string, string | boolean | undefined> {
    if (now - this.attemptChecksAt >= this.options.routingMemoMs || now < this.attemptChecksAt) {
      this.attemptChecks.clear();
      this.attemptChecksAt = now;
    }
    return this.attemptChecks;
  }

  private async post(message: WebhookMessageRecord, subscription: WebhookSubscriptionRecord, attemptedAt: Date): Promise<SendResult> {
    try {
      const url = this.deps.guard.parse(subscription.callback);
      const address = await this.resolve(url);
      const hmac = this.hmacOf(subscription);
      const body = message.body ?? (message.event ? composeMessageBody(message.event, message.eventType, message.patientId, message.id, subscription.organizationId) : undefined);
      if (body === undefined) throw new Error(`the event ${message.eventId} of message ${message.id} is no longer in the outbox`);
      return await this.deps.send({ url, address, body, headers: {}, signing: { messageId: message.id, hmac, attemptAtMs: attemptedAt.getTime() }, timeoutMs: this.options.timeoutMs });
    } catch (error) {
      if (error instanceof CallbackRefused) return { statusCode: null, latencyMs: 0, error: error.message };
      this.deps.log.error({ err: error, subscriptionId: subscription.id }, 'webhook attempt could not be prepared');
      return { statusCode: null, latencyMs: 0, error: 'the delivery could not be prepared (see the server log)' };
    }
  }

  private hmacOf(subscription: WebhookSubscriptionRecord): string {
    const cached = this.secrets.get(subscription.id);
    if (cached?.sealed === subscription.sealedSecret) return cached.hmac;
    const hmac = this.deps.secrets.open(subscription.sealedSecret, subscription.id);
    this.secrets.set(subscription.id, { sealed: subscription.sealedSecret, hmac });
    return hmac;
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
    // The retry delay counts from the answer, not from when this thread got to it.
    const finished = Math.min(this.now(), result.answeredAt ?? Number.POSITIVE_INFINITY);
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
