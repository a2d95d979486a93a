import type { BridgeEnvelope } from '../../../shared/bridge.js';
import { PLAIN_MESSAGES, isBridgeErrorCode, type BridgeErrorCode } from '../../../shared/bridge-errors.js';

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
