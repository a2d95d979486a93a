/**
 * A backup taken while the server runs, and the check that a data directory (a live one, or a
 * backup about to be restored) holds every file its database names.
 *
 * The database is copied with SQLite's online backup API in one step: a consistent snapshot, taken
 * under a read transaction that, in WAL mode, never blocks the server's writes. Content objects are
 * immutable (each version has a key of its own, written once by rename, kept after a document is
 * deleted), so copying the objects the snapshot names after the snapshot is consistent with it.
 * Each copy is hashed as it is written and compared with the sha256 the snapshot holds. The
 * objects are read through the content storage (storage/types.ts): the local disk or an object store.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import Database from 'better-sqlite3';
import { makeDirectories, PRIVATE_DIR, PRIVATE_FILE } from '../../private-files.js';
import { isMissingObject, type ContentStorage } from '../../storage/types.js';
import { BackupTargetError } from './refusals.js';
import type { RestorableFile } from '../types.js';

/** The database file's name inside a backup (a data directory's default). */
export const BACKUP_DATABASE = 'patient-docs.sqlite';
const MANIFEST = 'BACKUP.json';
/** Files of the data directory that are copied beside the database when present. */
const SIDE_FILES = ['admin-token.sha256'];

export interface ContentProblem {
  documentId: string;
  version: number;
  key: string;
  problem: string;
  /** The file is there but could not be read (permissions, a disk error): not taken for lost. */
  unreadable?: boolean;
  /** The file is not there at all (else it is there, but unreadable or not the recorded bytes). */
  missing?: boolean;
}

export interface VerifyReport {
  versions: number;
  bytes: number;
  problems: ContentProblem[];
  /** Versions marked lost before (`verify --mark-lost`), whose files are still not there: known, not new. */
  markedLost: ContentProblem[];
  /**
   * Versions marked lost before whose files are back and intact (restored from a backup: the
   * recorded size and sha256, always hashed): `verify --mark-restored` counts them as content again.
   */
  restorable: RestorableFile[];
  /** Whether the content folder holds any file at all (a disk not mounted leaves it missing or empty). */
  folderHasFiles: boolean;
  /** Entries of the audit log in the database (it travels with the database: nothing to copy beside it). */
  auditEntries: number;
}

/** The audit log's size; 0 for a database from before it (backup and verify do not migrate). */
function auditEntries(db: Database.Database): number {
  const table = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'audit_log'").get();
  return table ? (db.prepare('SELECT count(*) FROM audit_log').pluck().get() as number) : 0;
}

export interface BackupReport extends VerifyReport {
  directory: string;
  createdAt: string;
}

interface VersionRow {
  document_id: string;
  version: number;
  content_key: string;
  file_size: number;
  sha256: string;
  thumbnail_key: string | null;
  content_lost_at: string | null;
}

/**
 * The versions, read as they are iterated: the statement opens at the first row asked for and
 * closes when the iteration ends or is left, so a check that fails before reading (the store
 * unreachable) leaves the connection free to close and its own error is the one reported.
 */
function* versionRows(db: Database.Database): Generator<VersionRow> {
  // A database from before `--mark-lost` (backup and verify do not migrate) has no lost column.
  const hasLost = (db.prepare("SELECT 1 FROM pragma_table_info('document_versions') WHERE name = 'content_lost_at'").get() as unknown) !== undefined;
  const lost = hasLost ? 'content_lost_at' : 'NULL AS content_lost_at';
  yield* db.prepare(`SELECT document_id, version, content_key, file_size, sha256, thumbnail_key, ${lost} FROM document_versions ORDER BY document_id, version`).iterate() as IterableIterator<VersionRow>;
}

function objectPath(objectsDir: string, key: string): string {
  if (!/^[a-z0-9][a-z0-9._-]*(\/[a-z0-9][a-z0-9._-]*)*$/.test(key) || key.split('/').includes('..')) throw new Error(`invalid storage key ${JSON.stringify(key)}`);
  return path.join(objectsDir, ...key.split('/'));
}

/** Streams the object `key` through a SHA-256 into the file `to` (when given), returning the size and digest of what was read. */
async function hashCopy(storage: ContentStorage, key: string, to: string | undefined): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  // Each stream is opened only where it is read at once: one opened before an await could fail to
  // open (a missing file) with no listener yet, and the unhandled 'error' would end the process.
  if (to === undefined) {
    for await (const chunk of storage.read(key) as AsyncIterable<Buffer>) {
      hash.update(chunk);
      size += chunk.length;
    }
    return { size, sha256: hash.digest('hex') };
  }
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      size += chunk.length;
      callback(null, chunk);
    },
  });
  await fsp.mkdir(path.dirname(to), { recursive: true, mode: PRIVATE_DIR });
  await pipeline(storage.read(key), tap, fs.createWriteStream(to, { flags: 'wx', mode: PRIVATE_FILE }));
  return { size, sha256: hash.digest('hex') };
}

/** The object's size, or the read error that says why there is none (missing, or unreadable). */
async function sizeOf(storage: ContentStorage, key: string): Promise<number> {
  const size = await storage.size(key);
  if (size !== undefined) return size;
  for await (const _chunk of storage.read(key, { start: 0, end: 0 })) break;
  throw Object.assign(new Error('the file is missing'), { code: 'ENOENT' });
}

function errorText(error: unknown): string {
  return isMissing(error) ? 'the file is missing' : `the file cannot be read (${(error as Error).message.split('\n')[0]})`;
}

function isMissing(error: unknown): boolean {
  return isMissingObject(error);
}

