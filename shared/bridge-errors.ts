/** Error codes that cross the bridge, and the plain language the UI shows for each. */

export const BRIDGE_ERROR_CODES = [
  'UNREACHABLE',
  'NOT_PATIENT_DOCS',
  'INSECURE_ADDRESS',
  'CERT_UNTRUSTED',
  'CERT_NAME_MISMATCH',
  'CERT_EXPIRED',
  'BAD_CA_FILE',
  'BAD_CREDENTIALS',
  'MISSING_SCOPE',
  'WRONG_ORGANIZATION',
  'NO_CONSENT',
  'NO_ACCESS',
  'NOT_FOUND',
  'INVALID_INPUT',
  'INVALID_NAME',
  'CONFLICT',
  'TOO_LARGE',
  'RATE_LIMITED',
  'SERVER_ERROR',
  'FOLDER_MISSING',
  'DISK_FULL',
  'FILE_CHANGED',
  'EMPTY_FILE',
  'DELETED_LOCALLY',
  'LOST_ON_SERVER',
  'VERIFY_FAILED',
  'NOT_CONFIGURED',
  'UNAVAILABLE',
  'INTERNAL',
] as const;

export type BridgeErrorCode = (typeof BRIDGE_ERROR_CODES)[number];

export const PLAIN_MESSAGES: Record<BridgeErrorCode, string> = {
  UNREACHABLE: 'The server cannot be reached. Check the network connection and the server address.',
  NOT_PATIENT_DOCS: 'Something answers at this address, but it is not a Patient Docs server. Check the server address (and the token address, if you gave one) with your IT contact.',
  INSECURE_ADDRESS: 'This address would send the client secret unencrypted over the network. Use the server’s https:// address (plain http only for a server on this computer).',
  CERT_UNTRUSTED:
    'This computer does not trust the server’s certificate (it is self-signed or issued by the clinic’s own certificate authority). Nothing was sent to it. Ask IT for the clinic’s CA certificate file and add it under “Server certificate” in the connection settings (or patient-docs-sync connect --ca-file FILE).',
  CERT_NAME_MISMATCH:
    'The server’s certificate was made for a different name than the address entered. Nothing was sent to it. Use the address the certificate names (ask IT which one), or ask IT for a certificate that includes this address.',
  CERT_EXPIRED:
    'The server’s certificate has expired or is not valid yet. Nothing was sent to it. Ask IT to renew the certificate; if it is current, check this computer’s date and time.',
  BAD_CA_FILE: 'That file cannot be used as the server’s CA certificate. Ask IT for the CA certificate (.crt, .pem or .cer).',
  BAD_CREDENTIALS: 'The server refused the client ID or secret. Check them with your IT contact.',
  MISSING_SCOPE: 'This computer’s client is not allowed to do that (a permission is missing). Ask IT to grant it.',
  WRONG_ORGANIZATION: 'This computer’s client does not belong to that organization.',
  NO_CONSENT: 'The patient has not given consent to this clinic. Files cannot be shared until consent is recorded.',
  NO_ACCESS: 'This clinic has no access to that patient.',
  NOT_FOUND: 'The patient or document does not exist on the server.',
  INVALID_INPUT: 'The server refused the request as invalid.',
  INVALID_NAME: 'The file or folder name cannot be used on the server.',
  CONFLICT: 'A file with that name already exists there.',
  TOO_LARGE: 'The file is larger than the server accepts.',
  RATE_LIMITED: 'The server asked us to slow down. It will be retried automatically.',
  SERVER_ERROR: 'The server had a problem. It will be retried automatically.',
  FOLDER_MISSING: 'The folder does not exist or cannot be read.',
  DISK_FULL: 'This computer’s disk is full, so Patient Docs cannot keep its record of what it uploads. Nothing is lost: files wait and sync by themselves once there is space. Free some space on this computer’s disk (delete old exports, empty the recycle bin).',
  FILE_CHANGED: 'The file changed while it was being uploaded. It will be uploaded again.',
  EMPTY_FILE: 'The file is empty (0 bytes), so there is nothing to upload. It is uploaded once it has content; the server keeps what it has.',
  DELETED_LOCALLY: 'The file was deleted from the folder before it was uploaded. Nothing was deleted on the server.',
  LOST_ON_SERVER:
    'The server lost its copy of this scan, and the scan is no longer in this folder either. Copy the scan back into the folder (from the scanner software’s export or a backup) and it is uploaded again by itself; if you cannot, tell IT which scan it is.',
  VERIFY_FAILED: 'The server does not show the complete file yet. It will be checked again.',
  NOT_CONFIGURED: 'Patient Docs is not set up yet.',
  UNAVAILABLE: 'That is not available here.',
  INTERNAL: 'Something went wrong inside Patient Docs.',
};

/**
 * Why a synced file failed when the engine's re-check (electron/sync/engine/recheck.ts) finds its document
 * gone from the server while the scan is still in the folder. Its code is NOT_FOUND.
 */
export const GONE_FROM_SERVER_MESSAGE =
  'This scan is no longer on the server: it was deleted there, or the server was restored from an older backup. It is still in this folder. ' +
  'If it was not deleted on purpose, retry this file to upload it again as a new document.';

export function isBridgeErrorCode(value: string): value is BridgeErrorCode {
  return (BRIDGE_ERROR_CODES as readonly string[]).includes(value);
}
