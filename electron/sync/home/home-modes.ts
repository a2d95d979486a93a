/**
 * Everything in the sync home is its user's alone (the client secret's encrypted file and its key,
 * the journal of every scan, the bundled server): files 0600, folders 0700, whatever the umask. On
 * Windows the per-user app-data folder's ACL does this, and modes are left alone.
 */
import { chmodSync, closeSync, lstatSync, openSync, readdirSync } from 'node:fs';
import path from 'node:path';

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_FOLDER_MODE = 0o700;

/**
 * Creates `file` empty and private unless it exists (a SQLite database is then opened on it: SQLite
 * gives its -wal and -shm files the database file's mode).
 */
export function createPrivateFile(file: string): void {
  closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
}

/**
 * Tightens the home and what is in it (a home an earlier version made 0755/0644). `ownedElsewhere`:
 * folders made private by their own owner (the bundled server's data folder), tightened themselves,
 * not walked. Best effort: an entry whose mode cannot change (another owner, a share) is left.
 */
export function tightenHome(home: string, ownedElsewhere: readonly string[] = [], platform = process.platform): void {
  if (platform === 'win32') return;
  const skip = new Set(ownedElsewhere.map((folder) => path.resolve(folder)));
  const visit = (target: string) => {
    let stats;
    try {
      stats = lstatSync(target);
    } catch {
      return;
    }
    // A link is not followed: what it leads to is not the home's.
    if (stats.isSymbolicLink()) return;
    const wanted = stats.isDirectory() ? PRIVATE_FOLDER_MODE : PRIVATE_FILE_MODE;
    if ((stats.mode & 0o777 & ~wanted) !== 0) {
      try {
        chmodSync(target, (stats.mode & 0o777) & wanted);
      } catch {
        // left as it is
      }
    }
    if (!stats.isDirectory() || (target !== home && skip.has(path.resolve(target)))) return;
    let names: string[];
    try {
      names = readdirSync(target);
    } catch {
      return;
    }
    for (const name of names) visit(path.join(target, name));
  };
  visit(home);
}