/**
 * Checks every content version the database names against the objects in `storage`: present with
 * its recorded size, and with `hashes`, its recorded sha256 too.
 */
export async function verifyContent(databaseFile: string, storage: ContentStorage, options: { hashes: boolean }): Promise<VerifyReport> {
  const db = new Database(databaseFile, { readonly: true, fileMustExist: true });
  try {
    return await checkVersions(versionRows(db), auditEntries(db), storage, options);
  } finally {
    db.close();
  }
}

/** What verify reads of each stored version, whichever database holds it. */
export type VerifiedVersion = Omit<VersionRow, 'thumbnail_key'>;

/** The check of verifyContent over versions read from any database (PostgreSQL pages them: db/postgres/verify.ts). */
export async function checkVersions(rows: Iterable<VerifiedVersion> | AsyncIterable<VerifiedVersion>, auditCount: number, storage: ContentStorage, options: { hashes: boolean }): Promise<VerifyReport> {
  const report: VerifyReport = { versions: 0, bytes: 0, problems: [], markedLost: [], restorable: [], folderHasFiles: await storage.hasObjects(), auditEntries: auditCount };
  for await (const row of rows) {
    report.versions += 1;
    const where = { documentId: row.document_id, version: row.version, key: row.content_key };
    // Known lost: listed apart, so that a verify after --mark-lost says what is new.
    const lost = row.content_lost_at !== null;
    const found = lost ? report.markedLost : report.problems;
    try {
      // A file marked lost is hashed always: only the very bytes recorded may count as content again.
      const read = options.hashes || lost ? await hashCopy(storage, row.content_key, undefined) : { size: await sizeOf(storage, row.content_key), sha256: row.sha256 };
      if (read.size !== row.file_size) {
        found.push({ ...where, problem: `the file has ${read.size} of its ${row.file_size} bytes` });
        continue;
      }
      if (read.sha256 !== row.sha256) {
        found.push({ ...where, problem: 'the file does not match its sha256' });
        continue;
      }
      report.bytes += read.size;
      if (lost) report.restorable.push({ ...where, sha256: row.sha256, fileSize: row.file_size });
    } catch (error) {
      found.push({ ...where, problem: errorText(error), ...(isMissing(error) ? { missing: true } : { unreadable: true }) });
    }
  }
  return report;
}

/**
 * Writes a backup of a running server's data into `target` (a new or empty directory): the
 * database as of one moment, the content files it names, each checked against its sha256 as it is
 * copied, and BACKUP.json describing what was copied and what could not be.
 */
export async function backupDataDir(options: { databaseFile: string; dataDir: string; storage: ContentStorage; target: string; now?: () => Date }): Promise<BackupReport> {
  const target = path.resolve(options.target);
  if (fs.existsSync(target) && fs.readdirSync(target).length > 0) throw new BackupTargetError(`${target} is not empty; give each backup a new or empty folder`);
  makeDirectories(target, PRIVATE_DIR);
  const snapshot = path.join(target, BACKUP_DATABASE);
  const source = new Database(options.databaseFile, { readonly: true, fileMustExist: true });
  try {
    // All pages in one step: a step-wise copy restarts whenever the server writes in between.
    await source.backup(snapshot, { progress: () => 0x7fffffff });
  } finally {
    source.close();
  }
  fs.chmodSync(snapshot, PRIVATE_FILE);
  const createdAt = (options.now?.() ?? new Date()).toISOString();
  const report: BackupReport = { directory: target, createdAt, versions: 0, bytes: 0, problems: [], markedLost: [], restorable: [], folderHasFiles: true, auditEntries: 0 };
  const db = new Database(snapshot, { readonly: true, fileMustExist: true });
  try {
    report.auditEntries = auditEntries(db);
    const to = path.join(target, 'content', 'objects');
    for (const row of versionRows(db)) {
      report.versions += 1;
      const where = { documentId: row.document_id, version: row.version, key: row.content_key };
      const copy = objectPath(to, row.content_key);
      // A version marked lost is known to be gone: not a failure of this backup.
      const found = row.content_lost_at === null ? report.problems : report.markedLost;
      try {
        const copied = await hashCopy(options.storage, row.content_key, copy);
        if (copied.size !== row.file_size || copied.sha256 !== row.sha256) {
          await fsp.rm(copy, { force: true });
          found.push({ ...where, problem: copied.size !== row.file_size ? `the file has ${copied.size} of its ${row.file_size} bytes` : 'the file does not match its sha256' });
          continue;
        }
        report.bytes += copied.size;
        if (row.content_lost_at !== null) report.restorable.push({ ...where, sha256: row.sha256, fileSize: row.file_size });
      } catch (error) {
        await fsp.rm(copy, { force: true });
        found.push({ ...where, problem: errorText(error), ...(isMissing(error) ? { missing: true } : {}) });
      }
      // Thumbnails are rendered again from the content when missing: copied when there, never a problem.
      if (row.thumbnail_key) await hashCopy(options.storage, row.thumbnail_key, objectPath(to, row.thumbnail_key)).catch(() => undefined);
    }
  } finally {
    db.close();
  }
  for (const name of SIDE_FILES) {
    const file = path.join(options.dataDir, name);
    if (fs.existsSync(file)) await fsp.copyFile(file, path.join(target, name));
  }
  await fsp.writeFile(path.join(target, MANIFEST), `${JSON.stringify(report, null, 2)}\n`, { mode: PRIVATE_FILE });
  return report;
}

export { BackupTargetError };
