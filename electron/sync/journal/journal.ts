/**
 * The sync journal (DESIGN §4): one row per local file, persisted before the engine acts on a state
 * change, so a crash, reboot or network loss resumes where it stopped and never loses a file.
 * Also the per-file history the UI shows and the webhook ledger that dedupes by `messageId`.
 * Opened by open-journal.ts; its schema is migrations.ts, its rows file-record.ts, its queries over
 * many rows file-queries.ts, its webhook ledger webhook-ledger.ts.
 */
import type Database from 'better-sqlite3';
import { PLAIN_MESSAGES } from '../../../shared/bridge-errors.js';
import type { StateCounts, WebhookActivityView } from '../../../shared/bridge.js';
import { isDiskFull } from '../home/disk-full.js';
import {
  automaticFields,
  defaultNote,
  DELETED_LOCALLY_CODE,
  FILE_COLUMNS,
  FRESH_START,
  LOST_ON_SERVER_CODE,
  PATCH_COLUMNS,
  toRecord,
  type FilePatch,
  type FileRecord,
  type HistoryEntry,
  type HistoryNote,
  type ObservedFile,
  type RawFileRow,
  type RetryTarget,
} from './file-record.js';
import { byPair, counts, due, knownFiles, lostAfter, pairIds, retryUnreachableNow, retryWaitingNow, syncedAfter, type DueOptions } from './file-queries.js';
import type { JournalRecovery } from './open-journal.js';
import { canTransition, IllegalTransitionError } from './states.js';
import type { FileState, HistoryEvent } from './states.js';
import { recordWebhook, seenMessage, webhookActivity, type WebhookRecord } from './webhook-ledger.js';

/**
 * What canWrite() writes: room for a few hundred rows' worth of writes, so that the engine does not
 * go on at the first free byte and stop again at once.
 */
const DISK_PROBE_BYTES = 256 * 1024;

export class Journal {
  /** Set when the journal file was damaged and a fresh one was made in its place. */
  recovery: JournalRecovery | undefined;
  /** The hot statements, compiled once (the engine reads and writes rows several times per file). */
  private readonly selectById: Database.Statement;
  private readonly selectByPath: Database.Statement;
  private readonly insertHistory: Database.Statement;
  private readonly insertFile: Database.Statement;
  /** UPDATE … RETURNING statements by the set of columns they assign. */
  private readonly updates = new Map<string, Database.Statement>();
  // Transaction wrappers built once (better-sqlite3 builds five functions per `transaction()` call).
  private readonly observeTx: (pairId: string, relativePath: string, observed: ObservedFile) => FileRecord;
  private readonly observeManyTx: (pairId: string, files: ReadonlyArray<{ relativePath: string; observed: ObservedFile }>) => FileRecord[];
  private readonly transitionTx: (id: number, state: FileState, patch: FilePatch, note: HistoryNote | undefined) => FileRecord;

  constructor(
    /** Also holds the tables kept beside the files' rows: the scanner inbox's cases (inbox/case-store.ts). */
    readonly database: Database.Database,
    private readonly now: () => number,
  ) {
    this.selectById = database.prepare(`SELECT ${FILE_COLUMNS} FROM files WHERE id = ?`);
    this.selectByPath = database.prepare(`SELECT ${FILE_COLUMNS} FROM files WHERE pair_id = ? AND relative_path = ?`);
    this.insertHistory = database.prepare('INSERT INTO history (file_id, at, event, version, sha256, detail) VALUES (?, ?, ?, ?, ?, ?)');
    this.insertFile = database.prepare(
      `INSERT INTO files (pair_id, relative_path, remote_path, file_name, size, mtime_ms, state, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 'queued', ?) RETURNING ${FILE_COLUMNS}`,
    );
    this.observeTx = database.transaction((pairId: string, relativePath: string, observed: ObservedFile) => this.observeOne(pairId, relativePath, observed));
    this.observeManyTx = database.transaction((pairId: string, files: ReadonlyArray<{ relativePath: string; observed: ObservedFile }>) =>
      files.map((file) => this.observeOne(pairId, file.relativePath, file.observed)),
    );
    this.transitionTx = database.transaction((id: number, state: FileState, patch: FilePatch, note: HistoryNote | undefined) => {
      const current = this.get(id);
      if (!current) throw new Error(`file ${id} is not in the journal`);
      if (!canTransition(current.state, state)) throw new IllegalTransitionError(id, current.state, state);
      return this.write(current, state, { ...automaticFields(state), ...patch }, note ?? defaultNote(current, state, patch));
    });
  }

