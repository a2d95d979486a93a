/**
 * The journal's schema: its named migrations, applied in order at open, and the refusal of a
 * journal a newer version of the app has migrated.
 */
import type Database from 'better-sqlite3';
import { FILE_STATES } from './states.js';

export const MIGRATIONS: ReadonlyArray<{ name: string; sql: string }> = [
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
  {
    // The scanner inbox's cases and every assignment of one to a patient (inbox/case-store.ts).
    name: '009-inbox-cases',
    sql: `
    CREATE TABLE inbox_cases (
      inbox_id TEXT NOT NULL,
      name TEXT NOT NULL,
      first_seen_at INTEGER NOT NULL,
      changed_at INTEGER NOT NULL,
      file_count INTEGER NOT NULL DEFAULT 0,
      bytes INTEGER NOT NULL DEFAULT 0,
      scanner TEXT NULL,
      evidence TEXT NOT NULL DEFAULT '[]',
      decision TEXT NULL,
      pair_id TEXT NULL,
      patient_id TEXT NULL,
      patient_name TEXT NULL,
      assigned_at INTEGER NULL,
      assigned_by TEXT NULL,
      assigned_how TEXT NULL CHECK (assigned_how IN ('automatic', 'confirmed')),
      gone INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (inbox_id, name)
    );
    CREATE TABLE inbox_assignments (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      inbox_id TEXT NOT NULL,
      case_name TEXT NOT NULL,
      pair_id TEXT NOT NULL,
      patient_id TEXT NOT NULL,
      patient_name TEXT NULL,
      at INTEGER NOT NULL,
      by TEXT NOT NULL,
      how TEXT NOT NULL CHECK (how IN ('automatic', 'confirmed')),
      evidence TEXT NOT NULL,
      previous_patient_id TEXT NULL
    );
    CREATE INDEX inbox_assignments_at ON inbox_assignments (at);`,
  },
];

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

export function applyMigrations(database: Database.Database, file: string): void {
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
