import type { BridgeErrorCode } from './bridge-errors.js';

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
