import type { BridgeEnvelope, BridgeEvent, BridgeMethod, BridgeParams, BridgeResult } from '../../../shared/bridge.js';

/**
 * What the Electron preload exposes as `window.patientDocs`: one function per bridge method,
 * answering the raw envelope (structured clone cannot carry an Error subclass), plus onEvent.
 */
export type PreloadBridge = {
  [M in BridgeMethod]: (...args: BridgeParams<M>) => Promise<BridgeEnvelope<BridgeResult<M>>>;
} & {
  onEvent(listener: (event: BridgeEvent) => void): () => void;
};
