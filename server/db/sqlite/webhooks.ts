/**
 * Webhook subscriptions, messages, the delivery log and the fan-out cursor. Message state lives
 * here, not in memory: a restart (or a kill -9) resumes every pending delivery with its messageId.
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
import type { SqliteDatabase } from './database.js';
import type { Migration } from './migrations.js';
import { pruneSqliteWebhooks } from './webhook-retention.js';

export const WEBHOOK_MIGRATION: Migration = {
  name: '003-webhooks',
  sql: `
    CREATE TABLE webhook_subscriptions (
      id TEXT PRIMARY KEY,
      organization_id TEXT NOT NULL,
      client_id TEXT NOT NULL,
      events TEXT NOT NULL,
      callback TEXT NOT NULL,
      sealed_secret TEXT NOT NULL,
      status TEXT NOT NULL,
      disabled_reason TEXT,
      created_at TEXT NOT NULL,
      from_sequence INTEGER NOT NULL,
      deleted_at TEXT
    ) WITHOUT ROWID;
    CREATE INDEX webhook_subscriptions_by_org ON webhook_subscriptions(organization_id, created_at);

    CREATE TABLE webhook_messages (
      id TEXT PRIMARY KEY,
      subscription_id TEXT NOT NULL REFERENCES webhook_subscriptions(id),
      event_id TEXT NOT NULL,
      event_type TEXT NOT NULL,
      patient_id TEXT,
      body TEXT NOT NULL,
      state TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_at INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      last_status INTEGER,
      last_error TEXT,
      UNIQUE (event_id, subscription_id)
    );
    -- Partial indexes: a message enters the pending one when queued and leaves it once, so the
    -- hot path (claim, finish) maintains as little index as possible.
    CREATE INDEX webhook_messages_pending ON webhook_messages(subscription_id, next_attempt_at) WHERE state = 'pending';
    CREATE INDEX webhook_messages_dead ON webhook_messages(subscription_id, updated_at) WHERE state = 'dead';

    CREATE TABLE webhook_attempts (
      sequence INTEGER PRIMARY KEY AUTOINCREMENT,
      message_id TEXT NOT NULL,
      subscription_id TEXT NOT NULL,
      attempt INTEGER NOT NULL,
      attempted_at TEXT NOT NULL,
      status_code INTEGER,
      latency_ms INTEGER NOT NULL,
      error TEXT,
      outcome TEXT NOT NULL
    );
    CREATE INDEX webhook_attempts_by_subscription ON webhook_attempts(subscription_id, sequence);

    CREATE TABLE webhook_cursor (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      sequence INTEGER NOT NULL
    );
  `,
};

/**
 * Message rows without their body: the body is composed at each attempt from the outbox event
 * (byte-identical every time), so a queued message is a small row, and recording an attempt
 * rewrites a small row. Rows are keyed by their queue position (`seq`), so queueing appends to
 * the table instead of inserting at a random place of an index on the messageId (one page
 * written per message); the dispatcher addresses the messages it claimed by `seq`. A messageId
 * is looked up only within one subscription's dead or pending messages (their partial indexes).
 * Nothing needs a unique index on it: fan-out writes an event's messages and the cursor past it
 * in one transaction, so an event is fanned out once.
 */
export const WEBHOOK_LEAN_MESSAGES_MIGRATION: Migration = {
  name: '004-webhook-messages-lean',
  sql: `
    CREATE TABLE webhook_messages_lean (
      seq INTEGER PRIMARY KEY,
      id TEXT NOT NULL,
      subscription_id TEXT NOT NULL REFERENCES webhook_subscriptions(id),
      event_id TEXT NOT NULL,
      event_type TEXT NOT NULL,
      patient_id TEXT,
      body TEXT,
      state TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_at INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      last_status INTEGER,
      last_error TEXT
    );
    INSERT INTO webhook_messages_lean (id, subscription_id, event_id, event_type, patient_id, body, state, attempts, next_attempt_at, created_at, updated_at, last_status, last_error)
      SELECT id, subscription_id, event_id, event_type, patient_id, body, state, attempts, next_attempt_at, created_at, updated_at, last_status, last_error
      FROM webhook_messages ORDER BY rowid;
    DROP TABLE webhook_messages;
    ALTER TABLE webhook_messages_lean RENAME TO webhook_messages;
    CREATE INDEX webhook_messages_pending ON webhook_messages(subscription_id, next_attempt_at) WHERE state = 'pending';
    CREATE INDEX webhook_messages_dead ON webhook_messages(subscription_id, updated_at) WHERE state = 'dead';
  `,
};




