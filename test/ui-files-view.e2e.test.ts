// The patient browser's Files view in real Chromium at the sizes of a scanner PC (1366×768, and the
// same screen at 125 % display scaling), against a scripted engine.
// Side columns: the folder tree and the details panel are made wider by dragging their handle or by
// the keyboard (a focusable separator whose value is the width), folded away and back, and stay as
// staff left them after a restart.
// Scan dates: the "Scanned" column and date filter, against a server that answers the scan date range
// as the real one does (test/scan-times.test.ts checks the server).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentDto, SearchBody } from '../shared/schemas.js';
import { documentDto, openRenderer, paintedScreenshot, patient, useBrowser, type RendererPage } from './helpers/renderer-page.js';

const SCREENS = path.resolve(import.meta.dirname, 'artifacts/screens');
const SIZES = [
  { label: '1366', width: 1366, height: 768, deviceScaleFactor: 1 },
  { label: '1366-125', width: 1093, height: 614, deviceScaleFactor: 1.25 },
] as const;

const JANE = patient('Jane Pearson', 1);
const THREE_SHAPE = ['80021_20180115_0934_Pearson_0.stl', '80021_20180115_0934_Pearson_1.stl'];
/** The side columns' files: two similar scans and a referral. */
const PANE_DOCUMENTS: DocumentDto[] = [
  ...THREE_SHAPE.map((fileName, index) => documentDto({ fileName, path: '/scans/OrthoCAD_Export_2026-03-11_Case_0001', scannedAt: '2026-03-11T16:45:00.000Z' }, index + 1)),
  documentDto({ fileName: 'Referral Dr Meyer.pdf', path: '/scans/OrthoCAD_Export_2026-03-11_Case_0002' }, 3),
];

function searchPaneDocuments(_patientId: string, body: SearchBody) {
  const found = PANE_DOCUMENTS.filter((document) => (!body.id || body.id.includes(document.id)) && (!body.path || body.path === '/' || document.path === body.path || document.path.startsWith(`${body.path}/`)));
  return { documents: found, total: found.length, offset: body.offset ?? 0, limit: body.limit ?? 50 };
}

let browser: Browser;
beforeAll(async () => {
  mkdirSync(SCREENS, { recursive: true });
  browser = await useBrowser();
});

/** test/artifacts/screens/<name>.png */
function screenshot(page: Page, name: string): Promise<void> {
  return paintedScreenshot(page, path.join(SCREENS, `${name}.png`));
}

const widthOf = async (locator: Locator) => (await locator.boundingBox())!.width;

/** Pulls a handle sideways with the mouse, in steps, as a hand would. */
async function drag(page: Page, handle: Locator, dx: number): Promise<void> {
  const box = (await handle.boundingBox())!;
  const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x + dx / 2, y, { steps: 4 });
  await page.mouse.move(x + dx, y, { steps: 4 });
  await page.mouse.up();
}

