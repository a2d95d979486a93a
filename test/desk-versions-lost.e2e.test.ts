/**
 * The patient browser's details panel lists a file's versions and says which are lost on the
 * server: real server process, the admin CLI beside it, the real headless app and its renderer in
 * Chromium.
 *
 * IT marks two stored files lost (`verify --mark-lost`): an earlier version of one scan, and the
 * only version of another. Staff see each lost version as "Lost on the server", with when, and no
 * download button for it; the versions still stored download their very bytes. Once IT restores the
 * files from a backup (`verify --mark-restored`) the versions look like any other again.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HeadlessApp } from '../electron/headless/main.js';
import type { ApiClient } from '../electron/sync/api/api-client.js';
import { BridgeService } from '../electron/sync/app/bridge-service.js';
import { closeDesk, openDesk } from './helpers/desk.js';
import { runAdmin, type ServerProcess } from './helpers/processes.js';
import { axeViolations, SCREENS, settledScreenshot } from './helpers/axe.js';
import { PATIENT, tempDir } from './helpers/server.js';

/** The widths test/a11y-screens.e2e.test.ts checks: a desktop window, 200% zoom of 1024×768, a phone. */
const SIZES = [
  { name: '1440×900', width: 1440, height: 900 },
  { name: '200% of 1024×768', width: 512, height: 384 },
  { name: '360 wide', width: 360, height: 740 },
] as const;
const REMOTE = '/versions-ui';

const scratch = tempDir('desk-versions-lost');
const home = path.join(scratch, 'home');
const downloads = path.join(scratch, 'downloads');
let server: ServerProcess;
let headless: HeadlessApp;
let browser: Browser;
let page: Page;

const scans = {
  upperV1: Buffer.from(`solid upper v1 ${'a'.repeat(4000)}`),
  upperV2: Buffer.from(`solid upper v2 ${'b'.repeat(5000)}`),
  lower: Buffer.from(`solid lower ${'c'.repeat(3000)}`),
};

async function upload(api: ApiClient, fileName: string, bytes: Buffer, existing?: { id: string; sha256: string; storageUrl: string }): Promise<{ id: string; sha256: string; storageUrl: string }> {
  const created = existing ?? { ...(await api.createDocument(PATIENT, fileName, REMOTE)), sha256: '' };
  const file = path.join(scratch, `${fileName}-${bytes.length}`);
  fs.writeFileSync(file, bytes);
  const stored = await api.upload({ patientId: PATIENT, storageUrl: created.storageUrl, documentId: created.id, filePath: file, fileName, fileType: 'STL', size: bytes.length, ifMatch: existing ? existing.sha256 : null });
  return { id: created.id, storageUrl: created.storageUrl, sha256: stored!.sha256! };
}

const folderOf = (id: string) => path.join(server.dataDir, 'content', 'objects', 'documents', id);

/** Moves a stored file away (IT's backup keeps it): the whole document's, or one version's (`v1-…`). */
function loseFile(id: string, version: number): { from: string; aside: string } {
  const name = fs.readdirSync(folderOf(id)).find((entry) => entry.startsWith(`v${version}-`))!;
  const from = path.join(folderOf(id), name);
  const aside = path.join(scratch, `${id}-${name}`);
  fs.renameSync(from, aside);
  return { from, aside };
}



/** How far the page or its main area scrolls sideways (none is allowed), and version texts cut off at the panel's edge. */
async function overflow(): Promise<{ sideways: number; clipped: string[] }> {
  return page.evaluate(() => {
    const main = document.getElementById('main');
    const panel = document.querySelector('.details-panel')!.getBoundingClientRect();
    const clipped = [...document.querySelectorAll<HTMLElement>('.version-item, .version-item > *, .version-item .badge')]
      .filter((element) => {
        const box = element.getBoundingClientRect();
        return box.right > panel.right + 0.5 || box.left < panel.left - 0.5 || element.scrollWidth > element.clientWidth + 1;
      })
      .map((element) => `${element.className} "${(element.textContent ?? '').trim().slice(0, 30)}"`);
    return { sideways: Math.max(document.documentElement.scrollWidth - window.innerWidth, main ? main.scrollWidth - main.clientWidth : 0), clipped };
  });
}

