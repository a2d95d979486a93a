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
