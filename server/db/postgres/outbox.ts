/**
 * The transactional outbox on PostgreSQL. Sequence numbers come from an identity column, which
 * hands them out in the order transactions ask, not the order they commit: a reader paging "after
 * sequence N" could pass a number whose transaction commits later, and its event would never be
 * fanned out. So the outbox is read only up to a horizon every writer below it has finished:
 *  - a writer takes OUTBOX_LOCK in shared mode before it takes a sequence number, and holds it
 *    until its transaction ends. Writers do not wait for each other;
 *  - a reader takes the same lock in exclusive mode, which PostgreSQL grants once every writer
 *    holding it has committed or rolled back, reads the last sequence number handed out (the
 *    horizon) and lets the lock go at once; then it reads up to the horizon, in a statement of its
 *    own (a snapshot taken after those commits). Numbers handed out later are above the horizon.
 * Writers append last in their transaction, so a reader waits at most for their commits (and a
 * writer that comes while a reader waits, for that reader's one statement).
 *
 * Other instances learn of new events from the instance that wrote them: its own delivery worker
 * fans them out at once (committed()), and the messages that makes wake the others
 * (notifications.ts). A process without a delivery worker (the admin CLI) notifies them itself.
 */
import type { OutboxEvent, OutboxEventHead, OutboxRepository } from '../types.js';
import { named, type PostgresDatabase, type Queryable } from './database.js';
import { outboxEventFromRow, type OutboxRow } from '../webhook-rows.js';
import { notifyWork, WORK_CHANNEL, type WorkNotifications } from './notifications.js';

/** "PDOUTBOX" (an arbitrary constant): shared by writers, exclusive for the reader's horizon. */
const OUTBOX_LOCK = 0x50444f42;

/**
 * The INSERT of events whose columns are the arrays $from…$from+6 (eventArrays), taking the shared
 * OUTBOX_LOCK before any sequence number: the lock is a FROM item, so it is taken before the first
 * row is made. `also` is another FROM item that must yield one row for the events to be written
 * (the change they tell of, in a WITH clause), or nothing.
 */
export function insertEvents(from: number, also?: string): string {
  const columns = Array.from({ length: 7 }, (_, index) => `$${from + index}::text[]`).join(', ');
  return `INSERT INTO outbox_events (id, event_type, patient_id, organization_id, operation_id, occurred_at, data)
    SELECT event.* FROM${also ? ` ${also},` : ''} (SELECT pg_advisory_xact_lock_shared(${OUTBOX_LOCK})) AS writing,
      unnest(${columns}) AS event`;
}

/** The parameters of insertEvents, in its order. */
export function eventArrays(events: readonly OutboxEvent[]): Array<Array<string | null>> {
  return [
    events.map((event) => event.id),
    events.map((event) => event.eventType),
    events.map((event) => event.patientId),
    events.map((event) => event.organizationId),
    events.map((event) => event.operationId),
    events.map((event) => event.occurredAt),
    events.map((event) => JSON.stringify(event.data)),
  ];
}

const APPEND = named('outbox-append', insertEvents(1));

const WRITING = named('outbox-writing', `SELECT pg_advisory_xact_lock_shared(${OUTBOX_LOCK})`);

/**
 * Call first in a transaction that changes documents (whose trigger locks the patient's counter
 * rows) before it appends events: the outbox lock is then taken before those rows, in the order a
 * create takes them. Taken after them, a reader queued for the outbox lock between a create (that
 * holds the lock and waits for the rows) and this transaction (that holds the rows and waits
 * behind the reader) would close a cycle PostgreSQL breaks only after deadlock_timeout.
 */
export async function takeOutboxWriterLock(tx: Queryable): Promise<void> {
  await tx.run(WRITING);
}

/** The horizon: waits for the writers in progress (the lock, a FROM item, comes first), then the last number handed out. */
const HORIZON = named(
  'outbox-horizon',
  `SELECT COALESCE(pg_sequence_last_value('outbox_events_sequence_seq'), 0)::bigint AS horizon FROM (SELECT pg_advisory_xact_lock(${OUTBOX_LOCK})) AS waited`,
);

const HEADS = named('outbox-heads', 'SELECT sequence, id, event_type, patient_id, organization_id FROM outbox_events WHERE sequence > $1 AND sequence <= $2 ORDER BY sequence LIMIT $3');

/** The last sequence number below which every event is committed (or never will be): see the top of this file. Call outside a transaction, or in one that has not appended. */
export async function outboxHorizon(db: Queryable): Promise<number> {
  return (await db.row<{ horizon: number }>(HORIZON))!.horizon;
}

export class PostgresOutbox implements OutboxRepository {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly notifications: WorkNotifications,
  ) {}

  /** Call only inside the transaction of the change that caused the events, as its last write. */
  async appendInTransaction(tx: Queryable, events: OutboxEvent[]): Promise<void> {
    if (events.length === 0) return;
    await tx.run(APPEND, eventArrays(events));
    if (this.fansOutItself()) return;
    // Delivered at commit: the other instances fan these events out without waiting for a poll.
    const notify = notifyWork(this.notifications.origin);
    await tx.run(notify.sql, notify.params);
  }

  /**
   * Whether this process's delivery worker fans out what it commits (it listens: committed()):
   * otherwise a write notifies the other instances, as parameters of notifyOnCommit.
   */
  fansOutItself(): boolean {
    return this.listeners.size > 0;
  }

  /** The parameters of a statement's `CASE WHEN $n THEN pg_notify($n+1, $n+2) END`: a notification to the other instances unless this process fans out itself. */
  notifyOnCommit(): [boolean, string, string] {
    return [!this.fansOutItself(), WORK_CHANNEL, this.notifications.origin];
  }

  private readonly listeners = new Set<() => void>();

  /** Call after the transaction that appended `events` committed: this process's dispatcher looks at once. */
  committed(events: readonly OutboxEvent[]): void {
    if (events.length === 0) return;
    for (const listener of this.listeners) listener();
  }

  onAppended(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onNotified(listener: () => void): () => void {
    return this.notifications.subscribe(listener);
  }

  async headsAfter(sequence: number, limit: number): Promise<OutboxEventHead[]> {
    const horizon = await outboxHorizon(this.db);
    if (horizon <= sequence) return [];
    const rows = await this.db.rows<OutboxRow>(HEADS, [sequence, horizon, limit]);
    return rows.map((row) => ({ sequence: row.sequence, id: row.id, eventType: row.event_type, patientId: row.patient_id, organizationId: row.organization_id }));
  }

  async after(sequence: number, limit: number): Promise<Array<OutboxEvent & { sequence: number }>> {
    const horizon = await outboxHorizon(this.db);
    const rows = await this.db.rows<OutboxRow>('SELECT * FROM outbox_events WHERE sequence > $1 AND sequence <= $2 ORDER BY sequence LIMIT $3', [sequence, horizon, limit]);
    return rows.map(outboxEventFromRow);
  }
}
