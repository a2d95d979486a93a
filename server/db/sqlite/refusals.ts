/**
 * The refusals of the database tools the admin CLI runs (write-wait.ts, backup.ts), apart from
 * them so the CLI can tell them apart without loading those tools for commands that do not use them.
 */

/** The write lock stayed taken for as long as the command was told to wait: nothing was changed. */
export class DatabaseBusyError extends Error {
  override name = 'DatabaseBusyError';
}

/** A backup's target folder cannot be used (not new and empty, not writable). */
export class BackupTargetError extends Error {
  override name = 'BackupTargetError';
}
