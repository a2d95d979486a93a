/**
 * The desktop composition root: one window (contextIsolation, sandbox, no Node), the engine and
 * the embedded server wired in-process, the bridge over IPC, a tray and notifications, and the
 * loopback relay for signed links of a server with the clinic's own CA (content-relay.ts). Everything
 * with logic lives in the engine (electron/sync) or in plain modules beside this file.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { BrowserWindow, Notification, app, dialog, ipcMain, shell } from 'electron';
import type { PairView } from '../../shared/bridge.js';
import { IPC_CALL_CHANNEL, IPC_EVENT_CHANNEL } from '../../shared/bridge-http.js';
import { startFailureMessage } from '../sync/app/bridge-error.js';
import { BridgeDispatcher, BridgeService } from '../sync/app/bridge-service.js';
import { SyncApp } from '../sync/app/sync-app.js';
import { defaultSyncHome, openSyncHome } from '../sync/home/sync-home.js';
import { EmbeddedServer } from '../headless/embedded-server.js';
import { createContentRelay, serveContentRelay } from '../headless/content-relay.js';
import { createBridgeCallHandler, isRendererUrl } from './bridge-call.js';
import { noticesBetween } from './notices.js';
import { createShellActions } from './shell-actions.js';
import { StatusTray } from './tray.js';

const here = import.meta.dirname;
const RENDERER_INDEX = path.join(here, '../../renderer/index.html');
const PRELOAD = path.join(here, '../preload/preload.cjs');
/** Uploads get this long to reach a resumable point before the app exits anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

function resourcePath(name: string): string {
  return app.isPackaged ? path.join(process.resourcesPath, name) : path.join(app.getAppPath(), 'build', name);
}

function createWindow(): BrowserWindow {
  const window = new BrowserWindow({
    width: 1320,
    height: 860,
    minWidth: 980,
    minHeight: 640,
    show: false,
    title: 'Patient Docs',
    backgroundColor: '#f3f6f7',
    icon: resourcePath('icon.png'),
    webPreferences: { preload: PRELOAD, contextIsolation: true, sandbox: true, nodeIntegration: false, webSecurity: true, spellcheck: false },
  });
  window.once('ready-to-show', () => window.show());
  // The window shows our UI only: links open in the browser, navigation away is refused.
  window.webContents.setWindowOpenHandler(({ url }) => {
    if (/^https?:/.test(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
  window.webContents.on('will-navigate', (event, url) => {
    if (!isRendererUrl(pathToFileURL(RENDERER_INDEX).href)(url)) event.preventDefault();
  });
  void window.loadFile(RENDERER_INDEX);
  return window;
}

async function main(): Promise<void> {
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return;
  }
  await app.whenReady();
  app.setAppUserModelId('com.patientdocs.desktop');

  let window: BrowserWindow | null = null;
  let quitting = false;
  const home = await openSyncHome(defaultSyncHome());
  const syncApp = new SyncApp({
    home: home.directory,
    settings: home.settings,
    secrets: home.secrets,
    notices: home.notices,
    shell: 'desktop',
    version: app.getVersion(),
    // The same embedded server the headless twin runs (one composition piece, two shells).
    embedded: new EmbeddedServer(home.directory, home.secrets),
  });
  const relay = createContentRelay(syncApp);
  const dispatcher = new BridgeDispatcher(new BridgeService(syncApp, { ...createShellActions(() => window), contentUrl: (uri) => relay.link(uri) }));
  const relayServer = await serveContentRelay(relay, dispatcher);
  const handleCall = createBridgeCallHandler({ target: dispatcher, isTrustedSender: isRendererUrl(pathToFileURL(RENDERER_INDEX).href) });
  ipcMain.handle(IPC_CALL_CHANNEL, (event, method: unknown, args: unknown) => handleCall(event.senderFrame?.url, method, args));

  const showWindow = (): void => {
    window ??= createWindow();
    window.on('close', (event) => {
      // Closing the window keeps syncing in the tray; Quit (tray or menu) really exits.
      if (quitting) return;
      event.preventDefault();
      window?.hide();
    });
    if (window.isMinimized()) window.restore();
    window.show();
    window.focus();
  };
  app.on('second-instance', showWindow);
  app.on('activate', showWindow);

  const tray = new StatusTray(resourcePath('tray.png'), {
    show: showWindow,
    setAllPaused: (paused) => syncApp.engine.pairViews().forEach((pair) => syncApp.setPaused(pair.id, paused)),
    quit: () => app.quit(),
  });
  let lastPairs: PairView[] = [];
  syncApp.onEvent((event) => {
    window?.webContents.send(IPC_EVENT_CHANNEL, event);
    if (event.type === 'pairs') {
      for (const notice of noticesBetween(lastPairs, event.pairs)) {
        if (Notification.isSupported()) new Notification({ title: notice.title, body: notice.body, urgency: notice.urgent ? 'critical' : 'normal' }).show();
      }
      lastPairs = event.pairs;
      tray.update(event.pairs);
    } else if (event.type === 'status') {
      tray.update(lastPairs, event.status.online);
    }
  });

  app.on('before-quit', (event) => {
    if (quitting) return;
    quitting = true;
    event.preventDefault();
    const timeout = new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS));
    void Promise.race([Promise.all([syncApp.stop(), relayServer.close()]), timeout])
      .catch((error: unknown) => console.error('patient-docs: shutdown', error))
      .finally(() => {
        tray.destroy();
        app.exit(0);
      });
  });
  app.on('window-all-closed', () => {
    // Stay in the tray: scanners keep exporting after the window is closed.
  });

  // A change IT made with `patient-docs-sync config` (applied, or why not): in the log; the status shows a problem too.
  syncApp.onSettingsFileChange((event) => (event.kind === 'applied' ? console.log(`patient-docs: ${event.message}`) : console.error(`patient-docs: ${event.message}`)));
  showWindow();
  try {
    await syncApp.start();
    lastPairs = syncApp.engine.pairViews();
    tray.update(lastPairs);
  } catch (error) {
    // The UI shows the status (offline, not configured); the engine retries on its own.
    console.error('patient-docs: start', error);
  }
}

// Opening the sync home can fail (a full disk): say so in a dialog instead of an unhandled rejection.
main().catch((error: unknown) => {
  dialog.showErrorBox('Patient Docs', startFailureMessage(error));
  app.exit(1);
});
