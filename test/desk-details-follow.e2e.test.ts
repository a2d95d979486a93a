/**
 * A patient's file open in the details panel, while the re-check of synced files finds it lost on
 * the server — with no webhook to tell the app (no public address set up, as on most workstations).
 * Real server process and admin CLI, the real headless app and its renderer in Chromium.
 *
 * The panel and the list must not go on saying "Uploaded" with a download button until staff close
 * and reopen the file while the card on the Sync screen already says it is lost.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HeadlessApp } from '../electron/headless/main.js';
import { closeDesk, openDesk } from './helpers/desk.js';
import { runAdmin, type ServerProcess } from './helpers/processes.js';
import { tempDir } from './helpers/server.js';
import { waitFor, writeFile } from './helpers/sync.js';

const REMOTE = '/details-follow';
const scratch = tempDir('desk-details-follow');
const folder = path.join(scratch, 'scans');
const home = path.join(scratch, 'home');
let server: ServerProcess;
let headless: HeadlessApp;
let browser: Browser;
let page: Page;

async function admin(args: string[]): Promise<{ code: number | null; output: string }> {
  const result = await runAdmin(server.dataDir, args);
  return { code: result.code, output: result.stdout + result.stderr };
}

function fileOf(name: string) {
  const pairId = headless.app.settings.get('pairs')[0]!.id;
  return headless.app.engine.fileViews(pairId).find((file) => file.relativePath === name);
}

beforeAll(async () => {
  fs.mkdirSync(folder, { recursive: true });
  // Synced files are checked again every half second here (a clinic's default: every 4 hours).
  ({ server, headless, browser, page } = await openDesk(home, { folder: { path: folder, remoteBasePath: REMOTE, patientName: 'Jane Roe' }, engine: { recheckMs: 500 } }));
}, 60_000);

afterAll(() => closeDesk({ server, headless, browser }, scratch));

describe('the open details panel follows the re-check', () => {
  it('a file open in the patient browser turns "Lost on the server" when the re-check finds it lost, without being reopened', async () => {
    expect((await headless.app.status()).webhook.subscribed).toBe(false);
    for (const name of ['upper.stl', 'lower.stl']) writeFile(folder, name, Buffer.from(`solid ${name} ${'x'.repeat(3000)}`));
    await waitFor('both scans to be synced', () => fileOf('upper.stl')?.state === 'synced' && fileOf('lower.stl')?.state === 'synced', 30_000);
    const lowerId = fileOf('lower.stl')!.documentId!;

    await page.goto(headless.openUrl);
    await page.locator('article.pair-card').getByRole('button', { name: 'Patient files' }).click();
    await page.locator(`.tree-label[data-path="${REMOTE}"]`).click();
    const row = page.locator('.document-row[data-document="lower.stl"]');
    await expect.poll(() => row.locator('.col-status').innerText(), { timeout: 15_000 }).toContain('Uploaded');
    await row.click();
    const panel = page.getByRole('complementary', { name: 'Details of lower.stl' });
    await panel.getByRole('button', { name: 'Download', exact: true }).waitFor();

    // The scan is moved out of the folder (the list is read again when the app sees that: wait for that reading)…
    const reread = page.waitForResponse((response) => new URL(response.url()).pathname === '/bridge/call/searchDocuments', { timeout: 15_000 });
    fs.rmSync(path.join(folder, 'lower.stl'));
    await waitFor('the app to see the scan gone from the folder', () => headless.app.journal.get(fileOf('lower.stl')!.id)?.deletedLocally, 10_000);
    await (await reread).finished();
    // …and later a disk fault on the server takes its stored file.
    fs.rmSync(path.join(server.dataDir, 'content', 'objects', 'documents', lowerId), { recursive: true });
    const marked = await admin(['verify', '--mark-lost']);
    expect(marked.output).toMatch(/^marked 1 of 2 stored files lost/);

    // Nobody touches the page: the re-check's finding reaches the open panel and the list.
    await panel.getByText('Lost on the server.').waitFor({ timeout: 20_000 });
    expect(await panel.getByRole('button', { name: 'Download', exact: true }).count()).toBe(0);
    await expect.poll(() => row.locator('.col-status').innerText(), { timeout: 10_000 }).toContain('Lost on the server');
    expect(fileOf('lower.stl')).toMatchObject({ state: 'failed', error: { code: 'LOST_ON_SERVER' } });
    // The other file, still intact, still says so.
    await expect.poll(() => page.locator('.document-row[data-document="upper.stl"] .col-status').innerText()).toContain('Uploaded');
  }, 90_000);
});
