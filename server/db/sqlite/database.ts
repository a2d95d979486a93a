import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { foldKey } from '../../../shared/names.js';
import { PRIVATE_DIR, PRIVATE_FILE, tighten } from '../../private-files.js';
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
  if (!inMemory) fs.mkdirSync(path.dirname(file), { recursive: true, mode: PRIVATE_DIR });
  const db = new Database(file);
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

export function migrate(db: SqliteDatabase, migrations: Migration[]): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL) WITHOUT ROWID');
  const applied = new Set(db.prepare('SELECT name FROM schema_migrations').pluck().all() as string[]);
  const record = db.prepare('INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)');
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
        record.run(migration.name, new Date().toISOString());
      }).immediate();
    } finally {
      if (migration.rebuildsReferencedTable) db.pragma('foreign_keys = ON');
    }
  }
}
