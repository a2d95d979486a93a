/** Modes for what the server writes under its data directory. */
import fs from 'node:fs';

/**
 * Patient files are readable by the server's user only: directories 0700, files 0600, whatever the
 * umask (on Windows the folder's ACL decides). Folders from before are tightened at start.
 */
export const PRIVATE_DIR = 0o700;
export const PRIVATE_FILE = 0o600;

export function privateDirectory(directory: string): void {
  fs.mkdirSync(directory, { recursive: true, mode: PRIVATE_DIR });
  tighten(directory, PRIVATE_DIR);
}

/** Best effort: a share that does not let its files' modes change (CIFS, another owner) still works. */
export function tighten(target: string, mode: number): void {
  try {
    fs.chmodSync(target, mode);
  } catch {
    // The folder's own permissions or ACL apply.
  }
}
