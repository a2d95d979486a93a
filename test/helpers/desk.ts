/**
 * A workstation as staff use it, for the desk-* tests: a real server process, a sync home connected
 * to it (optionally with one scan folder), the real headless app serving the built renderer, and
 * one page (1440×900, en-GB, downloads allowed) of the worker's Chromium to drive it.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { launchHeadless, type HeadlessApp, type HeadlessOptions } from '../../electron/headless/main.js';
import { ROOT, startServerProcess, type ServerProcess } from './processes.js';
import { closeContexts, useBrowser } from './renderer-page.js';
import { prepareSyncHome } from './sync.js';

export interface Desk {
  server: ServerProcess;
  headless: HeadlessApp;
  browser: Browser;
  page: Page;
}

export interface DeskOptions {
  /** A scan folder synced to the test patient under `remoteBasePath`, for the patient named so. */
  folder?: { path: string; remoteBasePath: string; patientName: string };
  /** Engine knobs (a short re-check interval, say). */
  engine?: HeadlessOptions['engine'];
  /** More options for the page's browser context (downloads, say). */
  page?: BrowserContextOptions;
}

/**
 * Starts everything, in the order a clinic would; `home` is created if need be. Chromium starts
 * meanwhile (it needs none of the rest), so its start-up is not waited for on its own.
 */
export async function openDesk(home: string, options: DeskOptions = {}): Promise<Desk> {
  const desk: Partial<Desk> = {};
  const browser = useBrowser().then((launched) => (desk.browser = launched));
  try {
    desk.server = await startServerProcess();
    await prepareSyncHome(home, {
      serverUrl: desk.server.url,
      ...(options.folder ? { folder: options.folder.path, remoteBasePath: options.folder.remoteBasePath, patientName: options.folder.patientName } : {}),
    });
    desk.headless = await launchHeadless({ home, firstRun: 'choose', rendererDir: path.join(ROOT, 'dist/renderer'), log: () => undefined, ...(options.engine ? { engine: options.engine } : {}) });
    desk.page = await (await browser).newPage({ viewport: { width: 1440, height: 900 }, locale: 'en-GB', acceptDownloads: true, ...options.page });
    return desk as Desk;
  } catch (error) {
    await browser.catch(() => undefined);
    await stopDesk(desk);
    throw error;
  }
}

async function stopDesk(desk: Partial<Desk>): Promise<void> {
  await closeContexts(desk.browser);
  await desk.headless?.stop();
  await desk.server?.stop();
}

/** Stops what was started (any part may be missing after a failed start) and removes `scratch`. */
export async function closeDesk(desk: Partial<Desk>, scratch: string): Promise<void> {
  await stopDesk(desk);
  fs.rmSync(scratch, { recursive: true, force: true });
}