  close(): void {
    this.database.close();
  }

  /**
   * True when a write reaches the disk now; false while the disk is too full for it (SQLITE_FULL).
   * The engine asks while it holds its work for a full disk, to go on by itself once there is space.
   */
  canWrite(): boolean {
    try {
      this.database.prepare('DELETE FROM disk_probe').run();
      this.database.prepare('INSERT INTO disk_probe (data) VALUES (zeroblob(?))').run(DISK_PROBE_BYTES);
      this.database.prepare('DELETE FROM disk_probe').run();
      return true;
    } catch (error) {
      if (isDiskFull(error)) return false;
      throw error;
    }
  }

  get(id: number): FileRecord | undefined {
    const row = this.selectById.get(id) as RawFileRow | undefined;
    return row && toRecord(row);
  }

  find(pairId: string, relativePath: string): FileRecord | undefined {
    const row = this.selectByPath.get(pairId, relativePath) as RawFileRow | undefined;
    return row && toRecord(row);
  }

  /** Every pair with rows, also pairs no longer synced (their rows stay for the record). */
  pairIds(): string[] {
    return pairIds(this.database);
  }

  byPair(pairId: string): FileRecord[] {
    return byPair(this.database, pairId);
  }

  /** Size and mtime of every file of the pair still in the folder, as last seen (no full rows). */
  knownFiles(pairId: string): Array<readonly [string, { size: number; mtimeMs: number }]> {
    return knownFiles(this.database, pairId);
  }

  counts(pairId: string): StateCounts {
    return counts(this.database, pairId);
  }

  /**
   * Records what the scan or watcher saw. A new file is queued; a synced or failed file whose size
   * or mtime changed is queued again (it becomes a new version of the same document).
   */
  observe(pairId: string, relativePath: string, observed: ObservedFile): FileRecord {
    return this.observeTx(pairId, relativePath, observed);
  }

  /**
   * `observe` for many files in one transaction (a scan finds thousands at once): the rows are
   * all written, or none, before the caller acts on any of them.
   */
  observeMany(pairId: string, files: ReadonlyArray<{ relativePath: string; observed: ObservedFile }>): FileRecord[] {
    return this.observeManyTx(pairId, files);
  }

  private observeOne(pairId: string, relativePath: string, observed: ObservedFile): FileRecord {
    const existing = this.find(pairId, relativePath);
    if (!existing) return this.insertQueued(pairId, relativePath, observed);
    const changed = existing.size !== observed.size || existing.mtimeMs !== observed.mtimeMs;
    const reappeared = existing.deletedLocally;
    const requeue =
      (changed && (existing.state === 'synced' || existing.state === 'failed')) ||
      (reappeared && existing.state === 'failed' && (existing.errorCode === DELETED_LOCALLY_CODE || existing.errorCode === LOST_ON_SERVER_CODE));
    if (!changed && !reappeared) return existing;
    this.database.prepare('UPDATE files SET deleted_locally = 0 WHERE id = ?').run(existing.id);
    if (requeue) {
      // A new scan replacing a synced one is not the one the server lost; a copy put back after a loss is.
      const lost: FilePatch = existing.state === 'synced' ? { lostAt: null } : {};
      return this.write(existing, 'queued', { ...FRESH_START, ...lost, ...observed }, { event: 'queued', detail: 'changed on disk' });
    }
    // A file still on its way: the pipeline re-hashes after upload and notices the change itself.
    // A resumable upload begun for the old bytes must not be continued with the new ones.
    const stale: FilePatch = changed ? { uploadUrl: null, bytesDone: 0 } : {};
    return this.write(existing, existing.state, { size: observed.size, mtimeMs: observed.mtimeMs, ...stale }, undefined);
  }

