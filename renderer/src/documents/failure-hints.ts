import type { FileView } from '../../../shared/bridge.js';
import { isNoLongerOnServer } from '../../../shared/failure-hints.js';

/** The hints live in shared/ so the sync CLI says the same as the app. */
export { canRetry, failureHint, failureMessage, isNoLongerOnServer } from '../../../shared/failure-hints.js';

/**
 * When a failed file was found missing on the server by the re-check, or null. Such a file was
 * synced once, and its old "synced" date would read as if it still were: the card and the sync
 * history show this date instead. (A row from before the date was kept: when it last changed.)
 */
export function foundMissingAt(file: Pick<FileView, 'state' | 'error' | 'lostAt' | 'updatedAt'>): number | null {
  if (file.state !== 'failed' || !file.error || !isNoLongerOnServer(file.error)) return null;
  return file.lostAt ?? file.updatedAt;
}
