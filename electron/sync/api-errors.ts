/**
 * Errors of the API client as data: a refusal the server explained (problem details), a token
 * endpoint refusal, or a network failure. The pipeline decides from these alone whether to retry.
 */
import { isProblemDetails, type ProblemDetails } from '../../shared/problem.js';

export class ApiProblemError extends Error {
  override name = 'ApiProblemError';

  constructor(
    readonly status: number,
    readonly problem: ProblemDetails,
    /** Seconds the server asked us to wait (Retry-After), when it said. */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(`${status} ${problem.messageKey}: ${problem.detail}`);
  }
}

/** The token endpoint refused (RFC 6749 §5.2 body) or was rate limited. */
export class TokenError extends Error {
  override name = 'TokenError';

  constructor(
    readonly status: number,
    readonly oauthError: string,
    readonly description: string | null,
    readonly retryAfterSeconds: number | null = null,
    /** Where a 3xx answer pointed (a proxy redirecting http to https, or to a path prefix). */
    readonly location: string | null = null,
  ) {
    super(`token endpoint answered ${status} ${oauthError}${description ? `: ${description}` : ''}`);
  }
}

/** No answer: refused, reset, timed out, DNS. Always worth retrying later. */
export class ApiNetworkError extends Error {
  override name = 'ApiNetworkError';

  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The file on disk is not the one the upload announced any more (a scanner still writing it). */
export class FileChangedDuringUploadError extends Error {
  override name = 'FileChangedDuringUploadError';
}

/** The request was stopped on purpose (pause, shutdown). Not a failure of the file. */
export class AbortedError extends Error {
  override name = 'AbortedError';
}

export function parseRetryAfter(header: string | string[] | undefined, now = Date.now()): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, (date - now) / 1000);
}

/** Builds the typed error for a non-2xx answer; a body that is not problem details still gets one. */
export function problemFromResponse(status: number, body: unknown, url: string, retryAfter: string | string[] | undefined): ApiProblemError {
  const problem: ProblemDetails = isProblemDetails(body)
    ? body
    : {
        type: 'about:blank',
        title: `HTTP ${status}`,
        status,
        detail: typeof body === 'string' && body.length > 0 ? body.slice(0, 500) : `the server answered ${status}`,
        instance: safePath(url),
        messageKey: status >= 500 ? 'INTERNAL_ERROR' : 'UNKNOWN',
        occurredAt: new Date().toISOString(),
      };
  return new ApiProblemError(status, problem, parseRetryAfter(retryAfter));
}

function safePath(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

const NETWORK_CODES = new Set(['ETIMEDOUT', 'ECONNRESET', 'EADDRINUSE', 'ECONNREFUSED', 'EPIPE', 'ENOTFOUND', 'ENETUNREACH', 'EAI_AGAIN', 'EHOSTUNREACH', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE', 'UND_ERR_SOCKET']);

/** Codes of failures on this computer's side (reading the file, bad arguments): never the network's. */
const LOCAL_CODES = new Set(['ENOENT', 'ENOTDIR', 'EISDIR', 'EACCES', 'EPERM', 'EBUSY', 'EIO', 'EMFILE', 'ENFILE', 'ERR_OUT_OF_RANGE', 'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_VALUE']);

/**
 * got wraps whatever broke a request, the request body included: a file that vanished or changed
 * while it was read, or a bug of ours, arrives as a RequestError too. That cause is handed back as
 * it is, so the file's failure is classed by what happened (and the engine does not go offline).
 */
function localCause(error: unknown): Error | undefined {
  let cause = (error as { cause?: unknown } | undefined)?.cause;
  for (let depth = 0; cause instanceof Error && depth < 5; depth += 1) {
    if (cause.name === 'AbortError') return undefined;
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === undefined || (typeof code === 'string' && LOCAL_CODES.has(code))) return cause;
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
}

/** got's RequestError and node's socket errors → ApiNetworkError; anything else is rethrown as is. */
export function toNetworkError(error: unknown): Error {
  if (error instanceof ApiProblemError || error instanceof TokenError || error instanceof ApiNetworkError || error instanceof AbortedError) return error;
  const candidate = error as { code?: string; name?: string; message?: string } | undefined;
  if (candidate?.name === 'AbortError' || candidate?.code === 'ERR_ABORTED' || candidate?.code === 'ABORT_ERR') return new AbortedError('the request was stopped');
  const local = localCause(error);
  if (local) return local;
  const code = candidate?.code ?? 'ENETWORK';
  if (NETWORK_CODES.has(code) || candidate?.name === 'TimeoutError' || candidate?.name === 'RequestError' || candidate?.name === 'ReadError' || candidate?.name === 'UploadError') {
    return new ApiNetworkError(code, candidate?.message ?? 'network error');
  }
  return error instanceof Error ? error : new Error(String(error));
}
