/**
 * The built renderer in real Chromium against a scripted engine: every bridge call and the event
 * stream are answered from the test, so a screen can be shown in a state that is slow or awkward to
 * reach with real folders (three kinds of failure at once, a deep tree, a narrow window). The
 * end-to-end file (ui.e2e.test.ts) drives the real headless app; these tests pin what the screens
 * make of given views.
 *
 * The scripted engine is a real loopback HTTP server in the test process (one per browser, so one
 * per worker process; see useBrowser), speaking the headless twin's wire (shared/bridge-http.ts): the page reaches it as
 * http://patient-docs.test through the context's proxy setting, the built assets are cached by the
 * browser as the real twin lets them be, and the event stream is held open, so an emitted event
 * reaches the page at once. Each opened page has a launch token of its own, which tells its calls
 * and its stream apart from another page's.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import type { AppStatus, BridgeApi, BridgeEvent, FileView, PairView, StateCounts } from '../../shared/bridge.js';
import { FILE_STATES } from '../../shared/bridge.js';
import type { BridgeErrorCode } from '../../shared/bridge-errors.js';
import { PLAIN_MESSAGES } from '../../shared/bridge-errors.js';
import { BRIDGE_CALL_PREFIX, BRIDGE_EVENTS_PATH, LAUNCH_TOKEN_PARAM } from '../../shared/bridge-http.js';
import type { DocumentDto, PatientDto } from '../../shared/schemas.js';
import { afterThisFile } from './file-cleanup.js';

const RENDERER_DIR = path.resolve(import.meta.dirname, '../../dist/renderer');
const ORIGIN = 'http://patient-docs.test';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const CONTENT_TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.wasm': 'application/wasm' };

export type Handlers = { [M in keyof BridgeApi]?: (...args: Parameters<BridgeApi[M]>) => Awaited<ReturnType<BridgeApi[M]>> | Promise<Awaited<ReturnType<BridgeApi[M]>>> };

/** A handler's refusal, as the engine sends it across the bridge. */
export class Refusal extends Error {
  constructor(
    readonly code: BridgeErrorCode,
    message: string = PLAIN_MESSAGES[code],
    readonly detail?: string,
  ) {
    super(message);
  }
}

export interface RendererPage {
  page: Page;
  /** Every call the page made, in order: method and arguments. */
  calls: Array<{ method: string; args: unknown[] }>;
  /** Sends events to the page over its open event stream; resolves once the page has received them. */
  emit(events: BridgeEvent[]): Promise<void>;
  close(): Promise<void>;
}

/** Each page's debugger session for screenshots, opened with its first. */
const screenshotSessions = new WeakMap<Page, Promise<CDPSession>>();

/**
 * Saves a screenshot (PNG, the page's viewport in device pixels) once two frames have been painted
 * (layout and fonts settled). Taken through the debugger protocol with Chromium's fast PNG encoder:
 * the same picture as `page.screenshot` at about a third of its time, which a UI file taking ten or
 * twenty of them notices. The text caret is left as it is (a picture to look at, not compared).
 */
export async function paintedScreenshot(page: Page, file: string): Promise<void> {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  let session = screenshotSessions.get(page);
  if (!session) {
    session = page.context().newCDPSession(page);
    screenshotSessions.set(page, session);
  }
  const { data } = await (await session).send('Page.captureScreenshot', { format: 'png', optimizeForSpeed: true });
  await writeFile(file, Buffer.from(data, 'base64'));
}

/**
 * Chromium as the UI tests run it. The GPU is off, so pages are composited in software; WebGL (the
 * 3D viewer) still works on Chromium's software fallback (SwiftShader, which playwright allows).
 * Turning the GPU on for SwiftShader instead makes every page's drawing go through emulated GL:
 * about twice the browser's CPU for the same screens, and no picture the tests need.
 */
function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}

let workerBrowser: Promise<Browser> | undefined;
let fileUsesBrowser = false;

/**
 * Chromium for the test file now running: one browser per worker process, launched by the first
 * file that asks and kept for the files the worker runs after it (a launch is about two seconds of
 * CPU), killed when the worker ends. What a file opens in it is its own: every context (page,
 * storage, cache) the file opened, idle renderer pages included, is closed when the file ends, so
 * the next file starts from a browser with nothing open. A browser that crashed or was closed is
 * launched again for the next file that asks.
 */
export function useBrowser(): Promise<Browser> {
  if (!workerBrowser) {
    const launching = launchBrowser();
    workerBrowser = launching;
    launching.then(
      (browser) => {
        browser.once('disconnected', () => {
          if (workerBrowser === launching) workerBrowser = undefined;
        });
      },
      () => {
        if (workerBrowser === launching) workerBrowser = undefined;
      },
    );
  }
  if (!fileUsesBrowser) {
    fileUsesBrowser = true;
    const browser = workerBrowser;
    afterThisFile(async () => {
      fileUsesBrowser = false;
      await closeContexts(await browser.catch(() => undefined));
    });
  }
  return workerBrowser;
}

