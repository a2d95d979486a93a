/**
 * Opening the journal file: SQLite's settings for it, the check for damage, the migrations, and a
 * fresh journal in place of one that cannot be read (the damaged file kept beside it).
 */
import { existsSync, renameSync } from 'node:fs';
import Database from 'better-sqlite3';
import { createPrivateFile } from '../home/home-modes.js';
import { Journal } from './journal.js';
import { applyMigrations } from './migrations.js';

export interface JournalOptions {
  now?: () => number;
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