  /**
   * Persists a state change and its fields in one transaction. Call it before acting on the new
   * state, so a crash leaves a row that says what was about to happen.
   */
  transition(id: number, state: FileState, patch: FilePatch = {}, note?: HistoryNote): FileRecord {
    return this.transitionTx(id, state, patch, note);
  }

  /**
   * Rows to work on now: queued (unless held until the file settles again), waiting whose retry
   * time has come, and rows left in a working state by a crash (minus `busy`, the ones the caller
   * is already on). Crash leftovers come first.
   */
  due(now: number, limit: number, options: DueOptions = {}): FileRecord[] {
    return due(this.database, now, limit, options);
  }

  /**
   * The file is gone from the folder. The row stays (the server keeps the document; the history
   * stays for the record). A file that was still waiting to start cannot be uploaded any more, so
   * it fails with a reason; a step already under way is left to the pipeline, which may hold the
   * file open. Also for a file an ignore pattern now covers (`note`: the history entry to write):
   * either way the folder no longer syncs it, and only a synced row is still shown, as history.
   */
  markDeletedLocally(pairId: string, relativePath: string, note?: HistoryNote): FileRecord | undefined {
    return this.database.transaction(() => {
      const existing = this.find(pairId, relativePath);
      if (!existing || existing.deletedLocally) return existing;
      this.database.prepare('UPDATE files SET deleted_locally = 1 WHERE id = ?').run(existing.id);
      this.addHistory(existing, note?.event ?? 'deleted-locally', note?.detail);
      if (existing.state !== 'queued' && existing.state !== 'waiting') return this.get(existing.id);
      return this.write(
        existing,
        'failed',
        {
          errorCode: DELETED_LOCALLY_CODE,
          errorMessage: PLAIN_MESSAGES.DELETED_LOCALLY,
          errorDetail: null,
          nextAttemptAt: null,
        },
        undefined,
      );
    })();
  }

  /** Queues failed files again (all, one pair's, or one file). Returns how many were queued. */
  retryFailed(target?: RetryTarget): number {
    return this.database.transaction(() => {
      const rows = this.database
        .prepare(
          `SELECT ${FILE_COLUMNS} FROM files WHERE state = 'failed' AND deleted_locally = 0
             AND (@pairId IS NULL OR pair_id = @pairId) AND (@fileId IS NULL OR id = @fileId)`,
        )
        .all({
          pairId: target && 'pairId' in target ? target.pairId : null,
          fileId: target && 'fileId' in target ? target.fileId : null,
        }) as RawFileRow[];
      for (const row of rows) this.write(toRecord(row), 'queued', FRESH_START, { event: 'queued', detail: 'retry requested' });
      return rows.length;
    })();
  }

  /**
   * Files waiting out a retry delay are made due now (all, one pair's, or one file): what kept
   * them waiting may be gone (a CA saved, a new secret, Retry chosen). Their attempt count stays,
   * so if the trouble is still there the next delay is as long as it would have been. Returns how many.
   */
  retryWaitingNow(now: number, target?: RetryTarget): number {
    return retryWaitingNow(this.database, now, target);
  }

  /**
   * Files waiting because the server could not be reached (`codes`: no connection, or no TLS
   * handshake) are made due now: a request that just went through proves the server is back.
   * Files waiting for anything else (a Retry-After or 429 the server sent, a 5xx, a lock on the
   * file) keep their time. Their attempt count stays. Returns how many.
   */
  retryUnreachableNow(now: number, codes: readonly string[]): number {
    return retryUnreachableNow(this.database, now, codes);
  }

