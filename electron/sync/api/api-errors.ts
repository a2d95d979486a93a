/**
 * Errors of the API client as data: a refusal the server explained (problem details), a token
 * endpoint refusal, or a network failure. The pipeline decides from these alone whether to retry.
 */
import { isProblemDetails, type ProblemDetails } from '../../../shared/problem.js';

export class ApiProblemError extends Error {
  override name = 'ApiProblemError';

  constructor(
    readonly status: number,
    readonly problem: ProblemDetails,
    /** Seconds the server asked us to wait (Retry-After), when it said. */
    readonly retryAfterSeconds: number | null = null,
    /** The answer was not the server's own problem details (a proxy's error page, a redirect). */
    readonly foreign = false,
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

/**
 * Builds the typed error for a non-2xx answer; a body that is not problem details still gets one.
 * Such an answer is most often a reverse proxy's (nginx, Caddy, IIS) HTML error page: its detail
 * names the status and the page's title instead of carrying the HTML, and `foreign` is set.
 */
export function problemFromResponse(status: number, body: unknown, url: string, retryAfter: string | string[] | undefined, location?: string | string[]): ApiProblemError {
  if (isProblemDetails(body)) return new ApiProblemError(status, body, parseRetryAfter(retryAfter));
  const problem: ProblemDetails = {
    type: 'about:blank',
    title: `HTTP ${status}`,
    status,
    detail: foreignDetail(status, body, Array.isArray(location) ? location[0] : location),
    instance: safePath(url),
    messageKey: status >= 500 ? 'INTERNAL_ERROR' : 'UNKNOWN',
    occurredAt: new Date().toISOString(),
  };
  return new ApiProblemError(status, problem, parseRetryAfter(retryAfter), true);
}

const FOREIGN_REASONS: Record<number, string> = {
  413: 'a proxy in front of the server refused the request as too large. Ask IT to raise its upload limit (nginx: client_max_body_size; IIS: maxAllowedContentLength) to the size of the largest scan',
  502: 'a proxy in front of the server could not reach the Patient Docs server (it may be restarting or stopped); this is retried automatically',
  503: 'the server or a proxy in front of it is not available right now; this is retried automatically',
  504: 'a proxy in front of the server waited too long for the Patient Docs server; this is retried automatically',
};

function foreignDetail(status: number, body: unknown, location: string | undefined): string {
  const text = typeof body === 'string' ? body : '';
  const html = /<html|<!doctype|<body|<head/i.test(text);
  const title = html ? /<title[^>]*>([^<]{1,200})<\/title>/i.exec(text)?.[1]?.trim() : undefined;
  const reasonPhrase = title?.replace(new RegExp(`^${status}\\s*`), '');
  const what = reasonPhrase ? `${status} (${reasonPhrase})` : `${status}`;
  if (status >= 300 && status < 400) {
    return `the server address answered with a redirect (${what})${location ? ` to ${location}` : ''}: the server address is probably not the one to use${location ? ` — try the address it redirects to` : ''}; ask IT for the exact address`;
  }
  const reason = FOREIGN_REASONS[status];
  if (reason) return `the server answered ${what}: ${reason}`;
  if (html) return `the server answered ${what} with a web page instead of a Patient Docs answer: a proxy in front of the server, or the wrong address`;
  return text.length > 0 ? `the server answered ${status}: ${text.slice(0, 300)}` : `the server answered ${status}`;
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
