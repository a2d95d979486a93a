/**
 * One running sync per sync home. Two (the desktop app and `patient-docs-sync run`, or two runs)
 * would work the same journal rows at once: double the uploads' work, "database is locked" noise,
 * and two webhook listeners fighting for one port. The second one refuses to start.
 *
 * The same operating-system lock as the server's data directory (server/db/sqlite/data-dir-lock.ts,
 * which this layer may not import): the empty SQLite file `sync.lock` held in an exclusive
 * transaction while the sync runs, released by the OS when the process ends (kill -9 included),
 * so there is never a stale lock to remove by hand. The holder's pid goes to `sync.pid` for the
 * message only. Commands that only read or change settings (status, add-pair, config, retry) take
 * no lock.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { BridgeError } from '../app/bridge-error.js';
import { createPrivateFile } from './home-modes.js';

export interface HomeLock {
  release(): void;
}

export function lockSyncHome(home: string): HomeLock {
  const pidFile = path.join(home, 'sync.pid');
  const lockFile = path.join(home, 'sync.lock');
  createPrivateFile(lockFile);
  const db = new Database(lockFile);
  try {
    db.pragma('busy_timeout = 0');
    db.pragma('journal_mode = MEMORY');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
    let holder = '';
    try {
      holder = ` (process ${fs.readFileSync(pidFile, 'utf8').trim()})`;
    } catch {
      // the pid only makes the message more helpful
    }
    throw new BridgeError('UNAVAILABLE', undefined, `Patient Docs is already syncing from this computer${holder}, with the settings in ${home}. Close the other window or stop the other \`patient-docs-sync run\` first.`);
  }
  const stamp = `${process.pid}\n`;
  fs.writeFileSync(pidFile, stamp, { mode: 0o600 });
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
      db.close();
    },
  };
}