/**
 * A message row as MESSAGE_COLUMNS reads it, as an array (statement.raw()): better-sqlite3's row
 * objects cost more than the query, and every delivery is claimed through here. The event's
 * columns are joined only where a message is sent; listings select NULL in their place.
 */
const MESSAGE_COLUMNS = `m.seq, m.id, m.subscription_id, m.event_id, m.event_type, m.patient_id, m.body, m.state, m.attempts,
  m.next_attempt_at, m.created_at, m.updated_at, m.last_status, m.last_error`;

function messageFromColumns(row: unknown[]): WebhookMessageRecord {
  const [occurredAt, operationId, dataJson] = [row[14] as string | null, row[15] as string | null, row[16] as string | null];
  return {
    id: row[1] as string,
    subscriptionId: row[2] as string,
    eventId: row[3] as string,
    eventType: row[4] as EventType,
    patientId: row[5] as string | null,
    body: row[6] as string | null,
    event: dataJson === null || !occurredAt || !operationId ? null : { occurredAt, operationId, dataJson },
    state: row[7] as WebhookMessageRecord['state'],
    attempts: row[8] as number,
    nextAttemptAt: row[9] as number,
    createdAt: row[10] as string,
    updatedAt: row[11] as string,
    lastStatus: row[12] as number | null,
    lastError: row[13] as string | null,
  };
}



export class SqliteWebhooks implements WebhookRepository {
  private readonly statements;
  private readonly claimTransaction;
  private readonly recordTransaction;
  private readonly enqueueTransaction;