for (const size of SIZES) {
  describe(`side columns at ${size.width}×${size.height}, scale ${size.deviceScaleFactor}`, () => {
    let app: RendererPage;
    beforeAll(async () => {
      app = await openRenderer(browser, { listPatients: () => ({ patients: [JANE], total: 1, offset: 0, limit: 100 }), searchDocuments: searchPaneDocuments }, size);
    });
    afterAll(async () => {
      await app?.close();
    });

    const tree = () => app.page.locator('.browser-tree');
    const details = () => app.page.locator('.details-panel');
    const treeHandle = () => app.page.getByRole('separator', { name: 'Width of the folder tree' });
    const detailsHandle = () => app.page.getByRole('separator', { name: 'Width of the details' });
    const valueOf = async (handle: Locator) => Number(await handle.getAttribute('aria-valuenow'));

    async function openPatient(): Promise<void> {
      await app.page.getByRole('button', { name: 'Patients', exact: true }).click();
      await app.page.locator('.patient-option').first().click();
      await app.page.getByTestId('document-count').filter({ hasText: /^3 files$/ }).waitFor();
    }

    /** The app started again on this computer (the page loaded anew, its storage kept). */
    async function restart(): Promise<void> {
      await app.page.reload();
      await openPatient();
    }

    it('the folder tree: wider by keyboard and by drag, folded away and back by Enter and by its buttons, as left after a restart', async () => {
      const page = app.page;
      await openPatient();
      const start = await widthOf(tree());
      const handle = treeHandle();
      await handle.focus();
      await page.keyboard.press('ArrowRight');
      await expect.poll(() => widthOf(tree())).toBeGreaterThan(start + 20);
      expect(await valueOf(handle)).toBe(Math.round(await widthOf(tree())));
      const keyed = await widthOf(tree());
      await drag(page, handle, 60);
      await expect.poll(() => widthOf(tree())).toBeGreaterThan(keyed + 50);
      const dragged = await widthOf(tree());
      expect(Math.abs((await valueOf(handle)) - dragged)).toBeLessThanOrEqual(1);

      // Enter folds it to a strip; the files get the room.
      const files = await widthOf(page.locator('.document-table'));
      await handle.focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => widthOf(tree())).toBeLessThan(50);
      expect(await valueOf(handle)).toBe(0);
      expect(await widthOf(page.locator('.document-table'))).toBeGreaterThan(files + dragged - 60);
      await screenshot(page, `panes-tree-folded-${size.label}`);
      // Remembered: folded after a restart, and unfolded by its button at the width it had.
      await restart();
      await expect.poll(() => widthOf(tree())).toBeLessThan(50);
      await page.getByRole('button', { name: 'Show folders' }).click();
      await expect.poll(() => widthOf(tree())).toBeGreaterThan(dragged - 2);
      expect(await widthOf(tree())).toBeLessThan(dragged + 2);
      // Folding by the header's button leaves the keyboard on the button that unfolds it.
      await page.getByRole('button', { name: 'Hide folders' }).click();
      await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Show folders');
      await page.keyboard.press('Enter');
      await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Hide folders');
      await page.getByRole('treeitem').first().waitFor();
      await restart();
      expect(Math.abs((await widthOf(tree())) - dragged)).toBeLessThanOrEqual(2);
      await treeHandle().press('Home');
    });

    it('the details: wider by keyboard and by drag, folded to a strip and back, as left after a restart; the long name reads whole', async () => {
      const page = app.page;
      await page.locator(`.document-row[data-document="${THREE_SHAPE[1]}"]`).click();
      await page.locator('.details-title').waitFor();
      const start = await widthOf(details());
      const handle = detailsHandle();
      await handle.focus();
      // Left moves the handle left: the details, on its right, grow.
      await page.keyboard.press('ArrowLeft');
      await expect.poll(() => widthOf(details())).toBeGreaterThan(start + 20);
      const keyed = await widthOf(details());
      expect(Math.abs((await valueOf(handle)) - keyed)).toBeLessThanOrEqual(1);
      await drag(page, handle, -40);
      await expect.poll(() => widthOf(details())).toBeGreaterThan(keyed + 30);
      const dragged = await widthOf(details());
      expect(await page.locator('.details-title').innerText()).toBe(THREE_SHAPE[1]);
      await screenshot(page, `panes-details-wider-${size.label}`);

      // Folded to a strip: the files take the room, the strip still names the file.
      const names = await widthOf(page.locator(`.document-row[data-document="${THREE_SHAPE[0]}"] .col-name`));
      await page.getByRole('button', { name: 'Hide details' }).click();
      await expect.poll(() => widthOf(details())).toBeLessThan(50);
      expect(await widthOf(page.locator(`.document-row[data-document="${THREE_SHAPE[0]}"] .col-name`))).toBeGreaterThan(names + 100);
      expect(await page.getByRole('complementary', { name: `Details of ${THREE_SHAPE[1]}` }).count()).toBe(1);
      expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Show details');
      expect(await valueOf(handle)).toBe(0);
      await screenshot(page, `panes-details-folded-${size.label}`);

      // Remembered: a file opened after a restart opens folded; Enter on the handle unfolds it at its width.
      await restart();
      await page.locator(`.document-row[data-document="${THREE_SHAPE[0]}"]`).click();
      await expect.poll(() => widthOf(details())).toBeLessThan(50);
      await detailsHandle().focus();
      await page.keyboard.press('Enter');
      await page.locator('.details-title').waitFor();
      await expect.poll(() => widthOf(details())).toBeGreaterThan(dragged - 2);
      expect(await widthOf(details())).toBeLessThan(dragged + 2);
      await restart();
      await page.locator(`.document-row[data-document="${THREE_SHAPE[0]}"]`).click();
      await page.locator('.details-title').waitFor();
      expect(Math.abs((await widthOf(details())) - dragged)).toBeLessThanOrEqual(2);
      await page.evaluate(() => window.localStorage.clear());
    });
  });
}

