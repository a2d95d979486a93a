import { isDiskFull } from '../shared/disk-errors.js';

/** The data disk or its quota is full: nothing the client sent is wrong, and freeing space fixes it without a restart. */
export { isDiskFull };

/** The one error type routes throw; the problem plugin turns it into problem details. */
export class ApiError extends Error {
  override name = 'ApiError';

  constructor(
    readonly status: number,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

export const badRequest = (detail: string): ApiError => new ApiError(400, detail);
export const unauthorized = (detail: string): ApiError => new ApiError(401, detail, { 'WWW-Authenticate': 'Bearer' });
/** RFC 6750 §3.1: a token was sent but is not valid (expired, tampered, wrong audience…). */
export const invalidToken = (detail: string): ApiError =>
  new ApiError(401, detail, { 'WWW-Authenticate': `Bearer error="invalid_token", error_description="${detail.replace(/["\\]/g, "'")}"` });
export const forbidden = (detail: string): ApiError => new ApiError(403, detail);
export const notFound = (detail: string): ApiError => new ApiError(404, detail);
export const conflict = (detail: string): ApiError => new ApiError(409, detail);
export const payloadTooLarge = (detail: string): ApiError => new ApiError(413, detail);
export const serviceUnavailable = (detail: string, retryAfterSeconds: number): ApiError => new ApiError(503, detail, { 'Retry-After': String(retryAfterSeconds) });

/** How long a client is asked to wait before retrying when the server's disk or database is not writable right now. */
export const STORAGE_RETRY_AFTER_SECONDS = 60;
/** A busy database clears in seconds (another process's write transaction). */
export const BUSY_RETRY_AFTER_SECONDS = 5;

const CODE_OF = (error: unknown): string => {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : '';
};

/** The data directory or database became read-only while the server runs (remounted ro, permissions changed). */
export function isReadOnly(error: unknown): boolean {
  const code = CODE_OF(error);
  return code === 'EROFS' || code.startsWith('SQLITE_READONLY');
}

/** Another process (the admin CLI, a backup) holds the database's write lock longer than the busy timeout. */
export function isDatabaseBusy(error: unknown): boolean {
  const code = CODE_OF(error);
  return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED');
}

/** PostgreSQL cannot be reached or did not answer in time (server/db/postgres/database.ts). */
export function isDatabaseUnavailable(error: unknown): boolean {
  return CODE_OF(error) === 'PATIENT_DOCS_DATABASE_UNAVAILABLE';
}

/** The object store cannot be reached or fails (storage/s3.ts StoreUnavailableError). */
export function isStoreUnavailable(error: unknown): boolean {
  return CODE_OF(error) === 'PATIENT_DOCS_STORE_UNAVAILABLE';
}

/** Faults of this machine that pass by themselves or when IT acts: retry later, and the work is not lost. */
export function isTransientStorageFault(error: unknown): boolean {
  return isDiskFull(error) || isReadOnly(error) || isDatabaseBusy(error) || isDatabaseUnavailable(error) || isStoreUnavailable(error);
}

/**
 * A fault of the server's machine (disk full, read-only, database locked) as the 503 a client
 * retries after Retry-After: never a 500, because nothing in the request is wrong and the same
 * request succeeds once the disk has room again, with no restart. Undefined for anything else.
 */
export function storageFault(error: unknown): ApiError | undefined {
  if (isDiskFull(error)) {
    return serviceUnavailable(
      'the server has no free disk space, so nothing of this request was stored; retry later (the server administrator must free space on the data disk)',
      STORAGE_RETRY_AFTER_SECONDS,
    );
  }
  if (isReadOnly(error)) {
    return serviceUnavailable(
      'the server cannot write to its data folder right now (it became read-only), so nothing of this request was stored; retry later (the server administrator must make the data folder writable again)',
      STORAGE_RETRY_AFTER_SECONDS,
    );
  }
  if (isDatabaseBusy(error)) {
    return serviceUnavailable('the server database is busy with another task (maintenance or a backup); retry in a few seconds', BUSY_RETRY_AFTER_SECONDS);
  }
  if (isDatabaseUnavailable(error)) {
    return serviceUnavailable('the server cannot reach its database right now, so nothing of this request was stored; retry in a few seconds', BUSY_RETRY_AFTER_SECONDS);
  }
  if (isStoreUnavailable(error)) {
    return serviceUnavailable('the server cannot reach its object store right now, so nothing of this request was stored; retry in a few seconds', BUSY_RETRY_AFTER_SECONDS);
  }
  return undefined;
}
