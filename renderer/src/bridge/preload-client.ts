import { BRIDGE_METHOD_NAMES, type BridgeApi, type BridgeClient, type BridgeMethod } from '../../../shared/bridge.js';
import { BridgeError, isEnvelope, unwrapEnvelope } from './errors.js';
import type { PreloadBridge } from './preload-api.js';

type AnyMethod = (...args: unknown[]) => Promise<unknown>;

/** The desktop side of the bridge: the preload's functions, envelopes unwrapped into values or BridgeErrors. */
export function createPreloadBridgeClient(preload: PreloadBridge): BridgeClient {
  const methods = {} as Record<BridgeMethod, AnyMethod>;
  for (const method of BRIDGE_METHOD_NAMES) {
    const exposed = preload[method] as unknown as AnyMethod | undefined;
    methods[method] = async (...args) => {
      if (typeof exposed !== 'function') throw new BridgeError('UNAVAILABLE', `This version of Patient Docs cannot ${method}.`);
      const answer = await exposed(...args);
      if (!isEnvelope(answer)) throw new BridgeError('INTERNAL', 'Patient Docs answered in an unexpected way.', method);
      return unwrapEnvelope(answer);
    };
  }
  return Object.assign(methods as unknown as BridgeApi, { onEvent: preload.onEvent.bind(preload) });
}
