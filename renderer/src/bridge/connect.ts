import type { BridgeClient } from '../../../shared/bridge.js';
import { LAUNCH_TOKEN_PARAM, PRELOAD_GLOBAL } from '../../../shared/bridge-http.js';
import { createHttpBridgeClient } from './http-client.js';
import { createPreloadBridgeClient } from './preload-client.js';
import type { PreloadBridge } from './preload-api.js';

export type BridgeKind = 'desktop' | 'headless' | 'demo';

/**
 * Picks the bridge for where the page runs: the Electron preload when it is there, the demo
 * engine for `?demo` (a development aid for layout), else the headless twin over HTTP with the
 * launch token from the URL fragment (which the browser never sends to a server).
 */
export async function connectBridge(location: Location): Promise<{ client: BridgeClient; kind: BridgeKind }> {
  const preload = (window as unknown as Record<string, PreloadBridge | undefined>)[PRELOAD_GLOBAL];
  if (preload) return { client: createPreloadBridgeClient(preload), kind: 'desktop' };
  const query = new URLSearchParams(location.search);
  if (query.has('demo')) {
    const { createDemoBridge } = await import('./demo.js');
    return { client: createDemoBridge({ documents: Number(query.get('documents') ?? '240'), state: query.get('demo') ?? '' }), kind: 'demo' };
  }
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ''));
  const token = fragment.get(LAUNCH_TOKEN_PARAM) ?? sessionStorage.getItem(LAUNCH_TOKEN_PARAM) ?? '';
  // Keep the token for reloads, then drop it from the address bar so it is not copied around.
  if (token) {
    sessionStorage.setItem(LAUNCH_TOKEN_PARAM, token);
    history.replaceState(null, '', location.pathname + location.search);
  }
  return { client: createHttpBridgeClient({ baseUrl: location.origin, token }), kind: 'headless' };
}