  constructor(private readonly db: SqliteDatabase) {
    this.statements = {
      insertMessage: db.prepare(
        `INSERT INTO webhook_messages (id, subscription_id, event_id, event_type, patient_id, state, attempts, next_attempt_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
      ),
      setCursor: db.prepare('INSERT INTO webhook_cursor (id, sequence) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET sequence = excluded.sequence'),
      getSubscription: db.prepare(`SELECT * FROM webhook_subscriptions WHERE id = ? AND ${LIVE}`),
      subscriptionStatus: db.prepare(`SELECT status FROM webhook_subscriptions WHERE id = ? AND ${LIVE}`).pluck(),
      // One bounded walk of the pending index per active subscription (pending messages of deleted
      // or disabled subscriptions are cancelled in the same transaction as the change).
      dueSubscriptions: db.prepare(
        `SELECT subscriptionId, due FROM (
           SELECT s.id AS subscriptionId,
             (SELECT COUNT(*) FROM (SELECT 1 FROM webhook_messages m
                WHERE m.state = 'pending' AND m.subscription_id = s.id AND m.next_attempt_at <= @now LIMIT +@cap)) AS due
           FROM webhook_subscriptions s WHERE s.status = 'active' AND s.${LIVE}
         ) WHERE due > 0`,
      ),
      // Read as arrays (see messageFromColumns), with the event the body is composed from.
      selectDue: db
        .prepare(
          `SELECT ${MESSAGE_COLUMNS}, e.occurred_at, e.operation_id, e.data
           FROM webhook_messages m LEFT JOIN outbox_events e ON e.id = m.event_id
           WHERE m.state = 'pending' AND m.subscription_id = ? AND m.next_attempt_at <= ?
           ORDER BY m.next_attempt_at LIMIT +?`,
        )
        .raw(),
      insertAttempt: db.prepare(
        `INSERT INTO webhook_attempts (message_id, subscription_id, attempt, attempted_at, status_code, latency_ms, error, outcome)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      // An attempt's outcome finishes its message only while it is still queued: a delete, or a 410
      // of another message of its subscription, cancels the subscription's messages while some of
      // them are in flight, and they must not come back as pending (only active subscriptions are
      // scheduled, so they would stay queued for ever). A 2xx still marks a cancelled message
      // delivered: the receiver has it, as the delivery log says. Any other outcome (retry, dead,
      // 410) leaves it cancelled, with its reason. The attempt itself is logged either way.
      finishMessage: db.prepare(
        `UPDATE webhook_messages SET state = ?, attempts = ?, next_attempt_at = ?, updated_at = ?, last_status = ?, last_error = ?
         WHERE seq = ? AND (state IN ('pending', 'delivering') OR (state = 'cancelled' AND ? = 'delivered'))`,
      ),
      // A message this process did not claim (never in practice): found among its subscription's pending ones.
      seqOfPending: db.prepare(`SELECT seq FROM webhook_messages WHERE subscription_id = ? AND state = 'pending' AND id = ?`).pluck(),
      cancelPendingOf: db.prepare(
        `UPDATE webhook_messages SET state = 'cancelled', updated_at = @at, last_error = @reason
         WHERE subscription_id = @subscriptionId AND state IN ('pending', 'delivering')`,
      ),
      disable: db.prepare(`UPDATE webhook_subscriptions SET status = 'disabled', disabled_reason = ? WHERE id = ?`),
      // The dispatcher's statements are prepared once (they run on every iteration).
      activeSubscriptions: db.prepare(`SELECT * FROM webhook_subscriptions WHERE status = 'active' AND ${LIVE} ORDER BY created_at, id`),
      cursor: db.prepare('SELECT sequence FROM webhook_cursor WHERE id = 1').pluck(),
      dataVersion: db.prepare('PRAGMA data_version').pluck(),
      // Only a queued message: one cancelled already keeps its first reason (the delete, the 410).
      cancel: db.prepare(`UPDATE webhook_messages SET state = 'cancelled', updated_at = ?, last_error = ? WHERE seq = ? AND state IN ('pending', 'delivering')`),
      // Messages left queued on a subscription that is deleted or disabled (a database written
      // before finishMessage kept cancelled messages cancelled): nothing would ever send or end them.
      cancelStranded: db.prepare(
        `UPDATE webhook_messages SET state = 'cancelled', updated_at = ?, last_error = 'subscription deleted or disabled'
         WHERE state = 'pending' AND subscription_id IN (SELECT id FROM webhook_subscriptions WHERE status != 'active' OR deleted_at IS NOT NULL)`,
      ),
    };
    this.enqueueTransaction = db.transaction((messages: NewWebhookMessage[], cursor: number) => {
      // Positional parameters: binding by name looks every name up on the object, once per row.
      for (const m of messages) this.statements.insertMessage.run(m.id, m.subscriptionId, m.eventId, m.eventType, m.patientId, m.nextAttemptAt, m.createdAt, m.createdAt);
      this.statements.setCursor.run(cursor);
    });
    this.claimTransaction = db.transaction((claims: Array<{ subscriptionId: string; limit: number; skip: ReadonlySet<string> }>, now: number) => {
      const claimed: WebhookMessageRecord[] = [];
      for (const claim of claims) {
        const rows = this.statements.selectDue.all(claim.subscriptionId, now, claim.limit + claim.skip.size) as unknown[][];
        let taken = 0;
        for (const row of rows) {
          if (taken >= claim.limit) break;
          const message = messageFromColumns(row);
          if (claim.skip.has(message.id)) continue;
          this.claimedSeq.set(message.id, row[0] as number);
          claimed.push(message);
          taken += 1;
        }
      }
      return claimed;
    });
    this.recordTransaction = db.transaction((results: WebhookAttemptResult[]) => {
      for (const result of results) this.recordOne(result);
    });
  }

  /**
   * The active subscriptions as last read (fan-out routes every event batch through them), with the
   * data_version they were read at: a commit by another connection changes it, and this
   * connection's own changes to subscriptions drop the snapshot.
   */
  private activeSnapshot: { dataVersion: number; subscriptions: readonly WebhookSubscriptionRecord[] } | undefined;

  /** Claimed messages by messageId → seq, until their attempt is recorded or they are cancelled. */
  private readonly claimedSeq = new Map<string, number>();

  private seqOf(subscriptionId: string, messageId: string): number | undefined {
    const seq = this.claimedSeq.get(messageId) ?? (this.statements.seqOfPending.get(subscriptionId, messageId) as number | undefined);
    this.claimedSeq.delete(messageId);
    return seq;
  }

  private recordOne(result: WebhookAttemptResult): void {
    const { attempt } = result;
    this.statements.insertAttempt.run(attempt.messageId, attempt.subscriptionId, attempt.attempt, attempt.attemptedAt, attempt.statusCode, attempt.latencyMs, attempt.error, attempt.outcome);
    const seq = this.seqOf(attempt.subscriptionId, attempt.messageId);
    if (seq !== undefined) this.statements.finishMessage.run(result.state, attempt.attempt, result.nextAttemptAt, attempt.attemptedAt, attempt.statusCode, attempt.error, seq, result.state);
    if (result.disableSubscription !== undefined) {
      this.activeSnapshot = undefined;
      this.statements.disable.run(result.disableSubscription, attempt.subscriptionId);
      this.statements.cancelPendingOf.run({ subscriptionId: attempt.subscriptionId, at: attempt.attemptedAt, reason: result.disableSubscription });
    }
  }

  async createSubscription(subscription: Omit<WebhookSubscriptionRecord, 'fromSequence'>): Promise<WebhookSubscriptionRecord> {
    this.activeSnapshot = undefined;
    return this.db
      .transaction(() => {
        const fromSequence = this.db.prepare('SELECT COALESCE(MAX(sequence), 0) FROM outbox_events').pluck().get() as number;
        const record = { ...subscription, fromSequence };
        this.db
          .prepare(
            `INSERT INTO webhook_subscriptions (id, organization_id, client_id, events, callback, sealed_secret, status, disabled_reason, created_at, from_sequence)
             VALUES (@id, @organizationId, @clientId, @events, @callback, @sealedSecret, @status, @disabledReason, @createdAt, @fromSequence)`,
          )
          .run({ ...record, events: JSON.stringify(record.events) });
        return record;
      })
      .immediate();
  }

  async getSubscription(id: string): Promise<WebhookSubscriptionRecord | undefined> {
    const row = this.statements.getSubscription.get(id) as SubscriptionRow | undefined;
    return row ? subscriptionFromRow(row) : undefined;
  }

  async subscriptionStatus(id: string): Promise<WebhookSubscriptionRecord['status'] | undefined> {
    return this.statements.subscriptionStatus.get(id) as WebhookSubscriptionRecord['status'] | undefined;
  }

  async listSubscriptions(organizationId: string): Promise<WebhookSubscriptionRecord[]> {
    const rows = this.db.prepare(`SELECT * FROM webhook_subscriptions WHERE organization_id = ? AND ${LIVE} ORDER BY created_at, id`).all(organizationId) as SubscriptionRow[];
    return rows.map(subscriptionFromRow);
  }

  async activeSubscriptions(): Promise<readonly WebhookSubscriptionRecord[]> {
    // The version is read before the rows: a commit in between only makes the next call read again.
    const dataVersion = this.statements.dataVersion.get() as number;
    if (this.activeSnapshot?.dataVersion === dataVersion) return this.activeSnapshot.subscriptions;
    const subscriptions = Object.freeze((this.statements.activeSubscriptions.all() as SubscriptionRow[]).map(subscriptionFromRow));
    this.activeSnapshot = { dataVersion, subscriptions };
    return subscriptions;
  }

  async deleteSubscription(id: string, at: string): Promise<boolean> {
    this.activeSnapshot = undefined;
    return this.db
      .transaction(() => {
        const changed = this.db.prepare(`UPDATE webhook_subscriptions SET deleted_at = ? WHERE id = ? AND ${LIVE}`).run(at, id).changes;
        if (changed > 0) this.statements.cancelPendingOf.run({ subscriptionId: id, at, reason: 'subscription deleted' });
        return changed > 0;
      })
      .immediate();
  }

  async cursor(): Promise<number> {
    return (this.statements.cursor.get() as number | undefined) ?? 0;
  }

  async enqueue(messages: NewWebhookMessage[], cursor: number): Promise<void> {
    this.enqueueTransaction.immediate(messages, cursor);
  }

  async recoverInterrupted(): Promise<number> {
    return this.db
      .transaction(() => {
        const recovered = this.db.prepare(`UPDATE webhook_messages SET state = 'pending' WHERE state = 'delivering'`).run().changes;
        this.statements.cancelStranded.run(new Date().toISOString());
        return recovered;
      })
      .immediate();
  }

  async dueSubscriptions(now: number, cap: number): Promise<Array<{ subscriptionId: string; due: number }>> {
    return this.statements.dueSubscriptions.all({ now, cap }) as Array<{ subscriptionId: string; due: number }>;
  }

  async claimDue(claims: Array<{ subscriptionId: string; limit: number; skip: ReadonlySet<string> }>, now: number): Promise<WebhookMessageRecord[]> {
    if (claims.length === 0) return [];
    return this.claimTransaction.deferred(claims, now);
  }

  async recordAttempts(results: WebhookAttemptResult[]): Promise<void> {
    if (results.length > 0) this.recordTransaction.immediate(results);
  }

  async cancel(subscriptionId: string, messageId: string, reason: string, at: string): Promise<void> {
    const seq = this.seqOf(subscriptionId, messageId);
    if (seq !== undefined) this.statements.cancel.run(at, reason, seq);
  }

  async attempts(subscriptionId: string, offset: number, limit: number): Promise<Page<WebhookAttemptRecord>> {
    const total = this.db.prepare('SELECT COUNT(*) FROM webhook_attempts WHERE subscription_id = ?').pluck().get(subscriptionId) as number;
    const rows = this.db
      .prepare('SELECT * FROM webhook_attempts WHERE subscription_id = ? ORDER BY sequence DESC LIMIT +? OFFSET ?')
      .all(subscriptionId, limit, offset) as AttemptRow[];
    return { rows: rows.map(attemptFromRow), total };
  }

  async deadLetters(subscriptionId: string, offset: number, limit: number): Promise<Page<WebhookMessageRecord>> {
    const total = this.db.prepare(`SELECT COUNT(*) FROM webhook_messages WHERE subscription_id = ? AND state = 'dead'`).pluck().get(subscriptionId) as number;
    const rows = this.db
      .prepare(`SELECT ${MESSAGE_COLUMNS}, NULL, NULL, NULL FROM webhook_messages m WHERE subscription_id = ? AND state = 'dead' ORDER BY updated_at DESC, id LIMIT +? OFFSET ?`)
      .raw()
      .all(subscriptionId, limit, offset) as unknown[][];
    return { rows: rows.map(messageFromColumns), total };
  }

  async redeliver(subscriptionId: string, messageId: string, now: number, at: string): Promise<boolean> {
    // Only onto an active subscription (it may be deleted or disabled since the route checked it):
    // a message queued on any other would never be sent or cancelled.
    const changed = this.db
      .prepare(
        `UPDATE webhook_messages SET state = 'pending', attempts = 0, next_attempt_at = ?, updated_at = ?
         WHERE subscription_id = ? AND state = 'dead' AND id = ?
           AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.id = webhook_messages.subscription_id AND s.status = 'active' AND s.${LIVE})`,
      )
      .run(now, at, subscriptionId, messageId).changes;
    return changed > 0;
  }

  async counts(organizationId?: string): Promise<WebhookCounts> {
    const scope = organizationId === undefined ? '' : 'WHERE subscription_id IN (SELECT id FROM webhook_subscriptions WHERE organization_id = @organizationId)';
    const params = { organizationId: organizationId ?? null };
    const byState = this.db.prepare(`SELECT state, COUNT(*) AS n FROM webhook_messages ${scope} GROUP BY state`).all(params) as Array<{ state: string; n: number }>;
    const failed = this.db.prepare(`SELECT COUNT(*) FROM webhook_attempts ${scope ? `${scope} AND` : 'WHERE'} outcome != 'delivered'`).pluck().get(params) as number;
    return webhookCounts(byState, failed);
  }

  /** The prune in progress on this connection: its temporary tables are the connection's, so prunes here take turns. */
  private pruning: Promise<unknown> = Promise.resolve();

  async prune(options: WebhookPruneOptions): Promise<WebhookPruneReport> {
    const run = this.pruning.catch(() => undefined).then(() => pruneSqliteWebhooks(this.db, options));
    this.pruning = run;
    return run;
  }
}