async function openDetails(fileName: string): Promise<Locator> {
  const panel = page.locator('.details-panel');
  if ((await panel.count()) > 0) {
    await panel.getByRole('button', { name: 'Close details' }).click();
    await panel.waitFor({ state: 'detached' });
  }
  await page.locator(`.document-row[data-document="${fileName}"]`).click();
  await page.getByRole('complementary', { name: `Details of ${fileName}` }).waitFor();
  return page.locator('.details-panel');
}

async function versionItems(panel: Locator, count: number): Promise<Locator> {
  const items = panel.locator('.version-item');
  await expect.poll(() => items.count(), { timeout: 15_000 }).toBe(count);
  return items;
}

async function downloadVersion(panel: Locator, version: number): Promise<{ bytes: Buffer; name: string }> {
  const started = page.waitForEvent('download');
  await panel.getByRole('button', { name: `Download version ${version}`, exact: true }).click();
  const download = await started;
  const saved = path.join(downloads, `${version}-${download.suggestedFilename()}`);
  await download.saveAs(saved);
  return { bytes: fs.readFileSync(saved), name: download.suggestedFilename() };
}

beforeAll(async () => {
  fs.mkdirSync(SCREENS, { recursive: true });
  fs.mkdirSync(downloads, { recursive: true });
  ({ server, headless, browser, page } = await openDesk(home));
}, 60_000);

afterAll(() => closeDesk({ server, headless, browser }, scratch));

