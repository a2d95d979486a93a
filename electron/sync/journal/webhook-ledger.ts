/**
 * The journal's webhook ledger: the `messageId`s of delivered webhook messages (a redelivery is
 * recognised and not acted on twice) and the activity log of the latest deliveries, whatever their
 * verdict, that Settings shows.
 */
import type Database from 'better-sqlite3';
import type { WebhookActivityView, WebhookVerdict } from '../../../shared/bridge.js';

export type { WebhookVerdict };

export interface WebhookRecord {
  verdict: WebhookVerdict;
  /** Absent when the message was rejected before it could be parsed. */
  messageId?: string;
  eventType?: string;
  patientId?: string;
  reason?: string;
}

export const WEBHOOK_ACTIVITY_LIMIT = 1000;
/**
 * How long a delivered `messageId` is remembered. Redeliveries come within the server's retry
 * schedule (45 minutes by default); the listener refuses unsigned-attempt messages older than
 * this, so forgetting an id never lets a replay through.
 */
export const MESSAGE_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export function seenMessage(database: Database.Database, messageId: string): boolean {
  return database.prepare('SELECT 1 FROM webhook_messages WHERE message_id = ?').get(messageId) !== undefined;
}

/** Records one delivery in the activity log, and an accepted message's id for the retention time. */
export function recordWebhook(database: Database.Database, record: WebhookRecord, receivedAt: number): void {
  database.transaction(() => {
    if (record.verdict === 'accepted' && record.messageId !== undefined) {
      database
        .prepare('INSERT OR IGNORE INTO webhook_messages (message_id, received_at, event_type, verdict) VALUES (?, ?, ?, ?)')
        .run(record.messageId, receivedAt, record.eventType ?? null, record.verdict);
      database.prepare('DELETE FROM webhook_messages WHERE received_at < ?').run(receivedAt - MESSAGE_RETENTION_MS);
    }
    const inserted = database
      .prepare('INSERT INTO webhook_activity (received_at, verdict, message_id, event_type, patient_id, reason) VALUES (?, ?, ?, ?, ?, ?)')
      .run(receivedAt, record.verdict, record.messageId ?? null, record.eventType ?? null, record.patientId ?? null, record.reason ?? null);
    database.prepare('DELETE FROM webhook_activity WHERE id <= ?').run(Number(inserted.lastInsertRowid) - WEBHOOK_ACTIVITY_LIMIT);
  })();
}

/** The newest deliveries first, whatever their verdict, each row as the bridge shows it. */
export function webhookActivity(database: Database.Database, limit: number): WebhookActivityView[] {
  return database
    .prepare(
      `SELECT id, received_at AS receivedAt, verdict, message_id AS messageId, event_type AS eventType,
         patient_id AS patientId, reason
       FROM webhook_activity ORDER BY id DESC LIMIT ?`,
    )
    .all(limit) as WebhookActivityView[];
}
