/**
 * The admin CLI works on the database the running server writes to. Before it starts, it waits
 * (saying so) until it can take the write lock, rather than blocking silently inside SQLite's busy
 * handler and then failing with "database is locked".
 */
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { isDatabaseBusy } from '../../errors.js';
import { DatabaseBusyError } from './refusals.js';

export { DatabaseBusyError };

/**
 * Resolves once a write transaction on `file` can begin (at once when nothing holds it); calls
 * `onWait` once when it has to wait; throws DatabaseBusyError after `waitMs`. A missing file is
 * nobody's to hold.
 */
export async function waitForWriteLock(file: string, waitMs: number, onWait: () => void): Promise<void> {
  if (!fs.existsSync(file)) return;
  const db = new Database(file, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 0');
    const deadline = Date.now() + waitMs;
    let told = false;
    for (;;) {
      try {
        db.exec('BEGIN IMMEDIATE');
        db.exec('ROLLBACK');
        return;
      } catch (error) {
        if (!isDatabaseBusy(error)) return; // anything else is for the real open to report, in its words
      }
      if (Date.now() >= deadline) {
        throw new DatabaseBusyError(
          `the database ${file} stayed busy for ${Math.round(waitMs / 1000)} s (another process holds its write lock: a long-running admin command, a backup, or a stuck process); nothing was changed — try again, or wait longer with --wait SECONDS`,
        );
      }
      if (!told) {
        told = true;
        onWait();
      }
      await sleep(100);
    }
  } finally {
    db.close();
  }
}