// --- Scan dates ---------------------------------------------------------------------------------

const DAY_MS = 86_400_000;

/** A time `days` ago at this hour and minute of this computer's clock. */
function localTime(days: number, hour: number, minute: number): string {
  const now = new Date();
  return new Date(now.getFullYear(), now.getMonth(), now.getDate() - days, hour, minute).toISOString();
}

const UPLOADED_TODAY = localTime(0, 0, 5);
/** The scan dates' files: scanned yesterday and synced today, undated, and old. */
const DATED_DOCUMENTS: DocumentDto[] = [
  // Scanned yesterday afternoon, synced late (just after midnight).
  documentDto({ fileName: '80021_20180115_0934_Pearson_0.stl', path: '/scans/Case_80021', scannedAt: localTime(1, 16, 45), lastModifiedAt: UPLOADED_TODAY }, 1),
  documentDto({ fileName: '80021_20180115_0934_Pearson_1.stl', path: '/scans/Case_80021', scannedAt: localTime(1, 16, 47), lastModifiedAt: UPLOADED_TODAY }, 2),
  // No workstation dated it: it counts by its upload.
  documentDto({ fileName: 'Referral Dr Meyer.pdf', path: '/scans/Consent', scannedAt: null, lastModifiedAt: UPLOADED_TODAY }, 3),
  documentDto({ fileName: 'old_model.stl', path: '/scans/Case_70001', scannedAt: localTime(10, 11, 0), lastModifiedAt: localTime(10, 11, 30) }, 4),
];

/** As the server answers: the range counts a document without a scan time by its upload. */
function searchDatedDocuments(_patientId: string, body: SearchBody) {
  const scanDate = (document: DocumentDto) => document.scannedAt ?? document.lastModifiedAt;
  const found = DATED_DOCUMENTS.filter(
    (document) =>
      (!body.id || body.id.includes(document.id)) &&
      (!body.path || body.path === '/' || document.path === body.path || document.path.startsWith(`${body.path}/`)) &&
      (!body.scannedFrom || scanDate(document) >= body.scannedFrom) &&
      (!body.scannedTo || scanDate(document) < body.scannedTo),
  );
  const offset = body.offset ?? 0;
  const limit = body.limit ?? 50;
  return { documents: found.slice(offset, offset + limit), total: found.length, offset, limit };
}

/** The Scanned cell of a file: its text, and whether it is wholly in view and not cut. */
function scannedCell(page: Page, fileName: string) {
  return page.locator(`.document-row[data-document="${fileName}"] .col-scanned`).evaluate((cell) => {
    const box = cell.getBoundingClientRect();
    const table = cell.closest('.document-table')!.getBoundingClientRect();
    const shown = [...cell.children].filter((child) => getComputedStyle(child).display !== 'none') as HTMLElement[];
    return {
      text: shown.map((child) => child.innerText).join(' | '),
      title: cell.getAttribute('title') ?? '',
      inView: box.width > 40 && box.left >= table.left && box.right <= table.right && box.right <= window.innerWidth,
      uncut: shown.every((child) => child.scrollWidth <= child.clientWidth + 0.5),
    };
  });
}