/**
 * Closes every context of `browser` (idle renderer pages too) and forgets its scripted engine's
 * pages: what the file opened in the worker's browser, for a file that must close its pages before
 * it stops what they are connected to. The browser itself keeps running for the next file.
 */
export async function closeContexts(browser: Browser | undefined): Promise<void> {
  if (!browser?.isConnected()) return;
  const engine = engines.get(browser);
  if (engine) {
    const started = await engine;
    started.idle.clear();
    started.scripts.clear();
  }
  await Promise.all(browser.contexts().map((context) => context.close().catch(() => undefined)));
}

type PageOptions = { width: number; height: number; deviceScaleFactor: number };

/** A page of its own context (its own storage), with a debugger session to empty that storage. */
interface Tab {
  context: BrowserContext;
  page: Page;
  cdp: CDPSession;
}

/** One opened page's share of the scripted engine: its handlers, its calls and its event stream. */
interface Script {
  handlers: Record<string, (...args: unknown[]) => unknown>;
  calls: RendererPage['calls'];
  /** Events for the next stream the page opens (none is open). */
  pending: BridgeEvent[];
  streams: Set<ServerResponse>;
  lastEventId: number;
}

interface ScriptedEngine {
  port: number;
  scripts: Map<string, Script>;
  /** Pages no test uses, by device scale factor: their renderer process and cache are kept. */
  idle: Map<number, Tab[]>;
  close(): void;
}

const engines = new WeakMap<Browser, Promise<ScriptedEngine>>();
let nextToken = 1;

/** The scripted engine of this browser, started with its first page and stopped with the browser. */
function engineFor(browser: Browser): Promise<ScriptedEngine> {
  let engine = engines.get(browser);
  if (!engine) {
    engine = startScriptedEngine();
    engines.set(browser, engine);
    browser.once('disconnected', () => void engine!.then((started) => started.close()));
  }
  return engine;
}

