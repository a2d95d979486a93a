/**
 * A scan written yesterday and synced only today (the scanner PC was off overnight) is dated
 * yesterday: the engine sends the file's own time, the server keeps it, and the Files view shows it
 * as scanned yesterday and finds it with the "Scanned yesterday" filter, not with "Scanned today".
 * Real server process, the real headless app and its renderer in Chromium.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HeadlessApp } from '../electron/headless/main.js';
import type { DocumentDto } from '../shared/schemas.js';
import { closeDesk, openDesk } from './helpers/desk.js';
import type { ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { waitFor, writeFile } from './helpers/sync.js';

const REMOTE = '/scan-dates';
const SCAN = 'Case_80021/80021_20180115_0934_Pearson_0.stl';
const scratch = tempDir('desk-scan-dates');
const folder = path.join(scratch, 'scans');
const home = path.join(scratch, 'home');
let server: ServerProcess;
let headless: HeadlessApp;
let browser: Browser;
let page: Page;

/** Yesterday at 16:45 on this computer's clock (the browser's too). */
const now = new Date();
const scannedAt = new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1, 16, 45, 12);

function fileOf(name: string) {
  const pairId = headless.app.settings.get('pairs')[0]!.id;
  return headless.app.engine.fileViews(pairId).find((file) => file.relativePath === name);
}

/** The document as the server lists it to an integrator. */
async function stored(): Promise<DocumentDto> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret });
  const { access_token: token } = (await (await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: form })).json()) as { access_token: string };
  const response = await fetch(`${server.url}/v1/patients/${PATIENT}/documents/search`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'organization-id': ORG, 'content-type': 'application/json' },
    body: JSON.stringify({ path: REMOTE, fileName: '80021' }),
  });
  return ((await response.json()) as { documents: DocumentDto[] }).documents[0]!;
}

beforeAll(async () => {
  // Written yesterday afternoon; the app starts today.
  const file = writeFile(folder, SCAN, Buffer.from(`solid pearson ${'x'.repeat(4000)}`));
  fs.utimesSync(file, scannedAt, scannedAt);
  ({ server, headless, browser, page } = await openDesk(home, { folder: { path: folder, remoteBasePath: REMOTE, patientName: 'Jane Roe' } }));
}, 60_000);

afterAll(() => closeDesk({ server, headless, browser }, scratch));

describe('a scan synced the day after it was made', () => {
  it('is dated by its file, shown as scanned yesterday and found by yesterday’s filter only', async () => {
    await waitFor('the scan to be synced', () => fileOf(SCAN)?.state === 'synced', 30_000);
    // Whole seconds: the file system keeps the time it was given.
    expect((await stored()).scannedAt).toBe(scannedAt.toISOString());

    await page.goto(headless.openUrl);
    await page.locator('article.pair-card').getByRole('button', { name: 'Patient files' }).click();
    const row = page.locator(`.document-row[data-document="${path.basename(SCAN)}"]`);
    await row.waitFor({ timeout: 15_000 });
    const when = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short' }).format(scannedAt);
    expect(await row.locator('.col-scanned').getAttribute('title')).toBe(`Scanned ${when}`);
    expect(await row.locator('.col-scanned').innerText()).toContain(when);

    const filter = page.getByRole('combobox', { name: 'Scan date' });
    await filter.selectOption('today');
    await page.getByText('No file matches').waitFor();
    await filter.selectOption('yesterday');
    await row.waitFor();
    await page.getByTestId('document-count').filter({ hasText: /^1 file$/ }).waitFor();
  });
});
