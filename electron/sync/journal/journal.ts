/**
 * The sync journal (DESIGN §4): one row per local file, persisted before the engine acts on a state
 * change, so a crash, reboot or network loss resumes where it stopped and never loses a file.
 * Also the per-file history the UI shows and the webhook ledger that dedupes by `messageId`.
 */
import { existsSync, renameSync } from 'node:fs';
import Database from 'better-sqlite3';
import { PLAIN_MESSAGES } from '../../../shared/bridge-errors.js';
import { isDiskFull } from '../home/disk-full.js';
import { createPrivateFile } from '../home/home-modes.js';
import type { BridgeErrorCode } from '../../../shared/bridge-errors.js';
import type { StateCounts, WebhookVerdict } from '../../../shared/bridge.js';
import { canTransition, FILE_STATES, IllegalTransitionError, IN_FLIGHT_STATES } from './states.js';
import type { FileState, HistoryEvent } from './states.js';

export type { StateCounts, WebhookVerdict };

export interface FileRecord {
  id: number;
  pairId: string;
  /** Posix separators, spelled as on disk (the file is opened by it; see mapping.ts toRelativePath). */
  relativePath: string;
  remotePath: string;
  fileName: string;
  size: number;
  mtimeMs: number;
  /** SHA-256 of the bytes last hashed locally. */
  sha256: string | null;
  documentId: string | null;
  /** The content the server holds as current (the `If-Match` of the next version). */
  remoteSha256: string | null;
  remoteVersion: number | null;
  state: FileState;
  attempts: number;
  nextAttemptAt: number | null;
  errorCode: string | null;
  /** Plain language, shown to clinic staff. */
  errorMessage: string | null;
  /** The server's problem detail, shown on demand. */
  errorDetail: string | null;
  bytesDone: number;
  uploadUrl: string | null;
  deletedLocally: boolean;
  updatedAt: number;
  syncedAt: number | null;
  /**
   * When the re-check last found this file's scan missing on the server (its stored file lost, an
   * older version current again after a restore, or its document gone), so staff are told that
   * and not an old "synced" date, and its upload after that is said to be one. Null if never, or
   * since a newer scan from the folder replaced the one found missing.
   */
  lostAt: number | null;
}

export interface ObservedFile {
  size: number;
  mtimeMs: number;
  remotePath: string;
  fileName: string;
}

/** The fields a caller may change together with a state. */
export type FilePatch = Partial<
  Pick<
    FileRecord,
    | 'size'
    | 'mtimeMs'
    | 'sha256'
    | 'documentId'
    | 'remoteSha256'
    | 'remoteVersion'
    | 'attempts'
    | 'nextAttemptAt'
    | 'errorCode'
    | 'errorMessage'
    | 'errorDetail'
    | 'bytesDone'
    | 'uploadUrl'
    | 'lostAt'
  >
>;

/** Overrides the history entry a transition writes (e.g. `adopted` after a 409). */
export interface HistoryNote {
  event: HistoryEvent;
  detail?: string;
}

export interface HistoryEntry {
  at: number;
  event: HistoryEvent;
  version: number | null;
  sha256: string | null;
  detail: string | null;
}

export interface DueOptions {
  /** Rows the caller is already working on (their in-flight state is not a crash leftover). */
  busy?: Iterable<number>;
  /** Only rows of these pairs (e.g. leave paused pairs out). */
  pairIds?: readonly string[];
}

export type RetryTarget = { pairId: string } | { fileId: number };

export interface WebhookRecord {
  verdict: WebhookVerdict;
  /** Absent when the message was rejected before it could be parsed. */
  messageId?: string;
  eventType?: string;
  patientId?: string;
  reason?: string;
}

export interface WebhookActivity {
  id: number;
  receivedAt: number;
  verdict: WebhookVerdict;
  messageId: string | null;
  eventType: string | null;
  patientId: string | null;
  reason: string | null;
}

export const WEBHOOK_ACTIVITY_LIMIT = 1000;
/**
 * How long a delivered `messageId` is remembered. Redeliveries come within the server's retry
 * schedule (45 minutes by default); the listener refuses unsigned-attempt messages older than
 * this, so forgetting an id never lets a replay through.
 */
