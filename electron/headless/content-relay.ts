/**
 * Signed links of a server whose certificate comes from the clinic's own CA. The window showing
 * the UI (the system browser, or Electron's Chromium) trusts only the operating system's CAs, so
 * thumbnails, 3D and PDF previews and downloads would fail there; the engine trusts the clinic's
 * CA. When it is in use, the UI loads those links from a loopback relay that the engine answers.
 * Both shells use it: the headless app on its bridge port, the desktop window on a port of its own
 * (a custom protocol would be the Electron way, but Electron's PDF viewer does not load from one).
 */
import { randomBytes } from 'node:crypto';
import type { BridgeDispatcher } from '../sync/app/bridge-service.js';
import type { SyncApp } from '../sync/app/sync-app.js';
import { SERVER_CONTENT_PATH, startBridgeHttpServer, type BridgeHttpServer, type ServerContentSource } from './bridge-http-server.js';

export interface ContentRelay {
  /** What the loopback server answers SERVER_CONTENT_PATH with. */
  source: ServerContentSource;
  /** Once the loopback server listens: its base URL. Links are relayed from then on. */
  attach(baseUrl: string): void;
  /** Where the UI should load a signed link from (ShellActions.contentUrl): null to load it directly. */
  link(uri: string): string | null;
}

export function createContentRelay(app: Pick<SyncApp, 'apiClient' | 'trustsPrivateCa'>): ContentRelay {
  // A token of the relay's own (in the query, since an <img> sends no header): it grants this route only.
  const token = randomBytes(24).toString('base64url');
  let base: string | null = null;
  return {
    source: { token, open: (url) => app.apiClient().openContent(url) },
    attach(baseUrl) {
      base = baseUrl;
    },
    link(uri) {
      return base && app.trustsPrivateCa() ? `${base}${SERVER_CONTENT_PATH}?t=${token}&url=${encodeURIComponent(uri)}` : null;
    },
  };
}

/**
 * The desktop window's relay on a loopback port of its own: no UI files, no events, and a bridge
 * token that never leaves this process, so the port answers the relay's signed links only.
 */
export async function serveContentRelay(relay: ContentRelay, dispatcher: BridgeDispatcher): Promise<BridgeHttpServer> {
  const server = await startBridgeHttpServer({
    dispatcher,
    token: randomBytes(24).toString('base64url'),
    subscribe: () => () => undefined,
    initialEvents: async () => [],
    rendererDir: null,
    fallbackPage: '',
    serverContent: relay.source,
  });
  relay.attach(server.url);
  return server;
}
