import type { OutboxEvent, OutboxEventHead, OutboxRepository } from '../types.js';
import type { SqliteDatabase } from './database.js';
import { outboxEventFromRow, type OutboxRow } from '../webhook-rows.js';

export class SqliteOutbox implements OutboxRepository {
  private readonly insert;
  private readonly selectAfter;
  private readonly selectHeadsAfter;

  constructor(db: SqliteDatabase) {
    this.insert = db.prepare(
      `INSERT INTO outbox_events (id, event_type, patient_id, organization_id, operation_id, occurred_at, data)
       VALUES (@id, @eventType, @patientId, @organizationId, @operationId, @occurredAt, @data)`,
    );
    this.selectAfter = db.prepare('SELECT * FROM outbox_events WHERE sequence > ? ORDER BY sequence LIMIT +?');
    this.selectHeadsAfter = db.prepare('SELECT sequence, id, event_type, patient_id, organization_id FROM outbox_events WHERE sequence > ? ORDER BY sequence LIMIT +?').raw();
  }

  /** Call only inside the transaction of the change that caused the events. */
  appendInTransaction(events: OutboxEvent[]): void {
    for (const event of events) this.insert.run({ ...event, data: JSON.stringify(event.data) });
    if (events.length > 0 && this.listeners.size > 0 && !this.notifyScheduled) {
      this.notifyScheduled = true;
      // After the synchronous transaction has committed (or rolled back: a spurious wake is harmless).
      setImmediate(() => {
        this.notifyScheduled = false;
        for (const listener of this.listeners) listener();
      });
    }
  }

  private readonly listeners = new Set<() => void>();
  private notifyScheduled = false;

  onAppended(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async headsAfter(sequence: number, limit: number): Promise<OutboxEventHead[]> {
    const rows = this.selectHeadsAfter.all(sequence, limit) as Array<[number, string, OutboxEvent['eventType'], string | null, string | null]>;
    return rows.map(([at, id, eventType, patientId, organizationId]) => ({ sequence: at, id, eventType, patientId, organizationId }));
  }

  async after(sequence: number, limit: number): Promise<Array<OutboxEvent & { sequence: number }>> {
    const rows = this.selectAfter.all(sequence, limit) as OutboxRow[];
    return rows.map(outboxEventFromRow);
  }
}
