/** Modes for what the server writes under its data directory, and how it makes its folders. */
import fs from 'node:fs';
import path from 'node:path';

/**
 * Patient files are readable by the server's user only: directories 0700, files 0600, whatever the
 * umask (on Windows the folder's ACL decides). Folders from before are tightened at start.
 */
export const PRIVATE_DIR = 0o700;
export const PRIVATE_FILE = 0o600;

export function privateDirectory(directory: string): void {
  makeDirectories(directory, PRIVATE_DIR);
  tighten(directory, PRIVATE_DIR);
}

/**
 * Creates `directory` and its missing parents, one mkdir each (with `mode`, if given). Not
 * mkdirSync's `recursive`: in Node 20 it never returns for a path whose existing parent cannot
 * hold folders (anything under /proc), and IT would see a server or CLI that hangs instead of an
 * error naming the path. Throws the first mkdir's error (ENOENT, ENOTDIR, EACCES…).
 */
export function makeDirectories(directory: string, mode?: number): void {
  const missing: string[] = [];
  for (let current = path.resolve(directory); !fs.existsSync(current); current = path.dirname(current)) {
    missing.unshift(current);
    if (path.dirname(current) === current) break;
  }
  for (const folder of missing) {
    try {
      fs.mkdirSync(folder, { mode });
    } catch (error) {
      // Made meanwhile by another process (two starts at once): as good as made here.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !fs.statSync(folder).isDirectory()) throw error;
    }
  }
}

/** Best effort: a share that does not let its files' modes change (CIFS, another owner) still works. */
export function tighten(target: string, mode: number): void {
  try {
    fs.chmodSync(target, mode);
  } catch {
    // The folder's own permissions or ACL apply.
  }
}
