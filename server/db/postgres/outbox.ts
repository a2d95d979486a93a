/**
 * The transactional outbox on PostgreSQL. Sequence numbers come from an identity column, which
 * hands them out in the order transactions ask, not the order they commit: a reader paging "after
 * sequence N" could pass a number whose transaction commits later, and its event would never be
 * fanned out. So every append first takes OUTBOX_LOCK, a transaction-scoped advisory lock held
 * until commit: appends commit one after the other in sequence order, and every reader sees a
 * prefix of the outbox. Writers append last in their transaction, so the lock is held for the
 * commit alone. The same transaction notifies the other instances (notifications.ts).
 */
import type { OutboxEvent, OutboxEventHead, OutboxRepository } from '../types.js';
import type { PostgresDatabase, Queryable } from './database.js';
import { outboxEventFromRow, type OutboxRow } from '../webhook-rows.js';
import { notifyWork, type WorkNotifications } from './notifications.js';

/** "PDOUTBOX" (an arbitrary constant). */
const OUTBOX_LOCK = 0x50444f42;

export class PostgresOutbox implements OutboxRepository {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly notifications: WorkNotifications,
  ) {}

  /** Call only inside the transaction of the change that caused the events, as its last write. */
  async appendInTransaction(tx: Queryable, events: OutboxEvent[]): Promise<void> {
    if (events.length === 0) return;
    await tx.run('SELECT pg_advisory_xact_lock($1)', [OUTBOX_LOCK]);
    await tx.run(
      `INSERT INTO outbox_events (id, event_type, patient_id, organization_id, operation_id, occurred_at, data)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])`,
      [
        events.map((event) => event.id),
        events.map((event) => event.eventType),
        events.map((event) => event.patientId),
        events.map((event) => event.organizationId),
        events.map((event) => event.operationId),
        events.map((event) => event.occurredAt),
        events.map((event) => JSON.stringify(event.data)),
      ],
    );
    // Delivered at commit: the other instances fan these events out without waiting for a poll.
    const notify = notifyWork(this.notifications.origin);
    await tx.run(notify.sql, notify.params);
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
    const rows = await this.db.rows<OutboxRow>('SELECT sequence, id, event_type, patient_id, organization_id FROM outbox_events WHERE sequence > $1 ORDER BY sequence LIMIT $2', [sequence, limit]);
    return rows.map((row) => ({ sequence: row.sequence, id: row.id, eventType: row.event_type, patientId: row.patient_id, organizationId: row.organization_id }));
  }

  async after(sequence: number, limit: number): Promise<Array<OutboxEvent & { sequence: number }>> {
    const rows = await this.db.rows<OutboxRow>('SELECT * FROM outbox_events WHERE sequence > $1 ORDER BY sequence LIMIT $2', [sequence, limit]);
    return rows.map(outboxEventFromRow);
  }
}