async function startScriptedEngine(): Promise<ScriptedEngine> {
  const scripts = new Map<string, Script>();
  const assets = new Map<string, Buffer | null>();
  const sockets = new Set<Socket>();
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) send(response, 500, 'text/plain', String(error));
      else response.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // Nothing here is served over TLS: a tunnel asked of the proxy is refused at once.
  server.on('connect', (_request, socket: Socket) => socket.destroy());

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    // Through the proxy setting the request names the whole address (http://patient-docs.test/...).
    const url = new URL(request.url ?? '/', ORIGIN);
    if (url.origin !== ORIGIN) return send(response, 404, 'text/plain', 'not found');
    if (url.pathname.startsWith(BRIDGE_CALL_PREFIX)) {
      const script = scripts.get(/^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? '');
      if (!script) return send(response, 401, 'application/json', JSON.stringify({ error: 'launch token missing or wrong' }));
      const method = decodeURIComponent(url.pathname.slice(BRIDGE_CALL_PREFIX.length));
      const body = await readBody(request);
      const args = JSON.parse(body.length ? body : '[]') as unknown[];
      script.calls.push({ method, args });
      return send(response, 200, 'application/json', JSON.stringify(await answer(script, method, args)));
    }
    if (url.pathname === BRIDGE_EVENTS_PATH) {
      const script = scripts.get(url.searchParams.get(LAUNCH_TOKEN_PARAM) ?? '');
      if (!script) return send(response, 401, 'text/plain', 'launch token missing or wrong');
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
      response.write(': connected\n\n');
      script.streams.add(response);
      request.once('close', () => script.streams.delete(response));
      const events = script.pending;
      script.pending = [];
      if (events.length) deliver(script, events);
      return;
    }
    const file = url.pathname === '/' ? '/index.html' : url.pathname;
    if (!assets.has(file)) assets.set(file, readAsset(file));
    const body = assets.get(file);
    if (!body) return send(response, 404, 'text/plain', 'not found');
    // As the headless twin serves them: hashed assets cached for good, the page itself never.
    const cache = file.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-store';
    response.writeHead(200, { 'content-type': CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream', 'content-length': body.length, 'cache-control': cache });
    response.end(body);
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  // Never what keeps a test process alive: the browser's end stops it, or the process's.
  server.unref();
  return {
    port: (server.address() as AddressInfo).port,
    scripts,
    idle: new Map(),
    close: () => {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

async function answer(script: Script, method: string, args: unknown[]): Promise<unknown> {
  const handler = script.handlers[method];
  try {
    if (!handler) throw new Refusal('UNAVAILABLE', `not scripted: ${method}`);
    const value = await handler(...args);
    return { ok: true, value: value ?? null };
  } catch (error) {
    const refusal = error instanceof Refusal ? error : new Refusal('INTERNAL', String(error));
    return { ok: false, error: { code: refusal.code, message: refusal.message, ...(refusal.detail ? { detail: refusal.detail } : {}) } };
  }
}

/** Writes events to the page's open streams, each with the next event id; returns the last id. */
function deliver(script: Script, events: BridgeEvent[]): number {
  for (const event of events) {
    script.lastEventId += 1;
    const message = `id: ${script.lastEventId}\ndata: ${JSON.stringify(event)}\n\n`;
    for (const stream of script.streams) stream.write(message);
  }
  return script.lastEventId;
}

function readAsset(file: string): Buffer | null {
  const resolved = path.resolve(RENDERER_DIR, `.${path.posix.normalize(file)}`);
  if (!resolved.startsWith(RENDERER_DIR + path.sep)) return null;
  try {
    return readFileSync(resolved);
  } catch {
    return null;
  }
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function send(response: ServerResponse, status: number, contentType: string, body: string): void {
  response.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  response.end(body);
}

/**
 * Runs in the page before its own scripts: notes the id of the last bridge event the page's event
 * stream handed to its listeners (this listener is the stream's first, so the app's have run too).
 */
function noteBridgeEvents(): void {
  const Native = window.EventSource;
  window.EventSource = class extends Native {
    constructor(url: string | URL, init?: EventSourceInit) {
      super(url, init);
      this.addEventListener('message', (message) => {
        (window as unknown as { __lastBridgeEventId: number }).__lastBridgeEventId = Number(message.lastEventId);
      });
    }
  };
}

/**
 * A page for the next test: an idle one when there is one, else a new one in a new context. An idle
 * page is brought to a known state first (the test's routes removed, the size asked for, the origin's
 * storage emptied), so nothing an earlier test did is seen; what it keeps is what a new page would
 * spend seconds of CPU on again: its renderer process, the compiled bundle and the cached assets.
 */
async function takeTab(browser: Browser, engine: ScriptedEngine, options: PageOptions): Promise<Tab> {
  const idle = engine.idle.get(options.deviceScaleFactor)?.pop();
  if (idle) {
    await idle.page.unrouteAll({ behavior: 'ignoreErrors' });
    await idle.page.setViewportSize({ width: options.width, height: options.height });
    await idle.cdp.send('Storage.clearDataForOrigin', { origin: ORIGIN, storageTypes: 'local_storage,session_storage,indexeddb,cache_storage,service_workers,file_systems,websql,cookies' });
    return idle;
  }
  const context = await browser.newContext({
    viewport: { width: options.width, height: options.height },
    deviceScaleFactor: options.deviceScaleFactor,
    locale: 'en-GB',
    acceptDownloads: true,
    proxy: { server: `http://127.0.0.1:${engine.port}` },
  });
  await context.addInitScript(noteBridgeEvents);
  const page = await context.newPage();
  return { context, page, cdp: await context.newCDPSession(page) };
}

/** The page leaves the app (its event stream and timers go with it) and waits for the next test. */
async function releaseTab(engine: ScriptedEngine, tab: Tab, deviceScaleFactor: number): Promise<void> {
  try {
    if (tab.page.isClosed()) throw new Error('closed by the test');
    await tab.page.goto('about:blank');
  } catch {
    await tab.context.close();
    return;
  }
  const idle = engine.idle.get(deviceScaleFactor) ?? [];
  engine.idle.set(deviceScaleFactor, idle);
  idle.push(tab);
}

export async function openRenderer(browser: Browser, handlers: Handlers, options: { width?: number; height?: number; deviceScaleFactor?: number; events?: BridgeEvent[] } = {}): Promise<RendererPage> {
  const engine = await engineFor(browser);
  const token = `scripted-${nextToken++}`;
  const script: Script = {
    handlers: { ...defaultHandlers(), ...handlers } as Script['handlers'],
    calls: [],
    pending: [...(options.events ?? [])],
    streams: new Set(),
    lastEventId: 0,
  };
  engine.scripts.set(token, script);
  const deviceScaleFactor = options.deviceScaleFactor ?? 1;
  const tab = await takeTab(browser, engine, { width: options.width ?? 1440, height: options.height ?? 900, deviceScaleFactor });
  const page = tab.page;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await releaseTab(engine, tab, deviceScaleFactor);
    engine.scripts.delete(token);
    for (const stream of script.streams) stream.end();
  };
  try {
    await page.goto(`${ORIGIN}/#${LAUNCH_TOKEN_PARAM}=${token}`);
  } catch (error) {
    await close();
    throw error;
  }
  return {
    page,
    calls: script.calls,
    emit: async (events) => {
      // With no stream open (the page is loading), the next one the page opens carries them.
      const id = script.streams.size ? deliver(script, events) : (script.pending.push(...events), script.lastEventId + script.pending.length);
      await page.waitForFunction((last) => ((window as unknown as { __lastBridgeEventId?: number }).__lastBridgeEventId ?? 0) >= last, id);
    },
    close,
  };
}

function defaultHandlers(): Handlers {
  return {
    getStatus: () => STATUS,
    listPairs: () => [],
    listFiles: () => ({ files: [], total: 0 }),
    listPatients: () => ({ patients: [], total: 0, offset: 0, limit: 100 }),
    searchDocuments: () => ({ documents: [], total: 0, offset: 0, limit: 100 }),
    webhookActivity: () => [],
    fileHistory: () => [],
    exportHistoryCsv: () => '',
    getSettings: () => ({ concurrency: 4, settleMs: 2000, rescanMinutes: 60, recheckMinutes: 240, ignorePatterns: [], bandwidthLimitBytesPerSecond: 0, webhook: { port: 8787, publicUrl: null }, maskedSecret: '••••1234' }),
  };
}

export const ORIGIN_URL = ORIGIN;

export const STATUS: AppStatus = {
  mode: 'remote',
  shell: 'headless',
  server: { url: 'http://server.test', tokenUrl: 'http://server.test/oauth2/token', clientId: 'scanner-pc-1', organizationId: '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01', organizationName: 'Smile Clinic', trustedCertificates: [] },
  online: true,
  secrets: { backend: 'encrypted-file', warning: null, clientSecretMissing: false },
    notices: [],
  webhook: { listening: false, localUrl: null, publicUrl: null, subscribed: false, error: null },
  version: 'test',
};

export function counts(partial: Partial<StateCounts>): StateCounts {
  return { ...(Object.fromEntries(FILE_STATES.map((state) => [state, 0])) as StateCounts), ...partial };
}

export function pairView(partial: Partial<PairView> = {}): PairView {
  return {
    id: 'pair-1',
    folder: '/home/clinic/scans/chair 1',
    patientId: '5f0e8a3c-1d2b-4c3d-8e9f-000000000001',
    patientName: 'Jane Roe',
    remoteBasePath: '/scans',
    paused: false,
    state: 'idle',
    counts: counts({}),
    bytesDone: 0,
    bytesTotal: 0,
    rateBytesPerSecond: 0,
    etaSeconds: null,
    cases: [],
    items: { done: partial.counts?.synced ?? 0, total: partial.counts ? Object.values(partial.counts).reduce((sum, count) => sum + count, 0) : 0 },
    skipped: 0,
    lastError: null,
    failureReasons: [],
    retryReason: null,
    folderError: null,
    settling: 0,
    unreadable: [],
    heldForDiskFull: 0,
    ...partial,
  };
}

let nextFileId = 1;
export function fileView(partial: Partial<FileView> & Pick<FileView, 'relativePath'>): FileView {
  const fileName = partial.relativePath.slice(partial.relativePath.lastIndexOf('/') + 1);
  return {
    id: nextFileId++,
    pairId: 'pair-1',
    remotePath: '/scans',
    fileName,
    size: 1000,
    state: 'synced',
    bytesDone: 1000,
    rate: 0,
    attempts: 1,
    nextAttemptAt: null,
    error: null,
    documentId: null,
    version: 1,
    updatedAt: Date.parse('2026-03-12T10:00:00Z'),
    syncedAt: Date.parse('2026-03-12T10:00:00Z'),
    lostAt: null,
    ...partial,
  };
}

export function patient(name: string, index: number): PatientDto {
  return { id: `5f0e8a3c-1d2b-4c3d-8e9f-${index.toString(16).padStart(12, '0')}`, name, identifiers: [], birthDate: null, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' };
}

export function documentDto(partial: Partial<DocumentDto> & Pick<DocumentDto, 'fileName' | 'path'>, index: number): DocumentDto {
  return {
    id: `7a1c0000-0000-4000-8000-${index.toString(16).padStart(12, '0')}`,
    storageUrl: 'http://server.test/storage',
    fileType: partial.fileName.split('.').pop()!.toUpperCase(),
    fileSize: 123_456,
    sha256: null,
    version: 1,
    hasContent: true,
    lastModifiedAt: '2026-03-12T10:00:00.000Z',
    createdAt: '2026-03-12T10:00:00.000Z',
    storageDownloadUri: null,
    thumbnailDownloadUri: null,
    scannedAt: null,
    ...partial,
  };
}