export const MESSAGE_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export const DELETED_LOCALLY_CODE: BridgeErrorCode = 'DELETED_LOCALLY';
/** A synced file the server no longer has, and that is gone from the folder too (see engine recheck). */
export const LOST_ON_SERVER_CODE: BridgeErrorCode = 'LOST_ON_SERVER';

export interface JournalOptions {
  now?: () => number;
}

const MIGRATIONS: ReadonlyArray<{ name: string; sql: string }> = [
  {
    name: '001-files',
    sql: `
      CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        pair_id TEXT NOT NULL,
        relative_path TEXT NOT NULL,
        remote_path TEXT NOT NULL,
        file_name TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ms INTEGER NOT NULL,
        sha256 TEXT NULL,
        document_id TEXT NULL,
        remote_sha256 TEXT NULL,
        remote_version INTEGER NULL,
        state TEXT NOT NULL CHECK (state IN (${FILE_STATES.map((state) => `'${state}'`).join(', ')})),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NULL,
        error_code TEXT NULL,
        error_message TEXT NULL,
        error_detail TEXT NULL,
        bytes_done INTEGER NOT NULL DEFAULT 0,
        upload_url TEXT NULL,
        deleted_locally INTEGER NOT NULL DEFAULT 0,
        updated_at INTEGER NOT NULL,
        synced_at INTEGER NULL,
        UNIQUE (pair_id, relative_path)
      );
      CREATE INDEX files_due ON files (state, next_attempt_at);`,
  },
  {
    name: '002-history',
    sql: `
      CREATE TABLE history (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES files (id),
        at INTEGER NOT NULL,
        event TEXT NOT NULL,
        version INTEGER NULL,
        sha256 TEXT NULL,
        detail TEXT NULL
      );
      CREATE INDEX history_file ON history (file_id, id);`,
  },
  {
    name: '003-webhooks',
    sql: `
      CREATE TABLE webhook_messages (
        message_id TEXT PRIMARY KEY,
        received_at INTEGER NOT NULL,
        event_type TEXT NULL,
        verdict TEXT NOT NULL
      );
      CREATE INDEX webhook_messages_received ON webhook_messages (received_at);
      CREATE TABLE webhook_activity (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        received_at INTEGER NOT NULL,
        verdict TEXT NOT NULL,
        message_id TEXT NULL,
        event_type TEXT NULL,
        reason TEXT NULL
      );`,
  },
  {
    name: '004-webhook-activity-patient',
    sql: 'ALTER TABLE webhook_activity ADD COLUMN patient_id TEXT NULL;',
  },
  {
    // counts() (the UI's pair totals, isSettled) reads only this index instead of every row.
    name: '005-files-pair-state',
    sql: 'CREATE INDEX files_pair_state ON files (pair_id, state);',
  },
  {
    // canWrite() writes and removes a row here to learn whether the disk has room again.
    name: '006-disk-probe',
    sql: 'CREATE TABLE disk_probe (data BLOB NOT NULL);',
  },
  {
    // When synced files were last checked against the server (the engine's re-check), so a restart
    // or a `run --once` every few minutes does not check 50,000 files each time.
    name: '007-meta',
    sql: 'CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);',
  },
  {
    // When the re-check found a synced scan missing on the server (FileRecord.lostAt).
    name: '008-files-lost-at',
    sql: 'ALTER TABLE files ADD COLUMN lost_at INTEGER NULL;',
  },
];

/**
 * What canWrite() writes: room for a few hundred rows' worth of writes, so that the engine does not
 * go on at the first free byte and stop again at once.
 */
const DISK_PROBE_BYTES = 256 * 1024;

const FILE_COLUMNS = `id, pair_id AS pairId, relative_path AS relativePath, remote_path AS remotePath,
  file_name AS fileName, size, mtime_ms AS mtimeMs, sha256, document_id AS documentId,
  remote_sha256 AS remoteSha256, remote_version AS remoteVersion, state, attempts,
  next_attempt_at AS nextAttemptAt, error_code AS errorCode, error_message AS errorMessage,
  error_detail AS errorDetail, bytes_done AS bytesDone, upload_url AS uploadUrl,
  deleted_locally AS deletedLocally, updated_at AS updatedAt, synced_at AS syncedAt, lost_at AS lostAt`;

