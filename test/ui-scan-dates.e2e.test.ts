// The Files view's "Scanned" column and date filter in real Chromium, at the sizes of a scanner PC
// (1366×768, and the same screen at 125 % display scaling), against a scripted engine whose server
// answers the scan date range as the real one does (test/scan-times.test.ts checks the server).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentDto, SearchBody } from '../shared/schemas.js';
import { documentDto, launchBrowser, openRenderer, paintedScreenshot, patient, type RendererPage } from './helpers/renderer-page.js';

const SCREENS = path.resolve(import.meta.dirname, 'artifacts/screens');
const SIZES = [
  { label: '1366', width: 1366, height: 768, deviceScaleFactor: 1 },
  { label: '1366-125', width: 1093, height: 614, deviceScaleFactor: 1.25 },
] as const;

const JANE = patient('Jane Pearson', 1);
const DAY_MS = 86_400_000;

/** A time `days` ago at this hour and minute of this computer's clock. */
function localTime(days: number, hour: number, minute: number): string {
  const now = new Date();
  return new Date(now.getFullYear(), now.getMonth(), now.getDate() - days, hour, minute).toISOString();
}

const UPLOADED_TODAY = localTime(0, 0, 5);
const DOCUMENTS: DocumentDto[] = [
  // Scanned yesterday afternoon, synced late (just after midnight).
  documentDto({ fileName: '80021_20180115_0934_Pearson_0.stl', path: '/scans/Case_80021', scannedAt: localTime(1, 16, 45), lastModifiedAt: UPLOADED_TODAY }, 1),
  documentDto({ fileName: '80021_20180115_0934_Pearson_1.stl', path: '/scans/Case_80021', scannedAt: localTime(1, 16, 47), lastModifiedAt: UPLOADED_TODAY }, 2),
  // No workstation dated it: it counts by its upload.
  documentDto({ fileName: 'Referral Dr Meyer.pdf', path: '/scans/Consent', scannedAt: null, lastModifiedAt: UPLOADED_TODAY }, 3),
  documentDto({ fileName: 'old_model.stl', path: '/scans/Case_70001', scannedAt: localTime(10, 11, 0), lastModifiedAt: localTime(10, 11, 30) }, 4),
];

/** As the server answers: the range counts a document without a scan time by its upload. */
function searchDocuments(_patientId: string, body: SearchBody) {
  const scanDate = (document: DocumentDto) => document.scannedAt ?? document.lastModifiedAt;
  const found = DOCUMENTS.filter(
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

let browser: Browser;
beforeAll(async () => {
  mkdirSync(SCREENS, { recursive: true });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

function screenshot(page: Page, name: string): Promise<void> {
  return paintedScreenshot(page, path.join(SCREENS, `scan-dates-${name}.png`));
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
      app = await openRenderer(browser, { listPatients: () => ({ patients: [JANE], total: 1, offset: 0, limit: 100 }), searchDocuments }, size);
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
      const scan = await scannedCell(page, DOCUMENTS[0]!.fileName);
      const [medium, short] = await daysAsShown(page, DOCUMENTS[0]!.scannedAt!);
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
      await screenshot(page, `files-${size.label}`);
    });

    it('filters by scan date: yesterday finds yesterday’s scans synced today, today the undated upload, a chosen day its own', async () => {
      const page = app.page;
      const filter = page.getByRole('combobox', { name: 'Scan date' });
      await filter.selectOption('yesterday');
      await count(/^2 files$/);
      const names = () => page.locator('.document-row[data-document]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-document')).sort());
      expect(await names()).toEqual([DOCUMENTS[0]!.fileName, DOCUMENTS[1]!.fileName]);
      // Yesterday as this computer's calendar has it, midnight to midnight.
      expect(lastRange()).toEqual({ scannedFrom: localTime(1, 0, 0), scannedTo: localTime(0, 0, 0) });
      expect((await scannedCell(page, DOCUMENTS[0]!.fileName)).inView).toBe(true);
      await screenshot(page, `yesterday-${size.label}`);

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
      await page.locator(`.document-row[data-document="${DOCUMENTS[0]!.fileName}"]`).click();
      const details = page.getByTestId('details-scanned');
      await details.waitFor();
      const [medium] = await daysAsShown(page, DOCUMENTS[0]!.scannedAt!);
      expect(await details.innerText()).toContain(medium);
      const scan = await scannedCell(page, DOCUMENTS[1]!.fileName);
      expect(scan.inView && scan.uncut, JSON.stringify(scan)).toBe(true);
      await screenshot(page, `details-${size.label}`);
      await page.getByRole('button', { name: 'Close details' }).click();
    });
  });
}
