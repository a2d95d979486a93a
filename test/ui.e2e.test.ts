// The UI end to end: real Chromium (playwright-core + Debian's chromium) against the real headless
// twin, a real server on a real socket and real folders. Screenshots of every screen go to
// test/artifacts/screens/ to be looked at.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAIN_MESSAGES } from '../shared/bridge-errors.js';
import { launchHeadless, type HeadlessApp } from '../electron/headless/main.js';
import { loadConfig } from '../server/config.js';
import { startServer, type RunningServer } from '../server/start.js';
import { makeArchStl, makePdf, garbageBytes } from './fixtures/scans.js';
import { paintedScreenshot, useBrowser } from './helpers/renderer-page.js';
import { ADMIN_TOKEN, CLIENT, ORG, SEED_FILE } from './helpers/server.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const RENDERER_DIR = path.join(ROOT, 'dist/renderer');
const SCREENS = path.join(ROOT, 'test/artifacts/screens');
const SMALL_LIMIT = '2MB';
const CASE = '2026-03-12 Upper arch';

/** Every folder made here, removed once the file's tests are done (servers and apps are stopped by then). */
const made: string[] = [];

function temp(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `patient-docs-ui-${prefix}-`));
  made.push(dir);
  return dir;
}

afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

async function startRealServer(dataDir: string, port: number, maxUpload: string): Promise<RunningServer> {
  return startServer(
    loadConfig({ PORT: String(port), PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: SEED_FILE, PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN, PATIENT_DOCS_LOG_LEVEL: 'silent', PATIENT_DOCS_MAX_UPLOAD_BYTES: maxUpload }),
    { logger: false },
  );
}

/** The picture a person sees: transitions run to their end, then two frames painted. */
async function screenshot(page: Page, name: string): Promise<void> {
  await page.evaluate(() => {
    for (const animation of document.getAnimations()) animation.finish();
  });
  await paintedScreenshot(page, path.join(SCREENS, `${name}.png`));
}

/** Records every state each file row shows, in order, so fast transitions are not missed between polls. */
async function recordFileStates(page: Page): Promise<void> {
  await page.evaluate(() => {
    const seen: Record<string, string[]> = {};
    (window as unknown as { __fileStates: Record<string, string[]> }).__fileStates = seen;
    const scan = () => {
      for (const row of document.querySelectorAll<HTMLElement>('.file-row[data-file]')) {
        const file = row.dataset.file!;
        const state = row.dataset.state!;
        const list = (seen[file] ??= []);
        if (list[list.length - 1] !== state) list.push(state);
      }
    };
    new MutationObserver(scan).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-state'] });
    scan();
  });
}

async function fileStates(page: Page): Promise<Record<string, string[]>> {
  return page.evaluate(() => (window as unknown as { __fileStates: Record<string, string[]> }).__fileStates);
}

/** The worker's Chromium (its contexts closed when the file ends), and one page in it that each describe takes to its own app. */
let browser: Browser;
let page: Page;
beforeAll(async () => {
  browser = await useBrowser();
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, acceptDownloads: true, locale: 'en-GB' });
  page = await context.newPage();
});

