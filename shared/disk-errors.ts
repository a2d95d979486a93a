/**
 * A full disk, as Node and SQLite report it. The server's data disk and a workstation's small disk
 * fill up alike; neither is the fault of what a client or a file sent, and freeing space fixes it
 * without a restart.
 */
const DISK_FULL_CODES = new Set([
  'ENOSPC',
  'EDQUOT',
  'SQLITE_FULL',
  // SQLite cannot size the shared-memory file of a write-ahead log on a full disk (at open).
  'SQLITE_IOERR_SHMSIZE',
]);

export function isDiskFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && DISK_FULL_CODES.has(code);
}
