/**
 * The engine's error policy (DESIGN §4) in one place: what a failure means for the file.
 * 429, 5xx, network errors, token trouble and a proxy's 413 are temporary (wait and retry); 400,
 * 403, 404 and the server's own 413 are permanent (the file fails with the server's detail until
 * someone acts); a change on disk sends the file back to the queue.
 */
import { PLAIN_MESSAGES, type BridgeErrorCode } from '../../../shared/bridge-errors.js';
import { isDiskFull } from '../home/disk-full.js';
import { certificateProblem } from '../api/tls-trust.js';
import { AbortedError, ApiNetworkError, ApiProblemError, FileChangedDuringUploadError, TokenError } from '../api/api-errors.js';

export type FailureVerdict =
  | {
      kind: 'retry';
      code: BridgeErrorCode;
      message: string;
      detail: string | null;
      retryAfterSeconds: number | null;
      offline: boolean;
      /**
       * The server could not be reached, directly (`offline`) or behind a proxy that says so (502,
       * 504, a 503 without Retry-After): the file may go as soon as any request gets through again.
       */
      unavailable: boolean;
    }
  | { kind: 'permanent'; code: BridgeErrorCode; message: string; detail: string | null }
  | { kind: 'changed'; detail: string }
  | { kind: 'stopped' }
  | { kind: 'missing' };

export class VerificationError extends Error {
  override name = 'VerificationError';
}

/**
 * The server holds another file's content under this file's name (another workstation's scan, or
 * a local file whose name differs only in case): it is never replaced by a new version.
 */
export class NameTakenError extends Error {
  override name = 'NameTakenError';
}

/** A 0-byte file: never a scan (a scanner that crashed or is about to write), never uploaded. */
export class EmptyFileError extends Error {
  override name = 'EmptyFileError';
}

export const LINK_REASON =
  'This is a link (shortcut) to another file or folder. Links are not followed, so nothing was uploaded for it: copy the file itself into the folder to sync it.';

/** The path is a symbolic link: never followed, so a link to a large tree or a loop is not uploaded by accident. */
export class LinkNotFollowedError extends Error {
  override name = 'LinkNotFollowedError';
}

export const NAME_TAKEN_MESSAGE =
  "Another file with this name already exists in the patient's folder on the server (names are compared without regard to upper and lower case). It was left as it is and this file was not uploaded; rename this file to upload it.";

/**
 * A proxy in front of the server (not the server) refused even the smallest piece as too large:
 * its configuration, which IT changes without anyone at this computer doing anything, so the file
 * waits and goes up by itself once the limit is raised.
 */
export const PROXY_TOO_LARGE_MESSAGE =
  'A proxy in front of the server refuses uploads this large, so the file waits. Nothing is lost: it is uploaded by itself once IT raises the proxy’s upload limit (nginx: client_max_body_size).';

/**
 * Codes of files waiting because nothing answered (no connection, or no TLS handshake with the
 * server): any request that then goes through shows the server is reachable again.
 */
export const UNREACHABLE_CODES: readonly BridgeErrorCode[] = ['UNREACHABLE', 'CERT_UNTRUSTED', 'CERT_EXPIRED', 'CERT_NAME_MISMATCH'];

export function classifyFailure(error: unknown): FailureVerdict {
  if (error instanceof AbortedError) return { kind: 'stopped' };
  if (error instanceof FileChangedDuringUploadError) return { kind: 'changed', detail: error.message };
  if (error instanceof ApiProblemError) return classifyProblem(error);
  if (error instanceof TokenError) return classifyToken(error);
  if (error instanceof ApiNetworkError) return retry(certificateProblem(error.code) ?? 'UNREACHABLE', error.message, null, true);
  if (error instanceof VerificationError) return retry('VERIFY_FAILED', error.message, null, false);
  if (error instanceof EmptyFileError) return { kind: 'permanent', code: 'EMPTY_FILE', message: PLAIN_MESSAGES.EMPTY_FILE, detail: null };
  if (error instanceof LinkNotFollowedError) return { kind: 'permanent', code: 'UNAVAILABLE', message: LINK_REASON, detail: null };
  // No detail: it is the app's own finding, not the server's words (the UI labels a CONFLICT's detail as the server's).
  if (error instanceof NameTakenError) return { kind: 'permanent', code: 'CONFLICT', message: NAME_TAKEN_MESSAGE, detail: null };
  // This computer's disk, not the file: retried (the engine also holds all work until a write works).
  if (isDiskFull(error)) return retry('DISK_FULL', (error as Error).message, null, false);
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'missing' };
  // Locked by the scanner software, or a share that went away for a moment.
  if (code === 'EBUSY' || code === 'EACCES' || code === 'EPERM' || code === 'EIO') {
    return retry('FOLDER_MISSING', `the file cannot be read right now (${code})`, null, false);
  }
  return retry('INTERNAL', error instanceof Error ? error.message : String(error), null, false);
}

