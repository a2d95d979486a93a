import { GONE_FROM_SERVER_MESSAGE, PLAIN_MESSAGES, type BridgeErrorCode } from './bridge-errors.js';

/**
 * How the user asks for a failed file to be tried again where the hint is read: the app's Retry
 * button, or the sync CLI's `retry` command.
 */
export type RetryWording = 'app' | 'cli';

const RETRY: Record<RetryWording, string> = {
  app: 'choose Retry',
  cli: 'run `patient-docs-sync retry`',
};

/**
 * What staff can do about a failure themselves, where there is something (the rest is retried or
 * is IT's). One source for the app and the CLI, so both say the same.
 */
export function failureHint(code: BridgeErrorCode, files = 1, wording: RetryWording = 'app'): string | null {
  const retry = RETRY[wording];
  switch (code) {
    case 'INVALID_NAME':
      return files === 1 ? 'Rename the file in the scan folder; it is uploaded under its new name.' : 'Rename the files in the scan folder; they are uploaded under their new names.';
    case 'TOO_LARGE':
      return `Ask IT to raise the server’s upload limit, then ${retry}.`;
    case 'NO_CONSENT':
      return `Once the patient’s consent is recorded, ${retry}.`;
    default:
      return null;
  }
}

/**
 * A file that was synced and is not on the server any more, as the re-check of synced files finds
 * it (electron/sync/engine/recheck.ts): the server lost its copy and the folder has none either
 * (LOST_ON_SERVER), or its document is gone from the server (NOT_FOUND, told in
 * GONE_FROM_SERVER_MESSAGE). Not an upload that failed: such a file was uploaded and verified once.
 */
export function isNoLongerOnServer(error: { code: BridgeErrorCode; message: string }): boolean {
  return error.code === 'LOST_ON_SERVER' || (error.code === 'NOT_FOUND' && error.message === GONE_FROM_SERVER_MESSAGE);
}

/**
 * Whether "Retry" can do anything for a file failed with this code: a scan that is in neither the
 * server nor the folder (LOST_ON_SERVER) has nothing to upload until a copy is put back, and that
 * copy is uploaded by itself.
 */
export function canRetry(code: BridgeErrorCode): boolean {
  return code !== 'LOST_ON_SERVER';
}

/**
 * A failure's message for `files` files at once (a folder's failures grouped by reason): the
 * re-check's reasons are written about one scan ("this scan", "retry this file") and read wrong
 * for several. Other messages are the same for one file or many.
 */
export function failureMessage(error: { code: BridgeErrorCode; message: string }, files = 1, wording: RetryWording = 'app'): string {
  if (files === 1) return error.message;
  if (error.code === 'LOST_ON_SERVER' && error.message === PLAIN_MESSAGES.LOST_ON_SERVER) {
    return 'The server lost its copies of these scans, and they are no longer in this folder either. Copy them back into the folder (from the scanner software’s export or a backup) and they are uploaded again by themselves; if you cannot, tell IT which scans they are.';
  }
  if (error.code === 'NOT_FOUND' && error.message === GONE_FROM_SERVER_MESSAGE) {
    return (
      'These scans are no longer on the server: they were deleted there, or the server was restored from an older backup. They are still in this folder. ' +
      `If they were not deleted on purpose, ${wording === 'app' ? 'choose Retry all' : RETRY.cli} to upload them again as new documents.`
    );
  }
  return error.message;
}
