import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { foldKey } from '../../../shared/names.js';
import { makeDirectories, PRIVATE_DIR, PRIVATE_FILE, tighten } from '../../private-files.js';
import type { Migration } from './migrations.js';

export type SqliteDatabase = Database.Database;

/*
 * Queries write `LIMIT +?`, never a bare parameter after LIMIT: SQLite plans with the value bound
 * to a bare LIMIT parameter, so binding one marks the statement expired and every run re-prepares
 * it (40 µs of a search page's 140 µs in the database). The unary plus keeps the limit a run-time
 * value. sql-style.test.ts holds every query of this folder to it.
 */

/** Opens (creating if needed) the embedded database with WAL and applies pending migrations. */
export function openSqlite(file: string, migrations: Migration[]): SqliteDatabase {
  const inMemory = file === ':memory:' || file === '';
  if (!inMemory) makeDirectories(path.dirname(file), PRIVATE_DIR);
  const db = new Database(file);
  // A file written by a newer server is refused before anything here writes to it (a downgrade
  // after a failed update must leave it exactly as the newer version left it).
  try {
    refuseNewerSchema(db, file, migrations);
  } catch (error) {
    db.close();
    throw error;
  }
  // The database holds the signing keys and the link and webhook secrets: the server's user only.
  // SQLite gives the -wal and -shm files the main file's mode; ones left from before are tightened.
  if (!inMemory) for (const part of [file, `${file}-wal`, `${file}-shm`]) if (fs.existsSync(part)) tighten(part, PRIVATE_FILE);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  db.pragma('cache_size = -32000');
  // Checkpoint the WAL every ~40 MB rather than every ~4 MB: hot pages (queue heads, counters,
  // index leaves being appended to) are rewritten many times between checkpoints but copied back
  // into the database once, and the fsync of a checkpoint comes ten times less often.
  db.pragma('wal_autocheckpoint = 10000');
  // Migrations that recompute folded keys call it (006-case-folded-keys).
  db.function('fold_key', { deterministic: true }, (value: unknown) => (typeof value === 'string' ? foldKey(value) : value));
  migrate(db, migrations);
  // Planner statistics, as SQLite recommends for long-lived connections: analyzed (with a bounded
  // sample) where missing or stale now, again every few hours and at close (see SqliteStore).
  db.pragma('optimize = 0x10002');
  return db;
}

/**
 * A database a newer server has migrated (IT went back to an older version after a failed update)
 * holds migrations this build does not know: its code would read and write tables it does not
 * understand. Thrown before any write; `code` lets the server and the admin CLI say it in one line.
 */
export class NewerDatabaseError extends Error {
  readonly code = 'PATIENT_DOCS_NEWER_DATABASE';
  constructor(
    readonly file: string,
    readonly unknownMigrations: string[],
    readonly writtenBy: string | undefined,
  ) {
    const by = writtenBy && writtenBy !== SERVER_VERSION ? `a newer Patient Docs server (${writtenBy}; this one is ${SERVER_VERSION})` : `a newer Patient Docs server than this one (${SERVER_VERSION})`;
    super(
      `the database ${file} was written by ${by}: it holds database change(s) ${unknownMigrations.join(', ')} that this version does not know. ` +
        'It was not opened or changed. Start the newer version again, or restore the backup taken before the update to use this version',
    );
  }
}

/** This build's version (package.json), recorded with each migration it applies. */
export const SERVER_VERSION = readPackageVersion();

function readPackageVersion(): string {
  // dist/server/db/sqlite/database.js when built, server/db/sqlite/database.ts under the test runner.
  for (const relative of ['../../../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(fs.readFileSync(new URL(relative, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'patient-docs' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not this one
    }
  }
  return 'unknown';
}

function refuseNewerSchema(db: SqliteDatabase, file: string, migrations: Migration[]): void {
  const table = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (!table) return;
  const known = new Set(migrations.map((migration) => migration.name));
  const unknown = (db.prepare('SELECT name FROM schema_migrations ORDER BY name').pluck().all() as string[]).filter((name) => !known.has(name));
  if (unknown.length === 0) return;
  const columns = (db.pragma('table_info(schema_migrations)') as Array<{ name: string }>).map((column) => column.name);
  const writtenBy = columns.includes('app_version')
    ? (db
        .prepare(`SELECT app_version FROM schema_migrations WHERE app_version IS NOT NULL AND name IN (${unknown.map(() => '?').join(', ')}) ORDER BY applied_at DESC, name DESC LIMIT 1`)
        .pluck()
        .get(...unknown) as string | undefined)
    : undefined;
  throw new NewerDatabaseError(file, unknown, writtenBy);
}

export function migrate(db: SqliteDatabase, migrations: Migration[]): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL, app_version TEXT) WITHOUT ROWID');
  // Tables made before app_version was recorded gain it (older servers insert without it: NULL).
  const columns = (db.pragma('table_info(schema_migrations)') as Array<{ name: string }>).map((column) => column.name);
  if (!columns.includes('app_version')) db.exec('ALTER TABLE schema_migrations ADD COLUMN app_version TEXT');
  const applied = new Set(db.prepare('SELECT name FROM schema_migrations').pluck().all() as string[]);
  const record = db.prepare('INSERT INTO schema_migrations (name, applied_at, app_version) VALUES (?, ?, ?)');
  const pending = migrations.filter((migration) => !applied.has(migration.name));
  // An update (not a first start): a large database takes a while (about 12 s for 200,000
  // documents), and IT must not take the silence for a hang and kill it.
  if (applied.size > 0 && pending.length > 0 && db.name !== ':memory:') {
    process.stderr.write(`patient-docs: updating the database ${db.name} to this version (${pending.length} change(s)); this can take a minute for a large clinic, and stopping now loses nothing\n`);
  }
  for (const migration of migrations) {
    if (applied.has(migration.name)) continue;
    // PRAGMA foreign_keys is a no-op inside a transaction, so it is switched outside it.
    if (migration.rebuildsReferencedTable) db.pragma('foreign_keys = OFF');
    try {
      db.transaction(() => {
        db.exec(migration.sql);
        if (migration.rebuildsReferencedTable) {
          const broken = db.pragma('foreign_key_check') as unknown[];
          if (broken.length > 0) throw new Error(`migration ${migration.name} would break ${broken.length} foreign key reference(s)`);
        }
        record.run(migration.name, new Date().toISOString(), SERVER_VERSION);
      }).immediate();
    } finally {
      if (migration.rebuildsReferencedTable) db.pragma('foreign_keys = ON');
    }
  }
}
