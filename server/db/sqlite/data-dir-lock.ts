/**
 * One server per data directory. Two servers on the same PATIENT_DOCS_DATA_DIR would both dispatch
 * the same webhook events (receivers get every send twice) and both run the janitors and thumbnail
 * workers over the same files, so the second one refuses to start.
 *
 * The lock is an operating-system lock, so it dies with the process (a crash and SIGKILL included)
 * and there is never a stale lock to clean up by hand: the empty SQLite file `server.lock` in the
 * data directory, held in an exclusive write transaction for the server's lifetime. SQLite takes
 * it with fcntl locks on Unix and LockFileEx on Windows, both released by the OS when the process
 * ends, and it also refuses a second holder within the same process. The file stays in place and
 * empty (nothing is written in the transaction); deleting it while a server runs would let a
 * second one start.
 *
 * A locked file cannot be read, so the holder's pid goes to the plain side file `server.pid`, read
 * only to name the other process in the error. Nothing in the server may open `server.lock` with
 * plain fs calls: closing any descriptor of that file drops the process's fcntl locks on it.
 *
 * Only the server takes the lock; the admin CLI works on the same database while the server runs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ConfigError } from '../../config.js';
import { PRIVATE_FILE, tighten } from '../../private-files.js';

export const LOCK_FILE = 'server.lock';
export const PID_FILE = 'server.pid';

export interface DataDirLock {
  /** Releases the lock (idempotent); the OS does the same when the process dies. */
  release(): void;
}

/** Takes the data directory's lock or throws a one-line ConfigError naming the directory and, if known, the other process. */
export function lockDataDir(dataDir: string): DataDirLock {
  const lockFile = path.join(dataDir, LOCK_FILE);
  const pidFile = path.join(dataDir, PID_FILE);
  let db: Database.Database;
  try {
    db = new Database(lockFile);
    // chmod, which opens no descriptor of the file (see above): private like the rest of the data directory.
    tighten(lockFile, PRIVATE_FILE);
  } catch (error) {
    throw new ConfigError(`PATIENT_DOCS_DATA_DIR=${dataDir}: cannot open ${LOCK_FILE}: ${(error as Error).message}`);
  }
  try {
    db.pragma('busy_timeout = 0');
    // Nothing is ever written, so no journal file: a kill -9 leaves only the empty lock file behind.
    db.pragma('journal_mode = MEMORY');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') {
      const holder = describeHolder(pidFile);
      throw new ConfigError(`PATIENT_DOCS_DATA_DIR=${dataDir} is in use by another Patient Docs server${holder}; stop it first, or give this server its own data directory`);
    }
    throw new ConfigError(`PATIENT_DOCS_DATA_DIR=${dataDir}: cannot lock ${LOCK_FILE}: ${(error as Error).message}`);
  }
  const stamp = `${process.pid} ${os.hostname()}\n`;
  try {
    fs.writeFileSync(pidFile, stamp, { mode: PRIVATE_FILE });
    tighten(pidFile, PRIVATE_FILE);
  } catch {
    // The pid only makes the other server's error message more helpful; the lock is what counts.
  }
  let held = true;
  return {
    release: () => {
      if (!held) return;
      held = false;
      try {
        if (fs.readFileSync(pidFile, 'utf8') === stamp) fs.rmSync(pidFile, { force: true });
      } catch {
        // already gone
      }
      try {
        db.exec('ROLLBACK');
      } finally {
        db.close();
      }
    },
  };
}

/** " (pid 1234)", " (pid 1234 on other-host)", or "" when the side file is missing or unreadable. */
function describeHolder(pidFile: string): string {
  let text: string;
  try {
    text = fs.readFileSync(pidFile, 'utf8');
  } catch {
    return '';
  }
  const match = /^(\d+) (\S+)\n?$/.exec(text);
  if (!match) return '';
  return match[2] === os.hostname() ? ` (pid ${match[1]})` : ` (pid ${match[1]} on ${match[2]})`;
}