describe('UI end to end (headless twin, real server, real folders)', () => {
  let server: RunningServer;
  let serverPort: number;
  const serverData = temp('server');
  const scanFolder = temp('scans');
  const downloads = temp('downloads');
  let headless: HeadlessApp;

  beforeAll(async () => {
    mkdirSync(SCREENS, { recursive: true });
    server = await startRealServer(serverData, 0, SMALL_LIMIT);
    serverPort = Number(new URL(server.url).port);
    headless = await launchHeadless({ home: temp('home'), port: 0, firstRun: 'choose', rendererDir: RENDERER_DIR, log: () => undefined });
    // Any free port for the webhook listener: the default (8787) may be held by another app or test.
    // A new scan counts as written once it has not changed for 200 ms (a clinic's default: 2 s).
    await headless.app.updateSettings({ webhook: { port: 0 }, settleMs: 200 });
  }, 120_000);

  afterAll(async () => {
    // The page leaves the app (its event stream goes with it) before the app stops.
    await page?.goto('about:blank');
    await headless?.stop();
    await server?.close();
  });

  it('first run, "connect to a server": a bad secret names exactly what is wrong, the right one connects', async () => {
    await page.goto(headless.openUrl);
    await expect(page.getByRole('heading', { name: 'Welcome to Patient Docs' })).toBeDefined();
    await page.getByText('Connect to a server').click();
    await page.getByLabel('Server address', { exact: true }).fill(server.url);
    await page.getByLabel('Client ID', { exact: true }).fill(CLIENT.id);
    await page.getByLabel('Client secret', { exact: true }).fill('not-the-secret');
    await page.getByLabel('Organization ID', { exact: true }).fill(ORG);
    await page.getByRole('button', { name: 'Test connection' }).click();
    const result = page.getByTestId('connection-result');
    await result.waitFor();
    expect(await result.locator('.connection-step.failed .connection-step-label').innerText()).toContain('Sign in with the client ID and secret');
    expect(await result.innerText()).toContain(PLAIN_MESSAGES.BAD_CREDENTIALS);
    expect(await result.locator('.connection-step.passed').count()).toBe(1); // the server was reached
    await screenshot(page, 'first-run-bad-secret');

    await page.getByLabel('Client secret', { exact: true }).fill(CLIENT.secret);
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    await page.getByRole('heading', { name: 'Sync', exact: true }).waitFor();
    await page.getByText('No folders are synced yet').waitFor();
    // The clinic by the name the server gives (GET /v1/organizations/{id}), never as a raw id.
    await page.locator('.connection-organization', { hasText: 'Smile Clinic' }).waitFor();
    expect(await page.locator('.connection-summary').innerText()).not.toContain(ORG.slice(0, 8));
    await screenshot(page, 'sync-empty');
  });

  it('settings: saved through the bridge, the secret only ever shown masked', async () => {
    await page.getByRole('button', { name: 'Settings', exact: true }).click();
    await page.getByLabel('Files at once').fill('2');
    // Slow enough that the scan of the next test is seen uploading, with its speed and time left.
    await page.getByLabel('Speed limit (MB/s)').fill('0.5');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Saved').waitFor();
    expect(headless.app.limiter.limit).toBe(500_000);
    expect(await page.locator('.masked-secret').innerText()).not.toContain(CLIENT.secret);
    const organization = page.locator('.field.read-only', { has: page.locator('.field-label', { hasText: /^Organization$/ }) });
    expect(await organization.locator('.field-value').innerText()).toBe('Smile Clinic');
    await screenshot(page, 'settings');
  });

  it('add a pair, drop an STL and a PDF: each goes queued → uploading → verifying → synced on screen', async () => {
    await page.getByRole('button', { name: 'Sync', exact: true }).click();
    await page.getByRole('button', { name: 'Add folder' }).first().click();
    await page.getByRole('dialog').getByRole('button', { name: /Jane Roe/ }).click();
    await page.getByLabel('Scan folder').fill(scanFolder);
    await page.getByLabel('Folder in the patient’s record').fill('/scans');
    await page.getByRole('button', { name: 'Sync to Jane Roe' }).click();
    await page.locator('.pair-card').waitFor();
    await recordFileStates(page);

    mkdirSync(path.join(scanFolder, CASE));
    writeFileSync(path.join(scanFolder, CASE, 'upper-arch.stl'), makeArchStl({ triangles: 30_000 }));
    writeFileSync(path.join(scanFolder, CASE, 'order-form.pdf'), makePdf('Order form: upper arch, Jane Roe'));
    // 1.5 MB at the 0.5 MB/s limit set in Settings: about three seconds of upload with live progress.
    const uploading = page.locator(`.file-row[data-file="${CASE}/upper-arch.stl"][data-state="uploading"]`);
    await expect.poll(async () => (await uploading.innerText().catch(() => '')).match(/left/) !== null, { timeout: 30_000, interval: 100 }).toBe(true);
    await paintedScreenshot(page, path.join(SCREENS, 'sync-uploading.png'));
    for (const file of [`${CASE}/upper-arch.stl`, `${CASE}/order-form.pdf`]) {
      await page.locator(`.file-row[data-file="${file}"][data-state="synced"]`).waitFor({ timeout: 60_000 });
    }
    await screenshot(page, 'sync-synced');
    const states = await fileStates(page);
    for (const file of [`${CASE}/upper-arch.stl`, `${CASE}/order-form.pdf`]) {
      const seen = states[file]!.filter((state) => ['queued', 'uploading', 'verifying', 'synced'].includes(state));
      expect(seen, `${file} showed ${states[file]!.join(' → ')}`).toEqual(['queued', 'uploading', 'verifying', 'synced']);
    }

    await page.getByRole('button', { name: 'Settings', exact: true }).click();
    await page.getByLabel('Speed limit (MB/s)').fill('');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Saved').waitFor();
    expect(headless.app.limiter.limit).toBe(0);
    await page.getByRole('button', { name: 'Sync', exact: true }).click();
  }, 120_000);

  it('a file over the server limit fails with the 413 in plain language, and Retry works once the limit is raised', async () => {
    writeFileSync(path.join(scanFolder, CASE, 'full-resolution.ply'), garbageBytes(3_000_000));
    const failedRow = page.locator(`.file-row[data-file="${CASE}/full-resolution.ply"][data-state="failed"]`);
    await failedRow.waitFor({ timeout: 60_000 });
    expect(await failedRow.innerText()).toContain(PLAIN_MESSAGES.TOO_LARGE);
    expect(await page.locator('.pair-card .notice-danger').innerText()).toMatch(/Server said:/);
    await screenshot(page, 'sync-failed-413');

    await server.close();
    server = await startRealServer(serverData, serverPort, '50MB');
    await page.getByRole('button', { name: 'Retry full-resolution.ply' }).click();
    await page.locator(`.file-row[data-file="${CASE}/full-resolution.ply"][data-state="synced"]`).waitFor({ timeout: 60_000 });
    await page.getByText('All 3 files synced and verified').waitFor({ timeout: 30_000 });
    await screenshot(page, 'sync-done');
  }, 120_000);

  it('patient browser: the tree from the paths, the STL thumbnail, the 3D viewer and a byte-exact download', async () => {
    await page.getByRole('button', { name: 'Patients', exact: true }).click();
    await page.locator('.browser-patients').getByRole('button', { name: /Jane Roe/ }).click();
    // The tree opens collapsed below its first level: open "scans" by its chevron, then pick the case.
    await page.locator('.tree-label[data-path="/scans"] .tree-twisty').click();
    await page.locator(`.tree-label[data-path="/scans/${CASE}"]`).click();
    await page.getByTestId('document-count').filter({ hasText: '3 files' }).waitFor();
    // Thumbnails are made in the background after upload: wait for the STL's to load.
    const thumbnail = page.locator('.document-row[data-document="upper-arch.stl"] img.thumbnail');
    await expect.poll(async () => {
      if ((await thumbnail.count()) === 0) await page.locator('.tree-label[data-path="/"]').click().then(() => page.locator(`.tree-label[data-path="/scans/${CASE}"]`).click());
      return thumbnail.evaluate((image: HTMLImageElement) => image.complete && image.naturalWidth > 0).catch(() => false);
    }, { timeout: 30_000, interval: 500 }).toBe(true);
    await screenshot(page, 'patients');

    await page.locator('.document-row[data-document="upper-arch.stl"]').click();
    await page.getByRole('button', { name: 'View in 3D' }).waitFor();
    await screenshot(page, 'patients-details');
    const downloadStarted = page.waitForEvent('download');
    await page.locator('.details-panel').getByRole('button', { name: 'Download', exact: true }).click();
    const download = await downloadStarted;
    const saved = path.join(downloads, download.suggestedFilename());
    await download.saveAs(saved);
    expect(download.suggestedFilename()).toBe('upper-arch.stl');
    expect(readFileSync(saved).equals(readFileSync(path.join(scanFolder, CASE, 'upper-arch.stl')))).toBe(true);

    await page.getByRole('button', { name: 'View in 3D' }).click();
    const viewer = page.locator('.model-canvas');
    await viewer.and(page.locator('[data-viewer-state="ready"], [data-viewer-state="failed"]')).waitFor({ timeout: 30_000 });
    await screenshot(page, 'viewer-3d');
    const problem = await page.locator('.model-overlay-error').allInnerTexts();
    expect(problem, 'the viewer could not load the model').toEqual([]);
    expect(await viewer.getAttribute('data-viewer-state')).toBe('ready');
    await page.keyboard.press('Escape');
  }, 120_000);

  it('patient browser: the folder tree opens collapsed below the first level, opens on click and with the keys, and a folder filters the list', async () => {
    const VISIT = '2026-04-02 Lower arch';
    mkdirSync(path.join(scanFolder, VISIT, 'photos'), { recursive: true });
    writeFileSync(path.join(scanFolder, VISIT, 'lower-arch.stl'), makeArchStl({ triangles: 2_000 }));
    writeFileSync(path.join(scanFolder, VISIT, 'photos', 'bite-notes.pdf'), makePdf('Bite notes, Jane Roe'));
    await page.getByRole('button', { name: 'Sync', exact: true }).click();
    await page.getByText('All 5 files synced and verified').waitFor({ timeout: 60_000 });

    await page.getByRole('button', { name: 'Patients', exact: true }).click();
    await page.locator('.browser-patients').getByRole('button', { name: /Jane Roe/ }).click();
    const count = page.getByTestId('document-count');
    await count.filter({ hasText: /^5 files$/ }).waitFor();
    const tree = page.getByRole('tree', { name: 'Folders' });
    const item = (folder: string) => tree.locator(`[role="treeitem"][data-path="${folder}"]`);
    const focused = () => page.evaluate(() => document.activeElement?.getAttribute('data-path') ?? null);
    const shown = () => tree.getByRole('treeitem').evaluateAll((items) => items.map((entry) => `${entry.getAttribute('aria-level')} ${entry.getAttribute('data-path')}`));

    // Collapsed below the first level: the root ("All files", open and selected) and its one child, closed.
    await item('/scans').waitFor();
    expect(await shown()).toEqual(['1 /', '2 /scans']);
    expect(await item('/').getAttribute('aria-expanded')).toBe('true');
    expect(await item('/').getAttribute('aria-selected')).toBe('true');
    expect(await item('/scans').getAttribute('aria-expanded')).toBe('false');
    expect(await item('/scans').getAttribute('aria-selected')).toBe('false');
    expect(await tree.getAttribute('aria-busy')).toBe('false');
    await screenshot(page, 'patients-tree-collapsed');

    // The chevron opens and closes a folder without changing which files are listed.
    await item('/scans').locator('.tree-twisty').click();
    expect(await item('/scans').getAttribute('aria-expanded')).toBe('true');
    expect(await shown()).toEqual(['1 /', '2 /scans', `3 /scans/${CASE}`, `3 /scans/${VISIT}`]);
    expect(await item(`/scans/${CASE}`).getAttribute('aria-expanded')).toBeNull(); // no subfolder: nothing to open
    expect(await item(`/scans/${VISIT}`).getAttribute('aria-expanded')).toBe('false');
    expect(await item('/').getAttribute('aria-selected')).toBe('true');
    expect(await count.innerText()).toBe('5 files');
    await item('/scans').locator('.tree-twisty').click();
    expect(await item('/scans').getAttribute('aria-expanded')).toBe('false');
    expect(await shown()).toEqual(['1 /', '2 /scans']);

    // The keys: ↓ moves, → opens then goes in, ← closes then goes out; Enter and Space show a folder's files.
    await item('/').focus();
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toBe('/scans');
    await page.keyboard.press('ArrowRight');
    expect(await item('/scans').getAttribute('aria-expanded')).toBe('true');
    expect(await focused()).toBe('/scans');
    await page.keyboard.press('ArrowRight');
    expect(await focused()).toBe(`/scans/${CASE}`);
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toBe(`/scans/${VISIT}`);
    await page.keyboard.press('ArrowRight');
    expect(await item(`/scans/${VISIT}`).getAttribute('aria-expanded')).toBe('true');
    expect(await item(`/scans/${VISIT}/photos`).getAttribute('aria-level')).toBe('4');
    await page.keyboard.press('ArrowLeft');
    expect(await item(`/scans/${VISIT}`).getAttribute('aria-expanded')).toBe('false');
    expect(await item(`/scans/${VISIT}/photos`).count()).toBe(0);
    await page.keyboard.press('ArrowLeft');
    expect(await focused()).toBe('/scans');
    expect(await item('/').getAttribute('aria-selected')).toBe('true'); // moving never selects
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    await count.filter({ hasText: `2 files in /scans/${VISIT}` }).waitFor();
    expect(await item(`/scans/${VISIT}`).getAttribute('aria-selected')).toBe('true');
    expect(await item('/').getAttribute('aria-selected')).toBe('false');
    expect(await item(`/scans/${VISIT}`).getAttribute('aria-expanded')).toBe('true'); // showing a folder opens it
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toBe(`/scans/${VISIT}/photos`);
    await page.keyboard.press(' ');
    await count.filter({ hasText: `1 file in /scans/${VISIT}/photos` }).waitFor();
    expect(await page.locator('.document-row').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-document')))).toEqual(['bite-notes.pdf']);
    await screenshot(page, 'patients-tree-keyboard');

    // A click on a folder shows its files (and only its files).
    await item(`/scans/${CASE}`).click();
    await count.filter({ hasText: `3 files in /scans/${CASE}` }).waitFor();
    expect((await page.locator('.document-row').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-document')))).sort()).toEqual(['full-resolution.ply', 'order-form.pdf', 'upper-arch.stl']);
    expect(await item(`/scans/${CASE}`).getAttribute('aria-selected')).toBe('true');
    expect(await tree.locator('[role="treeitem"][aria-selected="true"]').count()).toBe(1);
    await item('/').click();
    await count.filter({ hasText: /^5 files$/ }).waitFor();
  }, 120_000);

  it('activity: a webhook delivery appears with its verdict', async () => {
    const status = (await (await fetch(new URL('/bridge/call/getStatus', headless.openUrl), { method: 'POST', headers: { authorization: `Bearer ${headless.token}`, 'content-type': 'application/json' }, body: '[]' })).json()) as { value: { webhook: { localUrl: string | null } } };
    const listener = status.value.webhook.localUrl;
    expect(listener).toBeTruthy();
    await page.getByRole('button', { name: 'Activity', exact: true }).click();
    await page.getByRole('tab', { name: 'Server notifications' }).waitFor();
    // A delivery whose signature does not match: the listener must refuse it, and the UI must show that.
    const forged = await fetch(listener!, { method: 'POST', headers: { 'content-type': 'application/json', signature: 'ab'.repeat(64) }, body: JSON.stringify({ messageId: crypto.randomUUID(), eventType: 'document.uploaded', source: 'patient-docs' }) });
    expect(forged.status).toBeGreaterThanOrEqual(400);
    await page.locator('tr[data-verdict="rejected"]').waitFor({ timeout: 15_000 });
    await screenshot(page, 'activity');
    await page.getByRole('tab', { name: 'Sync history' }).click();
    await page.getByRole('button', { name: `${CASE}/upper-arch.stl` }).click();
    await page.locator('.timeline-list li').first().waitFor();
    // The file's history opens beside the table, not over it, and the row's verified time stays in view.
    const layout = await page.locator('tr.selected td[data-column="verified"]').evaluate((cell) => {
      const table = cell.closest('.history-table')!.getBoundingClientRect();
      return { cellEnd: cell.getBoundingClientRect().right, tableEnd: table.right, historyStart: document.querySelector('.timeline')!.getBoundingClientRect().left };
    });
    expect(layout.tableEnd).toBeLessThanOrEqual(layout.historyStart);
    expect(layout.cellEnd).toBeLessThanOrEqual(layout.tableEnd + 0.5);
    await screenshot(page, 'activity-history');
  });

  it('a file whose name hides a right-to-left override fails, and the screen spells the character out', async () => {
    writeFileSync(path.join(scanFolder, CASE, 'scan\u202Efdp.stl'), 'solid x\nendsolid x\n');
    await page.getByRole('button', { name: 'Sync', exact: true }).click();
    const row = page.locator('.file-row[data-state="failed"]').filter({ hasText: 'scan⟨U+202E⟩fdp.stl' });
    await row.waitFor({ timeout: 30_000 });
    const text = await row.innerText();
    // Shown raw, the name would read "scanlts.pdf" and turn the reason after it around.
    expect(text).not.toContain('\u202E');
    expect(text).toContain('must not contain bidirectional control characters');
  });
});

describe('first run, "this computer runs the server"', () => {
  it('starts the bundled server with a demo clinic and lands on the sync view', async () => {
    const app = await launchHeadless({ home: temp('embedded-home'), port: 0, firstRun: 'choose', rendererDir: RENDERER_DIR, log: () => undefined });
    try {
      await page.goto(app.openUrl);
      await page.getByText('This computer runs the server').click();
      await screenshot(page, 'first-run-embedded');
      await page.getByRole('button', { name: 'Start the server here' }).click();
      await page.getByRole('heading', { name: 'Sync', exact: true }).waitFor({ timeout: 30_000 });
      expect(await page.locator('.connection-summary').innerText()).toContain('Server on this computer');
      expect(app.app.mode()).toBe('embedded');
    } finally {
      await page.goto('about:blank');
      await app.stop();
    }
  }, 120_000);
});
