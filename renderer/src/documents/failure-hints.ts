import type { BridgeErrorCode } from '../../../shared/bridge-errors.js';

/** What staff can do about a failure themselves, where there is something (the rest is retried or is IT's). */
export function failureHint(code: BridgeErrorCode, files = 1): string | null {
  switch (code) {
    case 'INVALID_NAME':
      return files === 1 ? 'Rename the file in the scan folder; it is uploaded under its new name.' : 'Rename the files in the scan folder; they are uploaded under their new names.';
    case 'TOO_LARGE':
      return 'Ask IT to raise the server’s upload limit, then choose Retry.';
    case 'NO_CONSENT':
      return 'Once the patient’s consent is recorded, choose Retry.';
    default:
      return null;
  }
}
