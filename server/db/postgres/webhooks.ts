/**
 * Webhook subscriptions, messages, the delivery log and the fan-out cursor on PostgreSQL.
 *
 * Several instances may fan the same events out and deliver from the same queue:
 * - a message is unique per (event, subscription): an event fanned out twice queues it once;
 * - a claim is a lease: claiming a due message moves its next attempt `leaseMs` ahead, in the
 *   claim's own short transaction (rows another instance is claiming at that moment are skipped,
 *   FOR UPDATE SKIP LOCKED). Recording the attempt sets its real next attempt; an instance that
 *   dies holding a claim leaves the message due again once the lease has passed (at-least-once,
 *   same messageId). The row stays `pending` throughout, as in SQLite. While the instance lives, it
 *   renews the leases of what it holds (renewClaims: messages waiting behind its per-callback
 *   limit, in flight, or with outcomes not yet written), so no other instance sends them meanwhile.
 * - a claim also names its instance (`claimed_by`, the claimant number whose advisory lock that
 *   instance's listening connection holds, notifications.ts). An instance that dies loses its
 *   session and so its lock: the others (and the same instance started again) find its claims
 *   abandoned within a safety poll (releaseAbandoned) instead of after a whole lease. The lease
 *   stays the rule where PostgreSQL cannot tell: claims made before the database itself restarted
 *   (no lock survives that, live or not), and a machine that vanished without closing its
 *   connections (PostgreSQL notices that only when TCP keepalive gives up).
 */
import type { EventType } from '../../../shared/events.js';
import type {
  NewWebhookMessage,
  Page,
  WebhookAttemptRecord,
  WebhookAttemptResult,
  WebhookCounts,
  WebhookMessageRecord,
  WebhookPruneOptions,
  WebhookPruneReport,
  WebhookRepository,
  WebhookSubscriptionRecord,
} from '../types.js';
import { attemptFromRow, LIVE, subscriptionFromRow, webhookCounts, type AttemptRow, type SubscriptionRow } from '../webhook-rows.js';
import { named, type PostgresDatabase, type Queryable } from './database.js';
import { CLAIMANT_LOCK, notifyWork, type WorkNotifications } from './notifications.js';
import { outboxHorizon } from './outbox.js';
import { prunePostgresWebhooks } from './webhook-retention.js';



interface MessageRow {
  id: string;
  subscription_id: string;
  event_id: string;
  event_type: EventType;
  patient_id: string | null;
  body: string | null;
  state: WebhookMessageRecord['state'];
  attempts: number;
  next_attempt_at: number;
  created_at: string;
  updated_at: string;
  last_status: number | null;
  last_error: string | null;
  occurred_at?: string | null;
  operation_id?: string | null;
  data?: string | null;
}

function messageFromRow(row: MessageRow): WebhookMessageRecord {
  const { occurred_at: occurredAt, operation_id: operationId, data: dataJson } = row;
  return {
    id: row.id,
    subscriptionId: row.subscription_id,
    eventId: row.event_id,
    eventType: row.event_type,
    patientId: row.patient_id,
    body: row.body,
    event: dataJson === null || dataJson === undefined || !occurredAt || !operationId ? null : { occurredAt, operationId, dataJson },
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lastStatus: row.last_status,
    lastError: row.last_error,
  };
}




const CANCEL_PENDING_OF = `UPDATE webhook_messages SET state = 'cancelled', updated_at = $2, last_error = $3 WHERE subscription_id = $1 AND state IN ('pending', 'delivering')`;

export interface PostgresWebhookOptions {
  /** How long a claimed message is held for its instance before another may take it (at least one delivery timeout). */
  leaseMs: number;
}

