import type { BridgeEnvelope } from '../../../shared/bridge.js';
import { GONE_FROM_SERVER_MESSAGE, PLAIN_MESSAGES, isBridgeErrorCode, type BridgeErrorCode } from '../../../shared/bridge-errors.js';

/** A coded failure from the engine, with the plain language to show and the server's detail. */
export class BridgeError extends Error {
  override readonly name = 'BridgeError';
  constructor(
    readonly code: BridgeErrorCode,
    message: string,
    readonly detail?: string,
  ) {
    super(message);
  }
}

/** Turns an envelope into its value, or throws its error as a BridgeError (the UI only ever sees codes it knows). */
export function unwrapEnvelope<T>(envelope: BridgeEnvelope<T>): T {
  if (envelope.ok) return envelope.value;
  const { code, message, detail } = envelope.error;
  const knownCode: BridgeErrorCode = isBridgeErrorCode(code) ? code : 'INTERNAL';
  return throwError(new BridgeError(knownCode, message || PLAIN_MESSAGES[knownCode], detail));
}

function throwError(error: BridgeError): never {
  throw error;
}

/** Whatever was thrown, as a BridgeError, so screens show one kind of message. */
export function toBridgeError(error: unknown): BridgeError {
  if (error instanceof BridgeError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new BridgeError('INTERNAL', PLAIN_MESSAGES.INTERNAL, message);
}

export function isEnvelope(value: unknown): value is BridgeEnvelope<unknown> {
  if (typeof value !== 'object' || value === null || !('ok' in value)) return false;
  const ok = (value as { ok: unknown }).ok;
  if (ok === true) return 'value' in value;
  if (ok !== false || !('error' in value)) return false;
  const error = (value as { error: unknown }).error;
  return typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string';
}

/** Codes whose detail is the server's own answer (a problem document or the token endpoint's words). */
const SERVER_DETAIL_CODES: ReadonlySet<BridgeErrorCode> = new Set(['BAD_CREDENTIALS', 'MISSING_SCOPE', 'WRONG_ORGANIZATION', 'NO_CONSENT', 'NO_ACCESS', 'NOT_FOUND', 'INVALID_INPUT', 'INVALID_NAME', 'CONFLICT', 'TOO_LARGE', 'RATE_LIMITED', 'SERVER_ERROR', 'VERIFY_FAILED']);

/**
 * The engine's own check of a bridge call (shared/bridge-validation.ts) words its refusal for
 * developers ("updateSettings: argument /0/concurrency must be >= 1"); it never came from the server.
 */
export function isBridgeCallRefusal(error: { code?: string; detail?: string | undefined }): boolean {
  return error.code === 'INVALID_INPUT' && /^(\w+: argument |\w+: arguments must be a list$|unknown method )/.test(error.detail ?? '');
}

/**
 * How a detail is introduced: the server's words as such, anything else (a network error, the app's
 * own check, what the re-check of synced files found) as detail.
 */
export function detailLabel(error: { code?: BridgeErrorCode | undefined; detail?: string | undefined; message?: string | undefined }): string {
  return error.code && SERVER_DETAIL_CODES.has(error.code) && !isBridgeCallRefusal(error) && error.message !== GONE_FROM_SERVER_MESSAGE ? 'Server said:' : 'Details:';
}