describe('versions lost on the server, in the patient browser', () => {
  it('a lost version says so and since when, with no download; the others download their bytes; restored, it looks normal again', async () => {
    const api = headless.app.apiClient();
    const upperV1 = await upload(api, 'upper.stl', scans.upperV1);
    const upper = await upload(api, 'upper.stl', scans.upperV2, upperV1);
    const lower = await upload(api, 'lower.stl', scans.lower);
    // Three more scans, so two lost files are not "most of the store" (verify would refuse).
    for (const name of ['bite.stl', 'left.stl', 'right.stl']) await upload(api, name, Buffer.from(`solid ${name} ${'d'.repeat(2000)}`));

    // A disk fault takes the first version of upper.stl (an earlier version) and lower.stl's only one.
    const lostFiles = [loseFile(upper.id, 1), loseFile(lower.id, 1)];
    const marked = await runAdmin(server.dataDir, ['verify', '--mark-lost']);
    expect(marked.stdout).toMatch(/^marked 2 of 6 stored files lost/);
    expect(marked.code).toBe(0);
    const lostAt = (await api.versions(PATIENT, upper.id)).find((version) => version.version === 1)!.contentLostAt!;
    // As the app writes dates (en-GB, medium date and short time), in the test's time zone.
    const shownAt = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(lostAt));

    await page.goto(headless.openUrl);
    await page.getByRole('button', { name: 'Patients', exact: true }).click();
    await page.locator('.browser-patients').getByRole('button', { name: /Jane Roe/ }).click();
    await page.locator('.document-row[data-document="upper.stl"]').waitFor({ timeout: 15_000 });

    // upper.stl: version 2 is current and downloads; version 1 is lost, says when, and offers nothing to click.
    let panel = await openDetails('upper.stl');
    let items = await versionItems(panel, 2);
    const current = items.nth(0);
    const earlier = items.nth(1);
    expect(await current.getAttribute('data-version')).toBe('2');
    expect(await current.getAttribute('data-lost')).toBe('false');
    expect(await current.innerText()).toMatch(/Version 2\s*Current/);
    expect(await current.innerText()).not.toContain('Lost');
    expect(await earlier.getAttribute('data-version')).toBe('1');
    expect(await earlier.getAttribute('data-lost')).toBe('true');
    expect(await earlier.locator('.badge').innerText()).toBe('Lost on the server');
    expect(await earlier.locator('.version-lost-note').innerText()).toBe(`Lost on the server since ${shownAt}. IT can restore it from a backup.`);
    expect(await earlier.getByRole('button').count()).toBe(0);
    expect(await panel.getByRole('button', { name: 'Download version 1' }).count()).toBe(0);
    expect((await downloadVersion(panel, 2)).bytes.equals(scans.upperV2)).toBe(true);
    await settledScreenshot(page, 'versions-lost-details');
    const violations = await axeViolations(page, 'an earlier version lost, the details open');

    // lower.stl: its only version is lost; the file has no content, nothing to download at all.
    panel = await openDetails('lower.stl');
    items = await versionItems(panel, 1);
    expect(await items.nth(0).getAttribute('data-lost')).toBe('true');
    expect(await items.nth(0).innerText()).toContain(`Lost on the server since ${shownAt}`);
    expect(await panel.getByRole('button', { name: /Download/ }).count()).toBe(0);
    violations.push(...(await axeViolations(page, 'the only version lost, the details open')));

    // Readable at each width the UI tests use: nothing scrolls sideways or is cut off at the panel's edge.
    panel = await openDetails('upper.stl');
    await versionItems(panel, 2);
    for (const size of SIZES) {
      await page.setViewportSize({ width: size.width, height: size.height });
      await panel.locator('.version-lost').scrollIntoViewIfNeeded();
      expect(await overflow(), size.name).toEqual({ sideways: 0, clipped: [] });
      if (size.width === 360) await settledScreenshot(page, 'versions-lost-details-360');
      violations.push(...(await axeViolations(page, `an earlier version lost, ${size.name}`)));
    }
    await page.setViewportSize({ width: 1440, height: 900 });
    expect(violations).toEqual([]);

    // The desktop shell: a save dialog, and the engine streams the version to the file; a lost one is refused in words.
    const saveTo = (name: string) => path.join(downloads, `desktop-${name}`);
    const desktop = new BridgeService(headless.app, { chooseSaveFile: async (name) => saveTo(name) });
    await expect(desktop.saveDocumentVersion(PATIENT, upper.id, 1)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'Its stored file is lost on the server; IT can restore it from a backup.' });
    await expect(desktop.saveDocumentVersion(PATIENT, upper.id, 9)).rejects.toMatchObject({ code: 'NOT_FOUND', message: 'The server has no version 9 of this file.' });
    expect(await desktop.saveDocumentVersion(PATIENT, upper.id, 2)).toBe(saveTo('upper.stl'));
    expect(fs.readFileSync(saveTo('upper.stl')).equals(scans.upperV2)).toBe(true);
    expect(fs.existsSync(`${saveTo('upper.stl')}.download`)).toBe(false);

    // IT restores both files from the backup: the versions look like any other, and version 1 downloads its bytes.
    for (const file of lostFiles) fs.renameSync(file.aside, file.from);
    const restored = await runAdmin(server.dataDir, ['verify', '--mark-restored']);
    expect(restored.stdout).toMatch(/^restored 2 of 2 files marked lost that are back intact/);
    expect(restored.code).toBe(0);
    panel = await openDetails('upper.stl');
    items = await versionItems(panel, 2);
    await expect.poll(() => items.nth(1).getAttribute('data-lost')).toBe('false');
    expect(await panel.locator('.version-lost').count()).toBe(0);
    expect(await panel.innerText()).not.toContain('Lost on the server');
    const saved = await downloadVersion(panel, 1);
    expect(saved.bytes.equals(scans.upperV1)).toBe(true);
    expect(saved.name).toBe('upper (version 1).stl');
    await settledScreenshot(page, 'versions-restored-details');
    // An earlier version is offered under a name of its own, not saved over the current file.
    expect(await desktop.saveDocumentVersion(PATIENT, upper.id, 1)).toBe(saveTo('upper (version 1).stl'));
    expect(fs.readFileSync(saveTo('upper (version 1).stl')).equals(scans.upperV1)).toBe(true);
    panel = await openDetails('lower.stl');
    items = await versionItems(panel, 1);
    expect(await items.nth(0).getAttribute('data-lost')).toBe('false');
    // The list was read before the restore: the versions say otherwise, so the file's details are read again.
    const content = () => panel.evaluate((element) => [...element.querySelectorAll('.details-list dt')].find((term) => term.textContent === 'Content')?.nextElementSibling?.textContent);
    await expect.poll(content, { timeout: 15_000 }).toBe('Uploaded');
    await expect.poll(() => page.locator('.document-row[data-document="lower.stl"]').innerText()).toContain('3 kB');
    expect((await downloadVersion(panel, 1)).bytes.equals(scans.lower)).toBe(true);
    expect(await axeViolations(page, 'versions restored')).toEqual([]);
  }, 180_000);
});