  /**
   * Synced rows of a pair that name a document, after `afterId` in id order, `limit` at a time:
   * the engine's re-check walks them in batches (one short index range each).
   */
  syncedAfter(pairId: string, afterId: number, limit: number): FileRecord[] {
    return syncedAfter(this.database, pairId, afterId, limit);
  }

  /** Files failed as lost on the server and gone from the folder (LOST_ON_SERVER), in id order: the re-check asks whether IT restored them. */
  lostAfter(pairId: string, afterId: number, limit: number): FileRecord[] {
    return lostAfter(this.database, pairId, afterId, limit);
  }

  /** When synced files were last checked against the server (ms since the epoch), or null. */
  lastRecheckAt(): number | null {
    const value = this.database.prepare("SELECT value FROM meta WHERE key = 'last-recheck-at'").pluck().get() as string | undefined;
    return value === undefined ? null : Number(value);
  }

  setLastRecheckAt(at: number): void {
    this.database.prepare("INSERT INTO meta (key, value) VALUES ('last-recheck-at', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(String(at));
  }

  history(fileId: number): HistoryEntry[] {
    return this.database
      .prepare('SELECT at, event, version, sha256, detail FROM history WHERE file_id = ? ORDER BY id')
      .all(fileId) as HistoryEntry[];
  }

  seenMessage(messageId: string): boolean {
    return seenMessage(this.database, messageId);
  }

  recordWebhook(record: WebhookRecord): void {
    recordWebhook(this.database, record, this.now());
  }

  /** The newest deliveries first, whatever their verdict. */
  webhookActivity(limit = 100): WebhookActivityView[] {
    return webhookActivity(this.database, limit);
  }

  private insertQueued(pairId: string, relativePath: string, observed: ObservedFile): FileRecord {
    const row = toRecord(
      this.insertFile.get(pairId, relativePath, observed.remotePath, observed.fileName, observed.size, observed.mtimeMs, this.now()) as RawFileRow,
    );
    this.addHistory(row, 'queued', undefined);
    return row;
  }

  private write(current: FileRecord, state: FileState, patch: FilePatch & Partial<ObservedFile>, note: HistoryNote | undefined): FileRecord {
    const now = this.now();
    const values: Record<string, unknown> = { id: current.id, state, now };
    let signature = state === 'synced' ? 's' : '';
    for (const key in PATCH_COLUMNS) {
      const value = patch[key as keyof FilePatch];
      if (value === undefined) continue;
      signature += `,${key}`;
      values[key] = value;
    }
    if (patch.remotePath !== undefined) {
      signature += ',remotePath';
      values.remotePath = patch.remotePath;
    }
    if (patch.fileName !== undefined) {
      signature += ',fileName';
      values.fileName = patch.fileName;
    }
    const updated = toRecord(this.updateStatement(signature).get(values) as RawFileRow);
    if (note) this.addHistory(updated, note.event, note.detail);
    return updated;
  }

  /** The UPDATE for one set of assigned columns, returning the row as it is now (no second read). */
  private updateStatement(signature: string): Database.Statement {
    let statement = this.updates.get(signature);
    if (statement) return statement;
    const keys = signature.split(',').slice(1);
    const assignments = ['state = @state', 'updated_at = @now'];
    for (const key of keys) {
      if (key === 'remotePath') assignments.push('remote_path = @remotePath');
      else if (key === 'fileName') assignments.push('file_name = @fileName');
      else assignments.push(`${PATCH_COLUMNS[key as keyof FilePatch]} = @${key}`);
    }
    if (signature.startsWith('s')) assignments.push('synced_at = @now');
    statement = this.database.prepare(`UPDATE files SET ${assignments.join(', ')} WHERE id = @id RETURNING ${FILE_COLUMNS}`);
    this.updates.set(signature, statement);
    return statement;
  }

  private addHistory(row: FileRecord, event: HistoryEvent, detail: string | undefined): void {
    this.insertHistory.run(row.id, this.now(), event, row.remoteVersion, row.sha256, detail ?? null);
  }
}