// The patch keys are a closed set mapped to fixed column names, so building the UPDATE from them
// cannot inject SQL.
const PATCH_COLUMNS: Record<keyof FilePatch, string> = {
  size: 'size',
  mtimeMs: 'mtime_ms',
  sha256: 'sha256',
  documentId: 'document_id',
  remoteSha256: 'remote_sha256',
  remoteVersion: 'remote_version',
  attempts: 'attempts',
  nextAttemptAt: 'next_attempt_at',
  errorCode: 'error_code',
  errorMessage: 'error_message',
  errorDetail: 'error_detail',
  bytesDone: 'bytes_done',
  uploadUrl: 'upload_url',
  lostAt: 'lost_at',
};

const FRESH_START: FilePatch = {
  attempts: 0,
  nextAttemptAt: null,
  errorCode: null,
  errorMessage: null,
  errorDetail: null,
  bytesDone: 0,
  uploadUrl: null,
};

type RawFileRow = Omit<FileRecord, 'deletedLocally'> & { deletedLocally: number };

function toRecord(row: RawFileRow): FileRecord {
  return { ...row, deletedLocally: row.deletedLocally === 1 };
}

/** A journal that could not be opened and was moved aside (never deleted) for a fresh one. */
export interface JournalRecovery {
  /** Where the damaged file now is (its -wal and -shm files beside it, when there were any). */
  setAsideAs: string;
  /** SQLite's words, for the record. */
  reason: string;
}

/**
 * Opens the journal. One that SQLite cannot read (a disk that failed, a power cut on a disk that
 * lies about flushing, a file someone truncated) is moved aside and a fresh one is made: the scan
 * at start rebuilds it, and the pipeline adopts what the server already holds (the same bytes
 * under the same name) instead of uploading it twice. The app starts either way.
 */
export function openJournal(file: string, options: JournalOptions = {}): Journal {
  try {
    return openHealthyJournal(file, options);
  } catch (error) {
    if (!isDamagedDatabase(error)) throw error;
    const setAsideAs = setAside(file);
    const journal = openHealthyJournal(file, options);
    journal.recovery = { setAsideAs, reason: (error as Error).message };
    return journal;
  }
}

/** Plain words for the user, once, when the journal had to be made again. */
export function journalRecoveryNotice(recovery: JournalRecovery): string {
  return (
    `The upload record on this computer was damaged (often after a power cut) and has been rebuilt: every folder is being checked again. ` +
    `Files already on the server are recognised and not uploaded twice. The damaged record was kept as ${recovery.setAsideAs}.`
  );
}

function openHealthyJournal(file: string, options: JournalOptions): Journal {
  createPrivateFile(file);
  const database = new Database(file);
  try {
    database.pragma('journal_mode = WAL');
    // NORMAL under WAL: a power cut may lose the last transactions but never corrupts the journal;
    // the scan at start re-observes any file whose row was lost.
    database.pragma('synchronous = NORMAL');
    database.pragma('foreign_keys = ON');
    // Damage found now costs one rebuild; found later, it would fail files one at a time.
    const check = database.pragma('quick_check', { simple: true }) as string;
    if (check !== 'ok') throw Object.assign(new Error(`quick_check: ${check}`), { code: 'SQLITE_CORRUPT' });
    applyMigrations(database, file);
    cacheStatements(database);
  } catch (error) {
    database.close();
    throw error;
  }
  return new Journal(database, options.now ?? Date.now);
}

const DAMAGED_CODES = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT', 'SQLITE_CORRUPT_VTAB', 'SQLITE_CORRUPT_SEQUENCE', 'SQLITE_CORRUPT_INDEX']);

function isDamagedDatabase(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && DAMAGED_CODES.has(code);
}

