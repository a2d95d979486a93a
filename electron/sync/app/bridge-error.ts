/** Any failure turned into the coded error that crosses the bridge (STYLE.md "errors are data at the edges"). */
import { PLAIN_MESSAGES, type BridgeErrorCode } from '../../../shared/bridge-errors.js';
import { ApiNetworkError, ApiProblemError, TokenError } from '../api/api-errors.js';
import { isDiskFull } from '../home/disk-full.js';
import { forbiddenCode } from '../upload/failure.js';
import { CaCertificateError, certificateProblem } from '../api/tls-trust.js';

export class BridgeError extends Error {
  override name = 'BridgeError';

  constructor(
    readonly code: BridgeErrorCode,
    readonly detail?: string,
    message: string = PLAIN_MESSAGES[code],
  ) {
    super(message);
  }
}

export interface CodedError {
  code: BridgeErrorCode;
  message: string;
  detail?: string;
}

export function toCodedError(error: unknown): CodedError {
  if (error instanceof BridgeError) return withDetail({ code: error.code, message: error.message }, error.detail);
  if (error instanceof ApiProblemError) {
    const code = codeForStatus(error.status, error.problem.detail);
    return withDetail({ code, message: PLAIN_MESSAGES[code] }, error.problem.detail);
  }
  if (error instanceof TokenError) {
    const code: BridgeErrorCode = error.status === 429 ? 'RATE_LIMITED' : error.status >= 500 ? 'SERVER_ERROR' : 'BAD_CREDENTIALS';
    return withDetail({ code, message: PLAIN_MESSAGES[code] }, error.description ?? error.message);
  }
  if (error instanceof ApiNetworkError) {
    const code = certificateProblem(error.code) ?? 'UNREACHABLE';
    return withDetail({ code, message: PLAIN_MESSAGES[code] }, error.message);
  }
  if (error instanceof CaCertificateError) return withDetail({ code: 'BAD_CA_FILE', message: PLAIN_MESSAGES.BAD_CA_FILE }, error.message);
  // A journal or settings write refused by a full disk (saving a setting, adding a folder).
  if (isDiskFull(error)) return withDetail({ code: 'DISK_FULL', message: PLAIN_MESSAGES.DISK_FULL }, (error as Error).message);
  return { code: 'INTERNAL', message: PLAIN_MESSAGES.INTERNAL };
}

function codeForStatus(status: number, detail: string): BridgeErrorCode {
  switch (status) {
    case 400:
      return 'INVALID_INPUT';
    case 401:
      return 'BAD_CREDENTIALS';
    case 403:
      return forbiddenCode(detail);
    case 404:
      return 'NOT_FOUND';
    case 409:
      return 'CONFLICT';
    case 413:
      return 'TOO_LARGE';
    case 429:
      return 'RATE_LIMITED';
    default:
      return status >= 500 ? 'SERVER_ERROR' : 'INVALID_INPUT';
  }
}

function withDetail(error: CodedError, detail: string | undefined): CodedError {
  return detail ? { ...error, detail } : error;
}

/** The one line a shell (headless or desktop) shows when the app cannot start: a full disk in plain words, anything else as it is, for IT. */
export function startFailureMessage(error: unknown): string {
  return toCodedError(error).code === 'DISK_FULL'
    ? 'Patient Docs could not start: this computer’s disk is full. Free some space on it (delete old exports, empty the recycle bin), then start Patient Docs again; nothing is lost meanwhile.'
    : `Patient Docs could not start: ${error instanceof Error ? error.message : String(error)}`;
}
