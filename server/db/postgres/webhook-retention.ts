/**
 * `webhooks prune` on PostgreSQL (WebhookRepository.prune; what is shared with SQLite:
 * ../webhook-retention.ts). Three walks, a batch per transaction:
 * 1. messages, by queue position: the ended ones (delivered, cancelled, dead if asked) last changed
 *    before the date go;
 * 2. attempts, by log position: those whose message is gone (by the messages' (subscription, id)
 *    index), whatever removed it;
 * 3. outbox events the fan-out cursor has passed (fanned out to every subscription) that occurred
 *    before the date go, unless a queued or dead message is still made of them (by the unique
 *    (event, subscription) index): its body is composed from the event at each attempt.
 * Every batch first takes PRUNE_LOCK (transaction-scoped), so prunes of several instances (or
 * admins) at the same moment take turns batch by batch: a row is removed, and counted, by one.
 */
import type { WalkOptions } from '../webhook-retention.js';
import type { WebhookPruneOptions, WebhookPruneReport } from '../types.js';
import { betweenBatches, countRemoved, emptyPruneReport, prunedStates, walkOptions } from '../webhook-retention.js';
import type { PostgresDatabase, Queryable } from './database.js';

/** "PDPRUNE" (an arbitrary constant, apart from outbox.ts's). */
const PRUNE_LOCK = 0x50445052;

/**
 * Walks `table` by `key` in batches of `size` rows from its start, running `work(tx, after, last)`
 * on each in one transaction, until a batch is all newer than `end` (by `time`) or `work` says stop.
 */
async function walk(
  db: PostgresDatabase,
  table: string,
  key: string,
  time: string,
  options: WalkOptions,
  work: (tx: Queryable, after: number, last: number) => Promise<boolean>,
): Promise<void> {
  const { size, end, signal } = options;
  let after = 0;
  while (!signal?.aborted) {
    const more = await db.transaction(async (tx) => {
      await tx.run('SELECT pg_advisory_xact_lock($1)', [PRUNE_LOCK]);
      const batch = await tx.row<{ last: number | null; oldest: string | null }>(
        `SELECT max(${key})::bigint AS last, min(${time}) AS oldest FROM (SELECT ${key}, ${time} FROM ${table} WHERE ${key} > $1 ORDER BY ${key} LIMIT $2) b`,
        [after, size],
      );
      if (!batch || batch.last === null || batch.oldest === null || batch.oldest >= end) return false;
      const go = await work(tx, after, Number(batch.last));
      after = Number(batch.last);
      return go;
    });
    if (!more) return;
    await betweenBatches();
  }
}

export async function prunePostgresWebhooks(db: PostgresDatabase, options: WebhookPruneOptions): Promise<WebhookPruneReport> {
  const walking = walkOptions(options);
  const report = emptyPruneReport();
  const states = prunedStates(options);

  await walk(db, 'webhook_messages', 'seq', 'created_at', walking, async (tx, after, last) => {
    const removed = await tx.rows<{ state: string }>(
      `DELETE FROM webhook_messages WHERE seq > $1 AND seq <= $2 AND state = ANY($3::text[]) AND updated_at < $4 RETURNING state`,
      [after, last, states, options.before],
    );
    countRemoved(
      report,
      removed.map((row) => row.state),
    );
    return true;
  });

  await walk(db, 'webhook_attempts', 'sequence', 'attempted_at', walking, async (tx, after, last) => {
    report.attempts += await tx.run(
      `DELETE FROM webhook_attempts a WHERE a.sequence > $1 AND a.sequence <= $2
         AND NOT EXISTS (SELECT 1 FROM webhook_messages m WHERE m.subscription_id = a.subscription_id AND m.id = a.message_id)`,
      [after, last],
    );
    return true;
  });

  await walk(db, 'outbox_events', 'sequence', 'occurred_at', walking, async (tx, after, last) => {
    // Read in the batch: a message queued since is of an event past this cursor.
    const cursor = Number((await tx.row<{ sequence: number }>('SELECT sequence FROM webhook_cursor WHERE id = 1'))?.sequence ?? 0);
    report.events += await tx.run(
      `DELETE FROM outbox_events e WHERE e.sequence > $1 AND e.sequence <= $2 AND e.occurred_at < $3
         AND NOT EXISTS (SELECT 1 FROM webhook_messages m WHERE m.event_id = e.id AND m.state IN ('pending', 'delivering', 'dead'))`,
      [after, Math.min(last, cursor), options.before],
    );
    return last < cursor;
  });
  return report;
}
