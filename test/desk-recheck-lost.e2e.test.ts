/**
 * What staff see in the app when the re-check of synced files finds scans gone from the server:
 * real server process, the real headless app and its renderer in Chromium, real folders.
 *
 * 1. IT marks a stored file lost (`admin verify --mark-lost`): the scan still in the folder goes up
 *    again by itself — the card shows it moving and then synced, the history says why.
 * 2. A scan the server lost that is gone from the folder too: the card says what happened and what
 *    to do, offers no Retry that could do nothing, and a copy put back goes up by itself.
 * 3. A document deleted on the server: the whole reason is shown, Retry uploads the scan as a new
 *    document, and the patient's files show it.
 *
 * Such files must not read "could not be uploaded", Retry on a scan in neither place must not answer
 * "Nothing to try again: the files are already on their way", the engine's own finding must not be
 * shown as "Server said:", and the history must not list raw event names ("queued").
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HeadlessApp } from '../electron/headless/main.js';
import { GONE_FROM_SERVER_MESSAGE, PLAIN_MESSAGES } from '../shared/bridge-errors.js';
import { closeDesk, openDesk } from './helpers/desk.js';
import { runAdmin, type ServerProcess } from './helpers/processes.js';
import { axeViolations, SCREENS, settledScreenshot } from './helpers/axe.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { waitFor, writeFile } from './helpers/sync.js';

const REMOTE = '/recheck-ui';
const SCANS = ['upper.stl', 'lower.stl', 'bite.stl', 'left.stl', 'cbct.pdf', 'notes.pdf'];

const scratch = tempDir('desk-recheck-lost');
const folder = path.join(scratch, 'scans');
const home = path.join(scratch, 'home');
const bytes = new Map(SCANS.map((name) => [name, Buffer.from(`solid ${name} ${'x'.repeat(3000)}`)]));
let server: ServerProcess;
let headless: HeadlessApp;
let browser: Browser;
let page: Page;

async function admin(args: string[]): Promise<{ code: number | null; output: string }> {
  const result = await runAdmin(server.dataDir, args);
  return { code: result.code, output: result.stdout + result.stderr };
}

async function deleteOnServer(documentId: string): Promise<void> {
  const token = (await (await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) })).json()) as { access_token: string };
  const response = await fetch(`${server.url}/v1/patients/${PATIENT}/documents/${documentId}`, { method: 'DELETE', headers: { authorization: `Bearer ${token.access_token}`, 'organization-id': ORG } });
  expect(response.status).toBe(204);
}

function fileOf(name: string) {
  const pairId = headless.app.settings.get('pairs')[0]!.id;
  return headless.app.engine.fileViews(pairId).find((file) => file.relativePath === name);
}



/** Every state each file row shows and every announcement, in order, so quick changes are not missed between looks. */
async function record(): Promise<void> {
  await page.evaluate(() => {
    const seen: Record<string, string[]> = {};
    const said: string[] = [];
    Object.assign(window, { __states: seen, __said: said });
    const scan = () => {
      for (const row of document.querySelectorAll<HTMLElement>('.file-row[data-file]')) {
        const list = (seen[row.dataset.file!] ??= []);
        if (list[list.length - 1] !== row.dataset.state) list.push(row.dataset.state!);
      }
      const message = document.querySelector('[data-testid="sync-announcements"]')?.textContent ?? '';
      if (message && said[said.length - 1] !== message) said.push(message);
    };
    new MutationObserver(scan).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['data-state'] });
    scan();
  });
}

const recorded = (): Promise<{ states: Record<string, string[]>; said: string[] }> =>
  page.evaluate(() => ({ states: (window as unknown as { __states: Record<string, string[]> }).__states, said: (window as unknown as { __said: string[] }).__said }));

beforeAll(async () => {
  fs.mkdirSync(folder, { recursive: true });
  fs.mkdirSync(SCREENS, { recursive: true });
  // Synced files are checked again every half second here (a clinic's default: every 4 hours).
  ({ server, headless, browser, page } = await openDesk(home, { folder: { path: folder, remoteBasePath: REMOTE, patientName: 'Jane Roe' }, engine: { recheckMs: 500 } }));
}, 60_000);