function setAside(file: string): string {
  const aside = `${file}.unreadable-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  renameSync(file, aside);
  // The write-ahead log belongs to the damaged file: a fresh journal must not replay it.
  for (const suffix of ['-wal', '-shm']) {
    if (existsSync(file + suffix)) renameSync(file + suffix, aside + suffix);
  }
  return aside;
}

/**
 * Compiling a statement costs more than running it; the sync engine writes several transitions
 * per file, so the journal keeps each compiled statement (the SQL texts are a small, fixed set).
 */
function cacheStatements(database: Database.Database): void {
  const statements = new Map<string, Database.Statement>();
  const compile = database.prepare.bind(database);
  database.prepare = ((sql: string) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = compile(sql);
      statements.set(sql, statement);
    }
    return statement;
  }) as typeof database.prepare;
}

/**
 * A journal a newer version of the app has migrated (the app went back to an older version after a
 * failed update): this version would misread its rows. Refused before anything is written to it,
 * and not taken for a damaged file (it is never set aside or rebuilt).
 */
export class NewerJournalError extends Error {
  readonly code = 'JOURNAL_FROM_NEWER_VERSION';
  constructor(
    readonly file: string,
    readonly unknownMigrations: string[],
  ) {
    super(
      `The upload record ${file} was written by a newer version of Patient Docs (it has changes ${unknownMigrations.join(', ')} that this version does not know). ` +
        'It was left as it is. Install the newer version again to go on syncing; nothing is uploaded until then.',
    );
  }
}

function applyMigrations(database: Database.Database, file: string): void {
  const hasTable = database.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'migrations'").get();
  if (hasTable) {
    const known = new Set(MIGRATIONS.map((migration) => migration.name));
    const unknown = (database.prepare('SELECT name FROM migrations ORDER BY name').pluck().all() as string[]).filter((name) => !known.has(name));
    if (unknown.length > 0) throw new NewerJournalError(file, unknown);
  }
  database.exec('CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)');
  const applied = new Set(database.prepare('SELECT name FROM migrations').pluck().all() as string[]);
  for (const migration of MIGRATIONS) {
    if (applied.has(migration.name)) continue;
    database.transaction(() => {
      database.exec(migration.sql);
      database.prepare('INSERT INTO migrations (name, applied_at) VALUES (?, ?)').run(migration.name, Date.now());
    })();
  }
}

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
    private readonly database: Database.Database,
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
    return this.database.prepare('SELECT DISTINCT pair_id FROM files ORDER BY pair_id').pluck().all() as string[];
  }

  byPair(pairId: string): FileRecord[] {
    const rows = this.database
      .prepare(`SELECT ${FILE_COLUMNS} FROM files WHERE pair_id = ? ORDER BY relative_path`)
      .all(pairId) as RawFileRow[];
    return rows.map(toRecord);
  }

  /** Size and mtime of every file of the pair still in the folder, as last seen (no full rows). */
  knownFiles(pairId: string): Array<readonly [string, { size: number; mtimeMs: number }]> {
    const rows = this.database
      .prepare('SELECT relative_path AS relativePath, size, mtime_ms AS mtimeMs FROM files WHERE pair_id = ? AND deleted_locally = 0')
      .all(pairId) as Array<{ relativePath: string; size: number; mtimeMs: number }>;
    return rows.map((row) => [row.relativePath, { size: row.size, mtimeMs: row.mtimeMs }] as const);
  }

  counts(pairId: string): StateCounts {
    const counts = Object.fromEntries(FILE_STATES.map((state) => [state, 0])) as StateCounts;
    const rows = this.database
      .prepare('SELECT state, COUNT(*) AS count FROM files WHERE pair_id = ? GROUP BY state')
      .all(pairId) as Array<{ state: FileState; count: number }>;
    for (const row of rows) counts[row.state] = row.count;
    return counts;
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
    const inFlight = IN_FLIGHT_STATES.map((state) => `'${state}'`).join(', ');
    const pairFilter = options.pairIds ? 'AND pair_id IN (SELECT value FROM json_each(@pairs))' : '';
    const rows = this.database
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
    return this.database
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
  retryUnreachableNow(now: number, codes: readonly string[]): number {
    if (codes.length === 0) return 0;
    return this.database
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
  syncedAfter(pairId: string, afterId: number, limit: number): FileRecord[] {
    const rows = this.database
      .prepare(`SELECT ${FILE_COLUMNS} FROM files WHERE pair_id = ? AND state = 'synced' AND id > ? AND document_id IS NOT NULL ORDER BY id LIMIT ?`)
      .all(pairId, afterId, limit) as RawFileRow[];
    return rows.map(toRecord);
  }

  /** Files failed as lost on the server and gone from the folder (LOST_ON_SERVER), in id order: the re-check asks whether IT restored them. */
  lostAfter(pairId: string, afterId: number, limit: number): FileRecord[] {
    const rows = this.database
      .prepare(`SELECT ${FILE_COLUMNS} FROM files WHERE pair_id = ? AND state = 'failed' AND error_code = ? AND id > ? AND document_id IS NOT NULL ORDER BY id LIMIT ?`)
      .all(pairId, LOST_ON_SERVER_CODE, afterId, limit) as RawFileRow[];
    return rows.map(toRecord);
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
    return this.database.prepare('SELECT 1 FROM webhook_messages WHERE message_id = ?').get(messageId) !== undefined;
  }

  recordWebhook(record: WebhookRecord): void {
    const receivedAt = this.now();
    this.database.transaction(() => {
      if (record.verdict === 'accepted' && record.messageId !== undefined) {
        this.database
          .prepare('INSERT OR IGNORE INTO webhook_messages (message_id, received_at, event_type, verdict) VALUES (?, ?, ?, ?)')
          .run(record.messageId, receivedAt, record.eventType ?? null, record.verdict);
        this.database.prepare('DELETE FROM webhook_messages WHERE received_at < ?').run(receivedAt - MESSAGE_RETENTION_MS);
      }
      const inserted = this.database
        .prepare('INSERT INTO webhook_activity (received_at, verdict, message_id, event_type, patient_id, reason) VALUES (?, ?, ?, ?, ?, ?)')
        .run(receivedAt, record.verdict, record.messageId ?? null, record.eventType ?? null, record.patientId ?? null, record.reason ?? null);
      this.database.prepare('DELETE FROM webhook_activity WHERE id <= ?').run(Number(inserted.lastInsertRowid) - WEBHOOK_ACTIVITY_LIMIT);
    })();
  }

  /** The newest deliveries first, whatever their verdict. */
  webhookActivity(limit = 100): WebhookActivity[] {
    return this.database
      .prepare(
        `SELECT id, received_at AS receivedAt, verdict, message_id AS messageId, event_type AS eventType,
           patient_id AS patientId, reason
         FROM webhook_activity ORDER BY id DESC LIMIT ?`,
      )
      .all(limit) as WebhookActivity[];
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

/** Fields a state implies, so callers cannot forget them (the caller's patch still wins). */
function automaticFields(state: FileState): FilePatch {
  switch (state) {
    case 'synced':
      return { attempts: 0, nextAttemptAt: null, errorCode: null, errorMessage: null, errorDetail: null, uploadUrl: null };
    case 'queued':
      return { ...FRESH_START };
    case 'creating':
    case 'uploading':
    case 'verifying':
    case 'failed':
      return { nextAttemptAt: null };
    case 'waiting':
      return {};
  }
}

function defaultNote(current: FileRecord, state: FileState, patch: FilePatch): HistoryNote | undefined {
  if (state === current.state) return undefined;
  switch (state) {
    case 'failed':
      return { event: 'failed', detail: patch.errorMessage ?? current.errorMessage ?? undefined };
    case 'synced':
      return { event: 'verified' };
    case 'queued':
      return { event: 'queued' };
    case 'verifying':
      // Content the server already held before this upload makes it a new version.
      if (current.state !== 'uploading') return undefined;
      return current.remoteSha256 === null ? { event: 'uploaded' } : { event: 'version' };
    case 'creating':
    case 'uploading':
    case 'waiting':
      return undefined;
  }
}