/** What the delivery worker asks every poll interval while busy: planned once per connection. */
const DUE_SUBSCRIPTIONS = named(
  'webhook-due-subscriptions',
  `SELECT s.id AS "subscriptionId", d.due FROM webhook_subscriptions s
   CROSS JOIN LATERAL (SELECT count(*) AS due FROM (SELECT 1 FROM webhook_messages m
     WHERE m.state = 'pending' AND m.subscription_id = s.id AND m.next_attempt_at <= $1 LIMIT $2) x) d
   WHERE s.status = 'active' AND s.${LIVE} AND d.due > 0`,
);

export class PostgresWebhooks implements WebhookRepository {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly options: PostgresWebhookOptions,
    private readonly notifications: WorkNotifications,
  ) {}

  /** At commit, the other instances look for due messages (notifications.ts). */
  private async notify(tx: Queryable): Promise<void> {
    const notify = notifyWork(this.notifications.origin);
    await tx.run(notify.sql, notify.params);
  }

  async createSubscription(subscription: Omit<WebhookSubscriptionRecord, 'fromSequence'>): Promise<WebhookSubscriptionRecord> {
    return this.db.transaction(async (tx) => {
      // Every event up to the outbox's horizon is committed (outbox.ts): every event after it is delivered.
      const sequence = await outboxHorizon(tx);
      const record = { ...subscription, fromSequence: sequence };
      await tx.run(
        `INSERT INTO webhook_subscriptions (id, organization_id, client_id, events, callback, sealed_secret, status, disabled_reason, created_at, from_sequence)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [record.id, record.organizationId, record.clientId, JSON.stringify(record.events), record.callback, record.sealedSecret, record.status, record.disabledReason, record.createdAt, record.fromSequence],
      );
      return record;
    });
  }

  async getSubscription(id: string): Promise<WebhookSubscriptionRecord | undefined> {
    const row = await this.db.row<SubscriptionRow>(`SELECT * FROM webhook_subscriptions WHERE id = $1 AND ${LIVE}`, [id]);
    return row ? subscriptionFromRow(row) : undefined;
  }

  async subscriptionStatus(id: string): Promise<WebhookSubscriptionRecord['status'] | undefined> {
    return (await this.db.row<{ status: WebhookSubscriptionRecord['status'] }>(`SELECT status FROM webhook_subscriptions WHERE id = $1 AND ${LIVE}`, [id]))?.status;
  }

  async listSubscriptions(organizationId: string): Promise<WebhookSubscriptionRecord[]> {
    return (await this.db.rows<SubscriptionRow>(`SELECT * FROM webhook_subscriptions WHERE organization_id = $1 AND ${LIVE} ORDER BY created_at, id`, [organizationId])).map(subscriptionFromRow);
  }

  /** Read every time: a snapshot kept here would miss another instance's change. */
  async activeSubscriptions(): Promise<readonly WebhookSubscriptionRecord[]> {
    return (await this.db.rows<SubscriptionRow>(`SELECT * FROM webhook_subscriptions WHERE status = 'active' AND ${LIVE} ORDER BY created_at, id`)).map(subscriptionFromRow);
  }

  async deleteSubscription(id: string, at: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const changed = await tx.run(`UPDATE webhook_subscriptions SET deleted_at = $1 WHERE id = $2 AND ${LIVE}`, [at, id]);
      if (changed > 0) await tx.run(CANCEL_PENDING_OF, [id, at, 'subscription deleted']);
      return changed > 0;
    });
  }

  async cursor(): Promise<number> {
    return (await this.db.row<{ sequence: number }>('SELECT sequence FROM webhook_cursor WHERE id = 1'))?.sequence ?? 0;
  }

  async enqueue(messages: NewWebhookMessage[], cursor: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      if (messages.length > 0) {
        await tx.run(
          `INSERT INTO webhook_messages (id, subscription_id, event_id, event_type, patient_id, state, attempts, next_attempt_at, created_at, updated_at)
           SELECT id, subscription_id, event_id, event_type, patient_id, 'pending', 0, next_attempt_at, created_at, created_at
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[])
             AS m(id, subscription_id, event_id, event_type, patient_id, next_attempt_at, created_at)
           ON CONFLICT (event_id, subscription_id) DO NOTHING`,
          [
            messages.map((m) => m.id),
            messages.map((m) => m.subscriptionId),
            messages.map((m) => m.eventId),
            messages.map((m) => m.eventType),
            messages.map((m) => m.patientId),
            messages.map((m) => m.nextAttemptAt),
            messages.map((m) => m.createdAt),
          ],
        );
        await this.notify(tx);
      }
      // Another instance may have fanned out further already: the cursor never moves back.
      await tx.run('INSERT INTO webhook_cursor (id, sequence) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET sequence = GREATEST(webhook_cursor.sequence, excluded.sequence)', [cursor]);
    });
  }

  /**
   * Nothing to take back at start: claims are leases that expire by themselves, and another
   * instance's live claims must not be touched. Messages left queued on a deleted or disabled
   * subscription are cancelled (nothing would ever send or end them).
   */
  async recoverInterrupted(): Promise<number> {
    await this.db.run(
      `UPDATE webhook_messages SET state = 'cancelled', updated_at = $1, last_error = 'subscription deleted or disabled'
       WHERE state = 'pending' AND subscription_id IN (SELECT id FROM webhook_subscriptions WHERE status <> 'active' OR deleted_at IS NOT NULL)`,
      [new Date().toISOString()],
    );
    return 0;
  }

  async dueSubscriptions(now: number, cap: number): Promise<Array<{ subscriptionId: string; due: number }>> {
    return this.db.rows<{ subscriptionId: string; due: number }>(DUE_SUBSCRIPTIONS, [now, cap]);
  }

  async claimDue(claims: Array<{ subscriptionId: string; limit: number; skip: ReadonlySet<string> }>, now: number): Promise<WebhookMessageRecord[]> {
    if (claims.length === 0) return [];
    // Named only while this instance's lock is held; a claim without a name ends with its lease.
    const claimant = this.notifications.liveClaimant();
    const claimAll = async (tx: Queryable): Promise<WebhookMessageRecord[]> => {
      const claimed: WebhookMessageRecord[] = [];
      for (const claim of claims) {
        const rows = await tx.rows<MessageRow & { due_at: number; subscription_status: WebhookSubscriptionRecord['status'] | null; routable: boolean | null }>(
          `WITH due AS (
             SELECT seq, next_attempt_at FROM webhook_messages
             WHERE state = 'pending' AND subscription_id = $1 AND next_attempt_at <= $2 AND NOT (id = ANY($3::text[]))
             ORDER BY next_attempt_at LIMIT $4 FOR UPDATE SKIP LOCKED
           ), leased AS (
             UPDATE webhook_messages m SET next_attempt_at = $5, claimed_by = $6, claimed_at = now() FROM due WHERE m.seq = due.seq
             RETURNING m.*, due.next_attempt_at AS due_at
           )
           SELECT leased.*, e.occurred_at, e.operation_id, e.data, s.status AS subscription_status,
             leased.patient_id IS NULL OR (
               EXISTS (SELECT 1 FROM patients p WHERE p.id = leased.patient_id)
               AND EXISTS (SELECT 1 FROM patient_organizations po WHERE po.patient_id = leased.patient_id AND po.organization_id = s.organization_id)
               AND EXISTS (SELECT 1 FROM patient_consents pc WHERE pc.patient_id = leased.patient_id AND pc.organization_id = s.organization_id)
             ) AS routable
           FROM leased LEFT JOIN outbox_events e ON e.id = leased.event_id
             LEFT JOIN webhook_subscriptions s ON s.id = leased.subscription_id AND s.${LIVE}
           ORDER BY leased.due_at, leased.seq`,
          [claim.subscriptionId, now, [...claim.skip], claim.limit, now + this.options.leaseMs, claimant],
        );
        for (const row of rows) {
          const claimChecks = { status: row.subscription_status ?? undefined, routable: row.routable === true };
          claimed.push({ ...messageFromRow({ ...row, next_attempt_at: row.due_at }), claimChecks });
        }
      }
      return claimed;
    };
    // One claim is one statement, atomic by itself (a retry coming due, one busy subscription):
    // no transaction around it, two round trips fewer.
    return claims.length === 1 ? claimAll(this.db) : this.db.transaction(claimAll);
  }

  /**
   * Claims whose instance has ended (its claimant lock is gone) are due again now. Only claims made
   * since the database last started: a restart ends every session, live instances' included, and
   * those claims end with their lease. This instance's own claims stay (it holds them in memory).
   */
  async releaseAbandoned(now: number): Promise<number> {
    return this.db.run(
      `UPDATE webhook_messages SET next_attempt_at = $1, claimed_by = NULL
       WHERE state = 'pending' AND claimed_by IS NOT NULL AND claimed_by IS DISTINCT FROM $2::int AND next_attempt_at > $1
         AND claimed_at > pg_postmaster_start_time()
         AND claimed_by NOT IN (SELECT objid::text::int FROM pg_locks WHERE locktype = 'advisory' AND classid::text::bigint = $3 AND objsubid = 2 AND granted)`,
      [now, this.notifications.claimant, CLAIMANT_LOCK],
    );
  }

  get claimLeaseMs(): number {
    return this.options.leaseMs;
  }

  async renewClaims(messages: ReadonlyArray<{ subscriptionId: string; id: string }>, now: number): Promise<void> {
    if (messages.length === 0) return;
    await this.db.run(
      `UPDATE webhook_messages m SET next_attempt_at = $3 FROM unnest($1::text[], $2::text[]) AS held(subscription_id, id)
       WHERE m.subscription_id = held.subscription_id AND m.id = held.id AND m.state = 'pending'`,
      [messages.map((message) => message.subscriptionId), messages.map((message) => message.id), now + this.options.leaseMs],
    );
  }

  /**
   * One statement for the whole group (the log rows and the message states, atomic by itself): a
   * group commit of many attempts costs one round trip, not two per attempt. A subscription
   * disabled by a 410 (rare) is written in the same transaction.
   */
  async recordAttempts(results: WebhookAttemptResult[]): Promise<void> {
    if (results.length === 0) return;
    const disables = results.filter((result) => result.disableSubscription !== undefined);
    if (disables.length === 0) {
      await this.writeAttempts(this.db, results);
      return;
    }
    await this.db.transaction(async (tx) => {
      await this.writeAttempts(tx, results);
      for (const { attempt, disableSubscription } of disables) {
        await tx.run(`UPDATE webhook_subscriptions SET status = 'disabled', disabled_reason = $1 WHERE id = $2`, [disableSubscription, attempt.subscriptionId]);
        await tx.run(CANCEL_PENDING_OF, [attempt.subscriptionId, attempt.attemptedAt, disableSubscription]);
      }
    });
  }

  private async writeAttempts(db: Queryable, results: WebhookAttemptResult[]): Promise<void> {
    const attempts = results.map((result) => result.attempt);
    // Finishes a message only while it is still queued; a 2xx still marks a cancelled one delivered (see SQLite's webhooks.ts).
    await db.run(
      `WITH logged AS (
         INSERT INTO webhook_attempts (message_id, subscription_id, attempt, attempted_at, status_code, latency_ms, error, outcome)
         SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::int[], $6::int[], $7::text[], $8::text[])
       )
       UPDATE webhook_messages m
       SET state = r.state, attempts = r.attempt, next_attempt_at = r.next_attempt_at, updated_at = r.attempted_at, last_status = r.status_code, last_error = r.error, claimed_by = NULL
       FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::int[], $7::text[], $9::text[], $10::bigint[])
         AS r(message_id, subscription_id, attempt, attempted_at, status_code, error, state, next_attempt_at)
       WHERE m.subscription_id = r.subscription_id AND m.id = r.message_id
         AND (m.state IN ('pending', 'delivering') OR (m.state = 'cancelled' AND r.state = 'delivered'))`,
      [
        attempts.map((attempt) => attempt.messageId),
        attempts.map((attempt) => attempt.subscriptionId),
        attempts.map((attempt) => attempt.attempt),
        attempts.map((attempt) => attempt.attemptedAt),
        attempts.map((attempt) => attempt.statusCode),
        attempts.map((attempt) => attempt.latencyMs),
        attempts.map((attempt) => attempt.error),
        attempts.map((attempt) => attempt.outcome),
        results.map((result) => result.state),
        results.map((result) => result.nextAttemptAt),
      ],
    );
  }

  async cancel(subscriptionId: string, messageId: string, reason: string, at: string): Promise<void> {
    await this.db.run(`UPDATE webhook_messages SET state = 'cancelled', updated_at = $1, last_error = $2 WHERE subscription_id = $3 AND id = $4 AND state IN ('pending', 'delivering')`, [
      at,
      reason,
      subscriptionId,
      messageId,
    ]);
  }

  async attempts(subscriptionId: string, offset: number, limit: number): Promise<Page<WebhookAttemptRecord>> {
    const total = (await this.db.row<{ n: number }>('SELECT count(*) AS n FROM webhook_attempts WHERE subscription_id = $1', [subscriptionId]))!.n;
    const rows = await this.db.rows<AttemptRow>('SELECT * FROM webhook_attempts WHERE subscription_id = $1 ORDER BY sequence DESC LIMIT $2 OFFSET $3', [subscriptionId, limit, offset]);
    return { rows: rows.map(attemptFromRow), total };
  }

  async deadLetters(subscriptionId: string, offset: number, limit: number): Promise<Page<WebhookMessageRecord>> {
    const total = (await this.db.row<{ n: number }>(`SELECT count(*) AS n FROM webhook_messages WHERE subscription_id = $1 AND state = 'dead'`, [subscriptionId]))!.n;
    const rows = await this.db.rows<MessageRow>(`SELECT * FROM webhook_messages WHERE subscription_id = $1 AND state = 'dead' ORDER BY updated_at DESC, id LIMIT $2 OFFSET $3`, [
      subscriptionId,
      limit,
      offset,
    ]);
    return { rows: rows.map(messageFromRow), total };
  }

  async redeliver(subscriptionId: string, messageId: string, now: number, at: string): Promise<boolean> {
    // Only onto an active subscription: a message queued on any other would never be sent or cancelled.
    const changed = await this.db.transaction(async (tx) => {
      const count = await tx.run(
        `UPDATE webhook_messages SET state = 'pending', attempts = 0, next_attempt_at = $1, updated_at = $2
         WHERE subscription_id = $3 AND state = 'dead' AND id = $4
           AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.id = webhook_messages.subscription_id AND s.status = 'active' AND s.${LIVE})`,
        [now, at, subscriptionId, messageId],
      );
      if (count > 0) await this.notify(tx);
      return count;
    });
    return changed > 0;
  }

  async counts(organizationId?: string): Promise<WebhookCounts> {
    const scope = organizationId === undefined ? 'WHERE $1::text IS NULL' : 'WHERE subscription_id IN (SELECT id FROM webhook_subscriptions WHERE organization_id = $1)';
    const params = [organizationId ?? null];
    const byState = await this.db.rows<{ state: string; n: number }>(`SELECT state, count(*) AS n FROM webhook_messages ${scope} GROUP BY state`, params);
    const failed = (await this.db.row<{ n: number }>(`SELECT count(*) AS n FROM webhook_attempts ${scope} AND outcome <> 'delivered'`, params))!.n;
    return webhookCounts(byState, failed);
  }

  async prune(options: WebhookPruneOptions): Promise<WebhookPruneReport> {
    return prunePostgresWebhooks(this.db, options);
  }
}
