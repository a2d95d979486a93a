/**
 * `webhooks prune` on the embedded database (WebhookRepository.prune; what is shared with
 * PostgreSQL: ../webhook-retention.ts). Walks a batch per write transaction, this process's other
 * work (requests, delivery) running between batches:
 * 1. messages, by queue position: the ended ones (delivered, cancelled, dead if asked) last changed
 *    before the date are noted in a temporary table of this connection (SqliteWebhooks runs one
 *    prune at a time on it);
 * 2. attempts, by log position: those of a noted message go (no index finds a message's attempts,
 *    and none is kept for it: every attempt would pay for it);
 * 3. messages again: the noted ones go, if they are still ended then. Their attempts went first, so
 *    a prune cut short (a server stopping, a crash) leaves no attempt without its message: what it
 *    did not finish, the next one does;
 * 4. outbox events the fan-out cursor has passed (fanned out to every subscription) that occurred
 *    before the date go, unless a queued or dead message is still made of them (its body is
 *    composed from the event at each attempt, a redelivery's too). Those messages are read first;
 *    a message queued later is of an event past the cursor read before them.
 */
import type { WalkOptions } from '../webhook-retention.js';
import type { WebhookPruneOptions, WebhookPruneReport } from '../types.js';
import { betweenBatches, countRemoved, emptyPruneReport, prunedStates, walkOptions } from '../webhook-retention.js';
import type { SqliteDatabase } from './database.js';

interface Batch {
  /** The last key of the batch; undefined when the table has nothing past the walk's position. */
  last: number | undefined;
  /** The oldest time in the batch. */
  oldest: string | null;
}

/**
 * Walks `table` by `key` in batches of `size` rows from its start, running `work(after, last)` on
 * each in one write transaction, until a batch is all newer than `end` (by `time`), `work` says
 * stop, or the signal aborts.
 */
async function walk(db: SqliteDatabase, table: string, key: string, time: string, options: WalkOptions, work: (after: number, last: number) => boolean): Promise<void> {
  const { size, end, signal } = options;
  const bounds = db.prepare(`SELECT MAX(${key}) AS last, MIN(${time}) AS oldest FROM (SELECT ${key}, ${time} FROM ${table} WHERE ${key} > ? ORDER BY ${key} LIMIT +?)`);
  let after = 0;
  while (!signal?.aborted) {
    const more = db
      .transaction(() => {
        const batch = bounds.get(after, size) as Batch;
        if (batch.last === undefined || batch.last === null || batch.oldest === null || batch.oldest >= end) return false;
        const go = work(after, batch.last);
        after = batch.last;
        return go;
      })
      .immediate();
    if (!more) return;
    await betweenBatches();
  }
}

export async function pruneSqliteWebhooks(db: SqliteDatabase, options: WebhookPruneOptions): Promise<WebhookPruneReport> {
  const walking = walkOptions(options);
  const report = emptyPruneReport();
  const states = prunedStates(options);
  db.exec(`
    CREATE TEMP TABLE IF NOT EXISTS pruned_webhook_messages (subscription_id TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (subscription_id, id)) WITHOUT ROWID;
    CREATE TEMP TABLE IF NOT EXISTS kept_outbox_events (id TEXT PRIMARY KEY) WITHOUT ROWID;
    DELETE FROM temp.pruned_webhook_messages;
    DELETE FROM temp.kept_outbox_events;
  `);
  const ended = `state IN (${states.map(() => '?').join(', ')}) AND updated_at < ?`;
  try {
    const note = db.prepare(
      `INSERT OR IGNORE INTO temp.pruned_webhook_messages (subscription_id, id)
       SELECT subscription_id, id FROM webhook_messages WHERE seq > ? AND seq <= ? AND ${ended}`,
    );
    let noted = 0;
    await walk(db, 'webhook_messages', 'seq', 'created_at', walking, (after, last) => {
      noted += note.run(after, last, ...states, options.before).changes;
      return true;
    });
    if (noted > 0 && !options.signal?.aborted) {
      const removeAttempts = db.prepare(
        `DELETE FROM webhook_attempts WHERE sequence > ? AND sequence <= ?
           AND EXISTS (SELECT 1 FROM temp.pruned_webhook_messages p WHERE p.subscription_id = webhook_attempts.subscription_id AND p.id = webhook_attempts.message_id)`,
      );
      await walk(db, 'webhook_attempts', 'sequence', 'attempted_at', walking, (after, last) => {
        report.attempts += removeAttempts.run(after, last).changes;
        return true;
      });
      const removeMessages = db.prepare(
        `DELETE FROM webhook_messages WHERE seq > ? AND seq <= ? AND ${ended}
           AND EXISTS (SELECT 1 FROM temp.pruned_webhook_messages p WHERE p.subscription_id = webhook_messages.subscription_id AND p.id = webhook_messages.id)
         RETURNING state`,
      );
      if (!options.signal?.aborted) {
        await walk(db, 'webhook_messages', 'seq', 'created_at', walking, (after, last) => {
          countRemoved(
            report,
            (removeMessages.all(after, last, ...states, options.before) as Array<{ state: string }>).map((row) => row.state),
          );
          return true;
        });
      }
    }

    const cursor = (db.prepare('SELECT sequence FROM webhook_cursor WHERE id = 1').pluck().get() as number | undefined) ?? 0;
    // Each through its partial index; 'delivering' is written by no release that reads this, and is pending again at the server's start.
    db.exec(`
      INSERT OR IGNORE INTO temp.kept_outbox_events (id) SELECT event_id FROM webhook_messages WHERE state = 'pending';
      INSERT OR IGNORE INTO temp.kept_outbox_events (id) SELECT event_id FROM webhook_messages WHERE state = 'dead';
    `);
    const removeEvents = db.prepare(
      `DELETE FROM outbox_events WHERE sequence > ? AND sequence <= ? AND occurred_at < ?
         AND NOT EXISTS (SELECT 1 FROM temp.kept_outbox_events k WHERE k.id = outbox_events.id)`,
    );
    await walk(db, 'outbox_events', 'sequence', 'occurred_at', walking, (after, last) => {
      report.events += removeEvents.run(after, Math.min(last, cursor), options.before).changes;
      return last < cursor;
    });
    return report;
  } finally {
    db.exec('DELETE FROM temp.pruned_webhook_messages; DELETE FROM temp.kept_outbox_events;');
  }
}
