/**
 * The built renderer in real Chromium against a scripted engine: every bridge call and the event
 * stream are answered from the test, so a screen can be shown in a state that is slow or awkward to
 * reach with real folders (three kinds of failure at once, a deep tree, a narrow window). The
 * end-to-end file (ui.e2e.test.ts) drives the real headless app; these tests pin what the screens
 * make of given views.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { AppStatus, BridgeApi, BridgeEvent, FileView, PairView, StateCounts } from '../../shared/bridge.js';
import { FILE_STATES } from '../../shared/bridge.js';
import type { BridgeErrorCode } from '../../shared/bridge-errors.js';
import { PLAIN_MESSAGES } from '../../shared/bridge-errors.js';
import type { DocumentDto, PatientDto } from '../../shared/schemas.js';

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
  /** Sends events to the page (over a fresh event-stream connection). */
  emit(events: BridgeEvent[]): Promise<void>;
  close(): Promise<void>;
}

/** Saves a screenshot once two frames have been painted (layout and fonts settled). */
export async function paintedScreenshot(page: Page, file: string): Promise<void> {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  await page.screenshot({ path: file });
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}

export async function openRenderer(browser: Browser, handlers: Handlers, options: { width?: number; height?: number; deviceScaleFactor?: number; events?: BridgeEvent[] } = {}): Promise<RendererPage> {
  const context: BrowserContext = await browser.newContext({ viewport: { width: options.width ?? 1440, height: options.height ?? 900 }, deviceScaleFactor: options.deviceScaleFactor ?? 1, locale: 'en-GB', acceptDownloads: true });
  const page = await context.newPage();
  const calls: RendererPage['calls'] = [];
  let pending: BridgeEvent[] = [...(options.events ?? [])];
  const all = { ...defaultHandlers(), ...handlers } as Record<string, (...args: unknown[]) => unknown>;
  await page.route(`${ORIGIN}/**`, async (route) => {
    const url = new URL(route.request().url());
    if (url.pathname.startsWith('/bridge/call/')) {
      const method = url.pathname.slice('/bridge/call/'.length);
      const args = JSON.parse(route.request().postData() ?? '[]') as unknown[];
      calls.push({ method, args });
      const handler = all[method];
      try {
        if (!handler) throw new Refusal('UNAVAILABLE', `not scripted: ${method}`);
        const value = await handler(...args);
        await route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ ok: true, value: value ?? null }) });
      } catch (error) {
        const refusal = error instanceof Refusal ? error : new Refusal('INTERNAL', String(error));
        await route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ ok: false, error: { code: refusal.code, message: refusal.message, ...(refusal.detail ? { detail: refusal.detail } : {}) } }) });
      }
      return;
    }
    if (url.pathname === '/bridge/events') {
      const events = pending;
      pending = [];
      // A long retry: the page reconnects only when a test emits (emit() reloads the stream).
      const body = ['retry: 200', ...events.map((event) => `data: ${JSON.stringify(event)}`)].join('\n\n') + '\n\n';
      await route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' }, body });
      return;
    }
    const file = url.pathname === '/' ? '/index.html' : url.pathname;
    try {
      const body = readFileSync(path.join(RENDERER_DIR, path.normalize(file)));
      await route.fulfill({ status: 200, contentType: CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream', body });
    } catch {
      await route.fulfill({ status: 404, body: 'not found' });
    }
  });
  await page.goto(`${ORIGIN}/#token=test`);
  return {
    page,
    calls,
    emit: async (events) => {
      pending.push(...events);
      // The stream "closed" after each answer; the browser reconnects within its retry delay.
      await page.waitForTimeout(600);
    },
    close: () => context.close(),
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
