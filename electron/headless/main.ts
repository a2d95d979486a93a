/**
 * The headless app's composition root: the same app as the desktop, without Electron. Settings and
 * secrets under PATIENT_DOCS_SYNC_HOME, the bundled server in-process when that is the mode (and on
 * a first run with no configuration), the engine, and the UI served on loopback with an HTTP bridge
 * guarded by a per-launch token.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { LAUNCH_TOKEN_PARAM } from '../../shared/bridge-http.js';
import { BridgeDispatcher, BridgeService } from '../sync/app/bridge-service.js';
import { SyncApp, type SyncAppOptions } from '../sync/app/sync-app.js';
import { startFailureMessage } from '../sync/app/bridge-error.js';
import { defaultSyncHome, openSyncHome } from '../sync/home/sync-home.js';
import { startBridgeHttpServer, type BridgeHttpServer } from './bridge-http-server.js';
import { createContentRelay } from './content-relay.js';
import { EmbeddedServer } from './embedded-server.js';
import { statusPage } from './status-page.js';
import { APP_VERSION } from '../sync/home/app-version.js';

export interface HeadlessOptions {
  home?: string;
  port?: number;
  /** 'choose': leave a first run unconfigured so the UI asks; default: embedded server + demo folder. */
  firstRun?: 'embedded' | 'choose';
  /** The first run's demo folder; default: among the user's documents (defaultDemoFolder), or next to a home given here. */
  demoFolder?: string;
  rendererDir?: string | null;
  token?: string;
  log?: (line: string) => void;
  /** Engine knobs for tests (backoff, polling), as SyncAppOptions.engine. */
  engine?: SyncAppOptions['engine'];
}

export interface HeadlessApp {
  app: SyncApp;
  http: BridgeHttpServer;
  /** The URL to open, with the launch token in its fragment. */
  openUrl: string;
  token: string;
  stop(): Promise<void>;
}

const DIST_RENDERER = fileURLToPath(new URL('../../renderer', import.meta.url));

/** Next to the sync home, not in it: a scan folder never lies in the app's own state (watch/pair-folders.ts). */
export function demoFolderBeside(home: string): string {
  return path.join(path.dirname(path.resolve(home)), `${path.basename(path.resolve(home))} scans (demo)`);
}

export async function launchHeadless(options: HeadlessOptions = {}): Promise<HeadlessApp> {
  const log = options.log ?? ((line: string) => console.log(line));
  const home = await openSyncHome(options.home ?? defaultSyncHome());
  if (home.secrets.warning) log(`warning: ${home.secrets.warning}`);
  const embedded = new EmbeddedServer(home.directory, home.secrets);
  const app = new SyncApp({ home: home.directory, settings: home.settings, secrets: home.secrets, notices: home.notices, shell: 'headless', version: APP_VERSION, embedded, ...(options.engine ? { engine: options.engine } : {}) });
  if (app.mode() === 'unconfigured' && (options.firstRun ?? 'embedded') === 'embedded') {
    const info = await app.setupEmbedded();
    // A home given here (tests, a second installation): the demo folder next to it, never in it.
    const folder = options.demoFolder ?? (options.home === undefined ? defaultDemoFolder() : demoFolderBeside(home.directory));
    mkdirSync(folder, { recursive: true });
    await app.addPair({ folder, patientId: info.demoPatient.id, patientName: info.demoPatient.name, remoteBasePath: '/scans' });
    log(`first run: started the bundled server at ${info.url} with a demo clinic; files dropped into "${folder}" sync to ${info.demoPatient.name}`);
  }
  app.onSettingsFileChange((event) => log(event.message));
  await app.start();
  // Signed links of a server with the clinic's own CA are read through the engine (content-relay.ts).
  const relay = createContentRelay(app);
  const service = new BridgeService(app, { contentUrl: (uri) => relay.link(uri) });
  const dispatcher = new BridgeDispatcher(service);
  const token = options.token ?? randomBytes(24).toString('base64url');
  const rendererDir = options.rendererDir === undefined ? (existsSync(path.join(DIST_RENDERER, 'index.html')) ? DIST_RENDERER : null) : options.rendererDir;
  const http = await startBridgeHttpServer({
    dispatcher,
    token,
    subscribe: (listener) => app.onEvent(listener),
    initialEvents: async () => [
      { type: 'status', status: await app.status() },
      { type: 'pairs', pairs: app.engine.pairViews() },
    ],
    rendererDir,
    fallbackPage: statusPage(),
    port: options.port ?? 0,
    serverContent: relay.source,
  });
  relay.attach(http.url);
  const openUrl = `${http.url}/#${LAUNCH_TOKEN_PARAM}=${token}`;
  return {
    app,
    http,
    openUrl,
    token,
    stop: async () => {
      await http.close();
      await app.stop();
    },
  };
}


/**
 * Where the first run's demo folder goes: among the user's documents, where they look for files
 * (not inside the app's own settings folder, which is hidden on most systems).
 */
export function defaultDemoFolder(home = os.homedir()): string {
  const documents = path.join(home, 'Documents');
  return path.join(existsSync(documents) ? documents : home, 'Patient Docs demo scans');
}

async function main(): Promise<void> {
  const port = process.env.PATIENT_DOCS_HEADLESS_PORT ? Number(process.env.PATIENT_DOCS_HEADLESS_PORT) : 0;
  const firstRun = process.env.PATIENT_DOCS_FIRST_RUN === 'choose' ? 'choose' : 'embedded';
  const headless = await launchHeadless({ port, firstRun });
  const reason = process.env.PATIENT_DOCS_HEADLESS_REASON;
  if (reason) console.log(`Running without a window: ${reason}.`);
  if (!headless.http.url || headless.app.mode() === 'unconfigured') console.log('Not set up yet: the page below walks you through it.');
  console.log(`Patient Docs (headless) — open ${headless.openUrl}`);
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: stopping (uploads pause at a resumable point)…`);
    headless.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().catch((error: unknown) => {
    console.error(startFailureMessage(error));
    process.exit(1);
  });
}