/** The ways this computer writes a day (the cell shows the medium form, or the short one in a narrow column). */
function daysAsShown(page: Page, at: string): Promise<string[]> {
  return page.evaluate((value) => [new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' }).format(new Date(value)), new Intl.DateTimeFormat(undefined, { dateStyle: 'short' }).format(new Date(value))], at);
}

for (const size of SIZES) {
  describe(`scan dates at ${size.width}×${size.height}, scale ${size.deviceScaleFactor}`, () => {
    let app: RendererPage;
    beforeAll(async () => {
      app = await openRenderer(browser, { listPatients: () => ({ patients: [JANE], total: 1, offset: 0, limit: 100 }), searchDocuments: searchDatedDocuments }, size);
    });
    afterAll(async () => {
      await app?.close();
    });

    const count = (text: RegExp) => app.page.getByTestId('document-count').filter({ hasText: text }).waitFor();
    const lastRange = () => {
      const searches = app.calls.filter((call) => call.method === 'searchDocuments').map((call) => call.args[1] as SearchBody);
      const last = searches.at(-1)!;
      return { scannedFrom: last.scannedFrom, scannedTo: last.scannedTo };
    };

    it('shows when each file was scanned, in view and uncut; a file no workstation dated shows its upload time, said so', async () => {
      const page = app.page;
      await page.getByRole('button', { name: 'Patients', exact: true }).click();
      await page.locator('.patient-option').first().click();
      await count(/^4 files$/);
      expect(await page.locator('.document-header .col-scanned').innerText()).toMatch(/scanned/i);
      const scan = await scannedCell(page, DATED_DOCUMENTS[0]!.fileName);
      const [medium, short] = await daysAsShown(page, DATED_DOCUMENTS[0]!.scannedAt!);
      expect(scan.inView, JSON.stringify(scan)).toBe(true);
      expect(scan.uncut, JSON.stringify(scan)).toBe(true);
      expect(scan.text.includes(medium!) || scan.text.includes(short!), `${scan.text} names ${medium} or ${short}`).toBe(true);
      expect(scan.title).toMatch(/^Scanned /);
      // Not the upload, which was today.
      const [uploadDay] = await daysAsShown(page, UPLOADED_TODAY);
      expect(scan.text).not.toContain(uploadDay);
      const undated = await scannedCell(page, 'Referral Dr Meyer.pdf');
      expect(undated.inView && undated.uncut, JSON.stringify(undated)).toBe(true);
      expect(undated.text).toContain('upload time');
      expect(undated.title).toMatch(/^No scan time recorded; uploaded /);
      await screenshot(page, `scan-dates-files-${size.label}`);
    });

    it('filters by scan date: yesterday finds yesterday’s scans synced today, today the undated upload, a chosen day its own', async () => {
      const page = app.page;
      const filter = page.getByRole('combobox', { name: 'Scan date' });
      await filter.selectOption('yesterday');
      await count(/^2 files$/);
      const names = () => page.locator('.document-row[data-document]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-document')).sort());
      expect(await names()).toEqual([DATED_DOCUMENTS[0]!.fileName, DATED_DOCUMENTS[1]!.fileName]);
      // Yesterday as this computer's calendar has it, midnight to midnight.
      expect(lastRange()).toEqual({ scannedFrom: localTime(1, 0, 0), scannedTo: localTime(0, 0, 0) });
      expect((await scannedCell(page, DATED_DOCUMENTS[0]!.fileName)).inView).toBe(true);
      await screenshot(page, `scan-dates-yesterday-${size.label}`);

      await filter.selectOption('today');
      await count(/^1 file$/);
      expect(await names()).toEqual(['Referral Dr Meyer.pdf']);

      await filter.selectOption('week');
      await count(/^3 files$/);
      expect(lastRange()).toEqual({ scannedFrom: localTime(6, 0, 0), scannedTo: new Date(Date.parse(localTime(0, 0, 0)) + DAY_MS).toISOString() });

      await filter.selectOption('day');
      const day = page.getByLabel('Day scanned');
      const tenDaysAgo = new Date(localTime(10, 12, 0));
      await day.fill(`${tenDaysAgo.getFullYear()}-${String(tenDaysAgo.getMonth() + 1).padStart(2, '0')}-${String(tenDaysAgo.getDate()).padStart(2, '0')}`);
      await count(/^1 file$/);
      expect(await names()).toEqual(['old_model.stl']);
      expect(lastRange()).toEqual({ scannedFrom: localTime(10, 0, 0), scannedTo: localTime(9, 0, 0) });

      await filter.selectOption('any');
      await count(/^4 files$/);
    });

    it('keeps the Scanned column in view beside an open file’s details, which say when it was scanned and uploaded', async () => {
      const page = app.page;
      await page.locator(`.document-row[data-document="${DATED_DOCUMENTS[0]!.fileName}"]`).click();
      const details = page.getByTestId('details-scanned');
      await details.waitFor();
      const [medium] = await daysAsShown(page, DATED_DOCUMENTS[0]!.scannedAt!);
      expect(await details.innerText()).toContain(medium);
      const scan = await scannedCell(page, DATED_DOCUMENTS[1]!.fileName);
      expect(scan.inView && scan.uncut, JSON.stringify(scan)).toBe(true);
      await screenshot(page, `scan-dates-details-${size.label}`);
      await page.getByRole('button', { name: 'Close details' }).click();
    });
  });
}