function classifyProblem(error: ApiProblemError): FailureVerdict {
  const { status, problem } = error;
  if (status === 429) return retry('RATE_LIMITED', problem.detail, error.retryAfterSeconds, false);
  if (status >= 500 || status === 408) return { ...retry('SERVER_ERROR', problem.detail, error.retryAfterSeconds, false), unavailable: gatewayUnavailable(status, error.retryAfterSeconds) };
  // Still 401 after a fresh token: the credentials or the server's clock; worth retrying later.
  if (status === 401) return retry('BAD_CREDENTIALS', problem.detail, null, false);
  // Another upload to the same document is under way, or its content moved on: look again later.
  if (status === 409 || status === 412) return retry('CONFLICT', problem.detail, null, false);
  if (status === 413 && error.foreign) return { ...retry('TOO_LARGE', problem.detail, null, false), message: PROXY_TOO_LARGE_MESSAGE };
  const code = permanentCode(status, problem.detail);
  return { kind: 'permanent', code, message: PLAIN_MESSAGES[code], detail: problem.detail };
}

function permanentCode(status: number, detail: string): BridgeErrorCode {
  // A redirect: the address leads somewhere else (a proxy's http → https, or a path prefix left out).
  if (status >= 300 && status < 400) return 'NOT_PATIENT_DOCS';
  if (status === 413) return 'TOO_LARGE';
  if (status === 404) return 'NOT_FOUND';
  if (status === 403) return forbiddenCode(detail);
  if (status === 400 && /fileName|path/i.test(detail)) return 'INVALID_NAME';
  return 'INVALID_INPUT';
}

/** The server's 403 detail says which check refused (scope, organization, access, consent). */
export function forbiddenCode(detail: string): BridgeErrorCode {
  if (/consent/i.test(detail)) return 'NO_CONSENT';
  if (/scope|permission/i.test(detail)) return 'MISSING_SCOPE';
  if (/access to (the )?patient/i.test(detail)) return 'NO_ACCESS';
  if (/organi[sz]ation/i.test(detail)) return 'WRONG_ORGANIZATION';
  return 'NO_ACCESS';
}

function classifyToken(error: TokenError): FailureVerdict {
  if (error.status === 429) return retry('RATE_LIMITED', error.message, error.retryAfterSeconds, false);
  if (error.status >= 500) return { ...retry('SERVER_ERROR', error.message, error.retryAfterSeconds, false), unavailable: gatewayUnavailable(error.status, error.retryAfterSeconds) };
  if (error.oauthError === 'invalid_scope') return retry('MISSING_SCOPE', error.description ?? error.message, null, false);
  return retry('BAD_CREDENTIALS', error.description ?? error.message, null, false);
}

function retry(code: BridgeErrorCode, detail: string, retryAfterSeconds: number | null, offline: boolean): Extract<FailureVerdict, { kind: 'retry' }> {
  return { kind: 'retry', code, message: PLAIN_MESSAGES[code], detail, retryAfterSeconds, offline, unavailable: offline };
}

/**
 * A proxy's (or load balancer's) way of saying the server behind it does not answer: 502 and 504,
 * or 503 without a Retry-After (the server's own 503s always ask for a time, which is kept).
 */
function gatewayUnavailable(status: number, retryAfterSeconds: number | null): boolean {
  return retryAfterSeconds === null && (status === 502 || status === 503 || status === 504);
}