afterAll(() => closeDesk({ server, headless, browser }, scratch));

describe('the re-check of synced files, as staff see it', () => {
  it('a lost scan goes up again; one gone from the folder too says what to do; one deleted on the server is retried as a new document', async () => {
    await page.goto(headless.openUrl);
    const card = page.locator('article.pair-card');
    await card.waitFor();
    for (const [name, content] of bytes) writeFile(folder, name, content);
    await card.getByText(`All ${SCANS.length} files synced and verified`).waitFor({ timeout: 30_000 });
    // The first sync is announced once the files are quiet; from then on, what the re-check changes.
    await record();
    await waitFor('the first sync to be announced', async () => (await recorded()).said.join(' ').includes(`${SCANS.length} files synced and verified`), 15_000);
    await record();
    const before = new Map(SCANS.map((name) => [name, fileOf(name)!.documentId!]));

    // A disk fault on the server takes two stored files; one of the two scans is gone from the folder too.
    for (const name of ['upper.stl', 'lower.stl']) fs.rmSync(path.join(server.dataDir, 'content', 'objects', 'documents', before.get(name)!), { recursive: true });
    fs.rmSync(path.join(folder, 'lower.stl'));
    const marked = await admin(['verify', '--mark-lost']);
    expect(marked.output).toMatch(/^marked 2 of 6 stored files lost/);
    expect(marked.code).toBe(0);

    // 2. In neither place: the card says what happened and what to do; nothing offers a Retry that cannot work.
    const lower = page.locator('.file-row[data-file="lower.stl"][data-state="failed"]');
    await lower.waitFor({ timeout: 20_000 });
    await page.locator('.file-row[data-file="upper.stl"][data-state="synced"]').waitFor({ timeout: 20_000 });
    await waitFor('upper.stl to be version 2', () => fileOf('upper.stl')?.version === 2 && fileOf('upper.stl')?.state === 'synced');
    const notice = card.locator('.notice-danger').first();
    expect(await notice.locator('strong').first().innerText()).toBe('One scan is no longer on the server');
    expect(await notice.innerText()).toContain(PLAIN_MESSAGES.LOST_ON_SERVER);
    expect(await card.getByRole('button', { name: 'Retry all' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Retry lower.stl' }).count()).toBe(0);
    // The card's state and counts come with the folder's next update, which may follow the file's by a moment.
    await expect.poll(() => card.locator('.pair-header .badge').innerText(), { timeout: 10_000 }).toContain('Needs attention');
    await expect.poll(() => card.locator('.count-chip').allInnerTexts(), { timeout: 10_000 }).toEqual(['5 synced', '1 failed']);
    expect(await card.locator('.pair-progress-text').innerText()).toContain('5 of 6 files synced');
    // The row says when the scan was found missing, not its old "synced" date, which read as if it were fine.
    const lowerFile = fileOf('lower.stl')!;
    expect(lowerFile.lostAt).toBeGreaterThan(lowerFile.syncedAt!);
    expect(await lower.locator('.file-row-progress').innerText()).toMatch(/ · found missing \S/);
    await page.getByRole('button', { name: 'Details of lower.stl' }).click();
    const why = page.getByRole('region', { name: 'Why lower.stl is not synced any more' });
    await why.waitFor();
    expect(await why.innerText()).toContain(PLAIN_MESSAGES.LOST_ON_SERVER);
    expect(await why.locator('.notice-detail').innerText()).toBe(`Details: document ${before.get('lower.stl')} on the server no longer has this scan's content, and the file is gone from the folder`);
    await settledScreenshot(page, 'recheck-lost-card');
    const violations = await axeViolations(page, 'a scan in neither place, its whole reason open');

    // 1. The scan still in the folder was seen going up again, and the screen reader heard both.
    const { states } = await recorded();
    expect(states['upper.stl']!.slice(0, 1)).toEqual(['synced']);
    expect(states['upper.stl']!.slice(1).some((state) => state === 'uploading' || state === 'queued' || state === 'verifying')).toBe(true);
    expect(states['upper.stl']!.at(-1)).toBe('synced');
    // Said once the files are quiet (a second and a half): polled, not waited for. The scan that went
    // up again is said to be one found missing on the server (not "synced and verified"), once.
    await waitFor('the screen reader to hear of both scans', async () => {
      const now = (await recorded()).said.join(' | ');
      return /1 scan is no longer on the server/.test(now) && /1 scan found missing on the server was uploaded again/.test(now);
    }, 15_000);
    const heard = (await recorded()).said.filter((message) => !message.includes(`${SCANS.length} files synced and verified`));
    // One message, or two if the upload ended after the first was said.
    expect(heard.every((message) => /^scans to Jane Roe: (1 scan found missing on the server was uploaded again|1 scan is no longer on the server|, )+\.$/.test(message)), heard.join(' | ')).toBe(true);
    expect(heard.join(' | ').match(/found missing on the server was uploaded again/g)).toHaveLength(1);
    expect(heard.join(' | ')).not.toMatch(/synced and verified|could not be uploaded/);

    // Its history says why it went up again, in words rather than event names.
    await page.getByRole('button', { name: 'Activity', exact: true }).click();
    await page.getByRole('tab', { name: 'Sync history' }).click();
    // The scan in neither place: when it was found missing, as on the card.
    const lowerEntry = page.locator('tr', { has: page.getByRole('button', { name: 'lower.stl', exact: true }) });
    expect(await lowerEntry.locator('td[data-column="verified"]').innerText()).toMatch(/^Found missing \S/);
    // The exported history says it too, for the clinic's records: when each scan was found missing, empty for the others.
    const exported = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export sync history (CSV)' }).click();
    const csvFile = path.join(scratch, 'history.csv');
    await (await exported).saveAs(csvFile);
    const [header, ...csvRows] = fs.readFileSync(csvFile, 'utf8').trim().split('\r\n');
    expect(header!.split(',').at(-1)).toBe('found missing on the server at');
    const foundMissing = (name: string) => new Set(csvRows.filter((row) => row.split(',')[3] === name).map((row) => row.split(',').at(-1)));
    for (const name of ['lower.stl', 'upper.stl']) {
      const [at, ...others] = foundMissing(name);
      expect(others, name).toEqual([]);
      expect(Date.parse(at!), name).toBeGreaterThan(Date.now() - 5 * 60_000);
      expect(new Date(Date.parse(at!)).toISOString()).toBe(at);
    }
    expect([...foundMissing('bite.stl')]).toEqual(['']);
    await page.getByRole('button', { name: 'upper.stl', exact: true }).click();
    const timeline = page.getByRole('region', { name: 'History of upper.stl' });
    await timeline.locator('li').nth(5).waitFor();
    const events = await timeline.locator('li .strong').allInnerTexts();
    expect(events).toEqual(['Waiting to upload', 'Uploaded', 'Verified on the server', 'Waiting to upload', expect.stringMatching(/^Uploaded/), 'Verified on the server']);
    expect(await timeline.locator('li').nth(3).innerText()).toContain("the server lost this scan's stored file");
    await settledScreenshot(page, 'recheck-lost-history');

    // The patient's files say the scan was lost, not that it is still to come.
    await page.getByRole('button', { name: 'Sync', exact: true }).click();
    await card.getByRole('button', { name: 'Patient files' }).click();
    await page.locator(`.tree-label[data-path="${REMOTE}"]`).click();
    const lostRow = page.locator('.document-row[data-document="lower.stl"]');
    await lostRow.waitFor({ timeout: 15_000 });
    // Polled: a virtual row's content is skipped (content-visibility: auto, innerText '') until the frame after it appears.
    await expect.poll(() => lostRow.locator('.col-status').innerText(), { timeout: 10_000 }).toContain('Lost on the server');
    await expect.poll(() => page.locator('.document-row[data-document="upper.stl"] .col-status').innerText(), { timeout: 10_000 }).toContain('Uploaded');
    await lostRow.click();
    await page.locator('.details-panel').getByText('Lost on the server.').waitFor();
    await settledScreenshot(page, 'recheck-lost-patient');
    // Names that fit the column are shown whole: none ends in an ellipsis for want of a fraction of a pixel.
    const cutNames = await page.locator('.document-row .middle-name-head').evaluateAll((heads) =>
      heads
        .filter((head) => {
          const text = document.createRange();
          text.selectNodeContents(head);
          return text.getBoundingClientRect().width > head.getBoundingClientRect().width + 0.01;
        })
        .map((head) => head.closest('.document-row')!.getAttribute('data-document')),
    );
    expect(cutNames).toEqual([]);
    violations.push(...(await axeViolations(page, 'the patient’s files with a lost document, its details open')));

    // What the reason says to do: the scan copied back into the folder goes up again by itself.
    await page.getByRole('button', { name: 'Sync', exact: true }).click();
    writeFile(folder, 'lower.stl', bytes.get('lower.stl')!);
    await card.getByText(`All ${SCANS.length} files synced and verified`).waitFor({ timeout: 20_000 });
    expect(fileOf('lower.stl')).toMatchObject({ state: 'synced', documentId: before.get('lower.stl'), version: 2 });
    await expect.poll(() => card.locator('.notice-danger').count(), { timeout: 10_000 }).toBe(0);

    // 3. A scan deleted on the server (misfiled, or not on purpose): the whole reason, then Retry.
    await deleteOnServer(before.get('bite.stl')!);
    await page.locator('.file-row[data-file="bite.stl"][data-state="failed"]').waitFor({ timeout: 20_000 });
    expect(await notice.locator('strong').first().innerText()).toBe('One scan is no longer on the server');
    expect(await notice.locator('.notice-message').innerText()).toBe(GONE_FROM_SERVER_MESSAGE);
    expect(await notice.innerText()).not.toContain('Server said');
    await page.getByRole('button', { name: 'Details of bite.stl' }).click();
    const gone = page.getByRole('region', { name: 'Why bite.stl is not synced any more' });
    await gone.waitFor();
    expect(await gone.locator('.notice-message').innerText()).toBe(GONE_FROM_SERVER_MESSAGE);
    expect(await gone.locator('.notice-detail').innerText()).toBe(`Details: document ${before.get('bite.stl')} is not on the server any more`);
    await settledScreenshot(page, 'recheck-gone-card');
    violations.push(...(await axeViolations(page, 'a scan deleted on the server, its whole reason open')));

    await page.getByRole('button', { name: 'Retry bite.stl' }).click();
    const biteId = fileOf('bite.stl')!.id;
    await waitFor('bite.stl to go up again as a new document', () => fileOf('bite.stl')?.state === 'synced', 30_000).catch((error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(fileOf('bite.stl'))}\n${JSON.stringify(headless.app.journal.history(biteId))}`);
    });
    await card.getByText(`All ${SCANS.length} files synced and verified`).waitFor({ timeout: 20_000 });
    const again = fileOf('bite.stl')!;
    expect(again.documentId).not.toBe(before.get('bite.stl'));
    expect(again.version).toBe(1);

    // The patient's files show the new document, once.
    await card.getByRole('button', { name: 'Patient files' }).click();
    await page.locator(`.tree-label[data-path="${REMOTE}"]`).click();
    const row = page.locator('.document-row[data-document="bite.stl"]');
    await row.waitFor({ timeout: 15_000 });
    expect(await row.count()).toBe(1);
    await expect.poll(() => row.innerText(), { timeout: 10_000 }).toContain('Uploaded');
    await settledScreenshot(page, 'recheck-gone-patient');
    expect(violations).toEqual([]);
  }, 90_000);
});
