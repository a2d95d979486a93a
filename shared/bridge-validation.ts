/**
 * Checks one bridge call (method name and argument list) against BRIDGE_METHODS. The Electron
 * main process and the engine's dispatcher (the headless twin's path) both use this one check:
 * the renderer is untrusted on either side.
 */
import type { ValidateFunction } from 'ajv';
import { createAjv } from './ajv.js';
import { BRIDGE_METHODS, BRIDGE_METHOD_NAMES, type BridgeEnvelope, type BridgeMethod } from './bridge.js';

export type CheckedCall = { ok: true; method: BridgeMethod; args: unknown[] } | { ok: false; envelope: BridgeEnvelope<never> };

export interface BridgeCallValidator {
  check(method: unknown, args: unknown): CheckedCall;
}

function refuse(detail: string): CheckedCall {
  return { ok: false, envelope: { ok: false, error: { code: 'INVALID_INPUT', message: 'The request was not valid.', detail } } };
}

/**
 * typebox writes an empty tuple as `items: []`, which draft-07 forbids (ajv refuses to compile it);
 * "no arguments" is the same rule said the way ajv accepts.
 */
function compilable(schema: object): object {
  const tuple = schema as { type?: unknown; items?: unknown };
  return tuple.type === 'array' && Array.isArray(tuple.items) && tuple.items.length === 0 ? { type: 'array', maxItems: 0 } : schema;
}

export function createBridgeCallValidator(): BridgeCallValidator {
  const ajv = createAjv();
  const validators = new Map<string, ValidateFunction>(BRIDGE_METHOD_NAMES.map((method) => [method, ajv.compile(compilable(BRIDGE_METHODS[method]))]));
  return {
    check(method, args) {
      if (typeof method !== 'string' || !Object.hasOwn(BRIDGE_METHODS, method) || !validators.has(method)) return refuse(`unknown method ${JSON.stringify(method)?.slice(0, 80)}`);
      if (!Array.isArray(args)) return refuse(`${method}: arguments must be a list`);
      const validate = validators.get(method)!;
      if (!validate(args)) {
        const first = validate.errors?.[0];
        return refuse(`${method}: argument ${first?.instancePath || '/'} ${first?.message ?? 'is invalid'}`);
      }
      return { ok: true, method: method as BridgeMethod, args };
    },
  };
}
