/**
 * The main-process gate of the bridge: every IPC call from the renderer is untrusted, so its
 * shape, method name and arguments are checked against BRIDGE_METHODS before the engine sees it.
 * No `electron` import here, so the gate is unit-tested in plain Node (test/bridge-contract.test.ts).
 */
import type { BridgeEnvelope } from '../../shared/bridge.js';
import { createBridgeCallValidator, type BridgeCallValidator } from '../../shared/bridge-validation.js';

export { createBridgeCallValidator, type BridgeCallValidator, type CheckedCall } from '../../shared/bridge-validation.js';

/** What answers a checked call: the engine's dispatcher (electron/sync/app/bridge-service.ts). */
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
