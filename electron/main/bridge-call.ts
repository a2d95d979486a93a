/**
 * The main-process gate of the bridge: every IPC call from the renderer is untrusted, so its
 * shape, method name and arguments are checked against BRIDGE_METHODS before the engine sees it.
 * No `electron` import here, so the gate is unit-tested in plain Node (test/bridge-contract.test.ts).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { BRIDGE_METHODS, BRIDGE_METHOD_NAMES, type BridgeEnvelope, type BridgeMethod } from '../../shared/bridge.js';

type AddFormats = (ajv: Ajv) => Ajv;
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats;

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
  const ajv = new Ajv({ strict: false, allErrors: false });
  addFormats(ajv);
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

/** What answers a checked call: the engine's dispatcher (electron/sync/bridge-service.ts). */
export interface BridgeCallTarget {
  call(method: string, args: unknown): Promise<BridgeEnvelope<unknown>>;
}

/**
 * The ipcMain handler body: refuses calls from any page but our own renderer (a navigated or
 * injected frame must not drive the engine), then validates, then dispatches. Never throws.
 */
export function createBridgeCallHandler(options: { target: BridgeCallTarget; isTrustedSender: (url: string) => boolean; validator?: BridgeCallValidator }) {
  const validator = options.validator ?? createBridgeCallValidator();
  return async (senderUrl: string | undefined, method: unknown, args: unknown): Promise<BridgeEnvelope<unknown>> => {
    if (!senderUrl || !options.isTrustedSender(senderUrl)) {
      return { ok: false, error: { code: 'UNAVAILABLE', message: 'That is not available here.', detail: 'call from an untrusted page' } };
    }
    const checked = validator.check(method, args);
    if (!checked.ok) return checked.envelope;
    try {
      return await options.target.call(checked.method, checked.args);
    } catch (error) {
      return { ok: false, error: { code: 'INTERNAL', message: 'Something went wrong inside Patient Docs.', detail: error instanceof Error ? error.message : String(error) } };
    }
  };
}

/** Our renderer is the bundled index.html loaded from disk; anything else is foreign. */
export function isRendererUrl(rendererIndexUrl: string): (url: string) => boolean {
  const expected = new URL(rendererIndexUrl);
  return (url) => {
    try {
      const actual = new URL(url);
      return actual.protocol === expected.protocol && actual.pathname === expected.pathname;
    } catch {
      return false;
    }
  };
}
