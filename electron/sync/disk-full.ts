/**
 * A full disk on the workstation (DESIGN §4): cheap scanner PCs have small disks, and a CBCT
 * export can fill one. The journal (SQLITE_FULL) and the settings (ENOSPC) then cannot be written.
 * That is never a file's failure: the engine holds its work, says so in plain words, and goes on by
 * itself once a journal write works again.
 */
const DISK_FULL_CODES = new Set([
  'SQLITE_FULL',
  // SQLite cannot size the shared-memory file of a write-ahead log on a full disk (at open).
  'SQLITE_IOERR_SHMSIZE',
  'ENOSPC',
  'EDQUOT',
]);

export function isDiskFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && DISK_FULL_CODES.has(code);
}
