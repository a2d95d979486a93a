/**
 * The journal's queries over file rows that read many rows or touch many at once: a pair's rows
 * and totals, the rows due for work, the re-check's walk over synced and lost rows, and the
 * retry-delay resets. Single-row reads and state changes are the Journal's own.
 */
import type Database from 'better-sqlite3';
import type { StateCounts } from '../../../shared/bridge.js';
import { FILE_COLUMNS, LOST_ON_SERVER_CODE, toRecord, type FileRecord, type RawFileRow, type RetryTarget } from './file-record.js';
import { FILE_STATES, IN_FLIGHT_STATES, type FileState } from './states.js';

export type { StateCounts };

export interface DueOptions {
  /** Rows the caller is already working on (their in-flight state is not a crash leftover). */
  busy?: Iterable<number>;
  /** Only rows of these pairs (e.g. leave paused pairs out). */
  pairIds?: readonly string[];
}

/** Every pair with rows, also pairs no longer synced (their rows stay for the record). */
export function pairIds(database: Database.Database): string[] {
  return database.prepare('SELECT DISTINCT pair_id FROM files ORDER BY pair_id').pluck().all() as string[];
}

export function byPair(database: Database.Database, pairId: string): FileRecord[] {
  const rows = database.prepare(`SELECT ${FILE_COLUMNS} FROM files WHERE pair_id = ? ORDER BY relative_path`).all(pairId) as RawFileRow[];
  return rows.map(toRecord);
}

/** Size and mtime of every file of the pair still in the folder, as last seen (no full rows). */
export function knownFiles(database: Database.Database, pairId: string): Array<readonly [string, { size: number; mtimeMs: number }]> {
  const rows = database
    .prepare('SELECT relative_path AS relativePath, size, mtime_ms AS mtimeMs FROM files WHERE pair_id = ? AND deleted_locally = 0')
    .all(pairId) as Array<{ relativePath: string; size: number; mtimeMs: number }>;
  return rows.map((row) => [row.relativePath, { size: row.size, mtimeMs: row.mtimeMs }] as const);
}

export function counts(database: Database.Database, pairId: string): StateCounts {
  const counts = Object.fromEntries(FILE_STATES.map((state) => [state, 0])) as StateCounts;
  const rows = database
    .prepare('SELECT state, COUNT(*) AS count FROM files WHERE pair_id = ? GROUP BY state')
    .all(pairId) as Array<{ state: FileState; count: number }>;
  for (const row of rows) counts[row.state] = row.count;
  return counts;
}

/**
 * Rows to work on now: queued (unless held until the file settles again), waiting whose retry
 * time has come, and rows left in a working state by a crash (minus `busy`, the ones the caller
 * is already on). Crash leftovers come first.
 */
export function due(database: Database.Database, now: number, limit: number, options: DueOptions = {}): FileRecord[] {
  const inFlight = IN_FLIGHT_STATES.map((state) => `'${state}'`).join(', ');
  const pairFilter = options.pairIds ? 'AND pair_id IN (SELECT value FROM json_each(@pairs))' : '';
  const rows = database
    .prepare(
      `SELECT ${FILE_COLUMNS} FROM files
       WHERE (state IN (${inFlight}) OR (state = 'queued' AND COALESCE(next_attempt_at, 0) <= @now) OR (state = 'waiting' AND next_attempt_at <= @now))
         AND id NOT IN (SELECT value FROM json_each(@busy)) ${pairFilter}
       ORDER BY CASE WHEN state IN (${inFlight}) THEN 0 ELSE 1 END, COALESCE(next_attempt_at, updated_at), id
       LIMIT @limit`,
    )
    .all({
      now,
      limit,
      busy: JSON.stringify([...(options.busy ?? [])]),
      pairs: JSON.stringify(options.pairIds ?? []),
    }) as RawFileRow[];
  return rows.map(toRecord);
}

/**
 * Files waiting out a retry delay are made due now (all, one pair's, or one file): what kept
 * them waiting may be gone (a CA saved, a new secret, Retry chosen). Their attempt count stays,
 * so if the trouble is still there the next delay is as long as it would have been. Returns how many.
 */
export function retryWaitingNow(database: Database.Database, now: number, target?: RetryTarget): number {
  return database
    .prepare(
      `UPDATE files SET next_attempt_at = @now WHERE state = 'waiting' AND next_attempt_at > @now
         AND (@pairId IS NULL OR pair_id = @pairId) AND (@fileId IS NULL OR id = @fileId)`,
    )
    .run({
      now,
      pairId: target && 'pairId' in target ? target.pairId : null,
      fileId: target && 'fileId' in target ? target.fileId : null,
    }).changes;
}

/**
 * Files waiting because the server could not be reached (`codes`: no connection, or no TLS
 * handshake) are made due now: a request that just went through proves the server is back.
 * Files waiting for anything else (a Retry-After or 429 the server sent, a 5xx, a lock on the
 * file) keep their time. Their attempt count stays. Returns how many.
 */
export function retryUnreachableNow(database: Database.Database, now: number, codes: readonly string[]): number {
  if (codes.length === 0) return 0;
  return database
    .prepare(
      `UPDATE files SET next_attempt_at = ? WHERE state = 'waiting' AND next_attempt_at > ?
         AND error_code IN (${codes.map(() => '?').join(', ')})`,
    )
    .run(now, now, ...codes).changes;
}

/**
 * Synced rows of a pair that name a document, after `afterId` in id order, `limit` at a time:
 * the engine's re-check walks them in batches (one short index range each).
 */
export function syncedAfter(database: Database.Database, pairId: string, afterId: number, limit: number): FileRecord[] {
  const rows = database
    .prepare(`SELECT ${FILE_COLUMNS} FROM files WHERE pair_id = ? AND state = 'synced' AND id > ? AND document_id IS NOT NULL ORDER BY id LIMIT ?`)
    .all(pairId, afterId, limit) as RawFileRow[];
  return rows.map(toRecord);
}

/** Files failed as lost on the server and gone from the folder (LOST_ON_SERVER), in id order: the re-check asks whether IT restored them. */
export function lostAfter(database: Database.Database, pairId: string, afterId: number, limit: number): FileRecord[] {
  const rows = database
    .prepare(`SELECT ${FILE_COLUMNS} FROM files WHERE pair_id = ? AND state = 'failed' AND error_code = ? AND id > ? AND document_id IS NOT NULL ORDER BY id LIMIT ?`)
    .all(pairId, LOST_ON_SERVER_CODE, afterId, limit) as RawFileRow[];
  return rows.map(toRecord);
}
