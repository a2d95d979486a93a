// A clinic's day in the app, in real Chromium, at the sizes of a scanner PC: 1366×768, and the
// same screen at 125 % display scaling (1093×614 CSS pixels drawn at 1.25). The engine is scripted
// (test/helpers/renderer-page.ts) with what such a day brings: long scanner names that differ only
// at the end, patients of the same name, a 300-slice CBCT series, a failure in a second folder, an
// empty file. Screenshots of each screen go to test/artifacts/screens/clinic-day-*.png.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FileView } from '../shared/bridge.js';
import { PLAIN_MESSAGES } from '../shared/bridge-errors.js';
import { nameMatchesQuery } from '../shared/name-search.js';
import { matchesPatientFilter } from '../shared/patient-identifiers.js';
import type { DocumentDto, PatientDto, SearchBody } from '../shared/schemas.js';
import { makeArchStl } from './fixtures/scans.js';
import { counts, documentDto, fileView, openRenderer, ORIGIN_URL, paintedScreenshot, pairView, patient, useBrowser, type Handlers, type RendererPage } from './helpers/renderer-page.js';

const SCREENS = path.resolve(import.meta.dirname, 'artifacts/screens');
const SIZES = [
  { label: '1366', width: 1366, height: 768, deviceScaleFactor: 1 },
  // Windows at 125 %: a 1366×768 screen gives the page 1093×614 CSS pixels.
  { label: '1366-125', width: 1093, height: 614, deviceScaleFactor: 1.25 },
] as const;

const THREE_SHAPE = ['80021_20180115_0934_Pearson_0.stl', '80021_20180115_0934_Pearson_1.stl'];
const ITERO = ['76391186_shell_occlusion_u.stl', '76391186_shell_occlusion_l.stl'];
const CBCT = '/CBCT/2026-03-11 Sirona Orthophos SL 3D';
const ORTHOCAD = Array.from({ length: 10 }, (_, index) => `OrthoCAD_Export_2026-03-11_Case_${String(index + 1).padStart(4, '0')}`);
const EMPTY_FILE = 'Case_80021/80021_20180115_0934_Pearson_bite.stl';
const REFUSED = '2026-03-12_Pearson_consent/consent_refusal_Pearson_2026-03-12.pdf';

let browser: Browser;
beforeAll(async () => {
  mkdirSync(SCREENS, { recursive: true });
  browser = await useBrowser();
});

// --- The day ------------------------------------------------------------------------------------

const chart = (value: string) => ({ system: 'chart', value });
const PATIENTS: PatientDto[] = [
  patient('Jane Pearson', 1),
  { ...patient('Jane Pearson', 2), birthDate: '1980-03-12', identifiers: [chart('C-20417')] },
  patient('John Pearson', 3),
  patient('Anna Müller', 4),
  patient('José García', 5),
  patient("Siobhán O'Brien", 6),
  // Same birth date, names one letter apart: the chart number tells them apart.
  { ...patient('Smith, John', 7), birthDate: '1984-03-02', identifiers: [{ system: 'itero', value: 'ORD-55' }, chart('10231')] },
  { ...patient('Smith, Jon', 8), birthDate: '1984-03-02', identifiers: [chart('10232')] },
  { ...patient('Pearson, Johanna Elisabeth Margarethe', 9), birthDate: '1991-07-23', identifiers: [chart('20031')] },
  { ...patient('Pearson, Johanna Elisabeth Margarete', 10), birthDate: '1991-07-23', identifiers: [chart('20032')] },
];

function chairOneFiles(): FileView[] {
  const at = Date.parse('2026-03-12T16:00:00Z');
  const files: FileView[] = [];
  const synced = (relativePath: string, minutesAgo: number) => files.push(fileView({ pairId: 'chair-1', relativePath, remotePath: `/scans/${relativePath.slice(0, relativePath.lastIndexOf('/'))}`, syncedAt: at - minutesAgo * 60_000, size: 18_400_000 }));
  [...THREE_SHAPE.map((name) => `Case_80021/${name}`), ...ITERO.map((name) => `iTero_76391186/${name}`)].forEach((relativePath, index) => synced(relativePath, index));
  for (let slice = 1; slice <= 300; slice += 1) synced(`CBCT/IM${slice}`, 30 + slice);
  ORTHOCAD.forEach((folder, index) => synced(`${folder}/model.stl`, 400 + index));
  for (let index = 11; index <= 26; index += 1) synced(`Visit_2026-02-${String(index).padStart(2, '0')}/scan.stl`, 500 + index);
  files.push(fileView({ pairId: 'chair-1', relativePath: EMPTY_FILE, size: 0, bytesDone: 0, state: 'failed', syncedAt: null, error: { code: 'EMPTY_FILE', message: PLAIN_MESSAGES.EMPTY_FILE } }));
  return files;
}

function chairOne() {
  const files = chairOneFiles();
  const caseNames = [...new Set(files.map((file) => file.relativePath.slice(0, file.relativePath.indexOf('/'))))];
  const cases = caseNames.map((name) => {
    const own = files.filter((file) => file.relativePath.startsWith(`${name}/`) && file.state === 'synced');
    const total = name === 'CBCT' ? 1 : own.length;
    return { path: name, counts: counts({ synced: own.length }), bytesDone: own.length * 18_400_000, bytesTotal: own.length * 18_400_000, items: { done: total, total }, skipped: name === 'Case_80021' ? 1 : 0 };
  });
  const syncedCount = files.filter((file) => file.state === 'synced').length;
  const items = cases.reduce((sum, entry) => sum + entry.items.total, 0);
  return {
    files,
    pair: pairView({
      id: 'chair-1',
      folder: 'C:\\Users\\Reception\\Documents\\3Shape exports\\chair 1',
      patientId: PATIENTS[0]!.id,
      patientName: 'Jane Pearson',
      state: 'idle',
      counts: counts({ synced: syncedCount }),
      bytesDone: syncedCount * 18_400_000,
      bytesTotal: syncedCount * 18_400_000,
      cases,
      items: { done: items, total: items },
      skipped: 1,
    }),
  };
}

function chairTwo() {
  const refused = fileView({ pairId: 'chair-2', relativePath: REFUSED, state: 'failed', syncedAt: null, error: { code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT } });
  return {
    files: [refused],
    pair: pairView({
      id: 'chair-2',
      folder: 'C:\\Users\\Reception\\Documents\\iTero exports\\chair 2',
      patientId: PATIENTS[0]!.id,
      patientName: 'Jane Pearson',
      state: 'attention',
      counts: counts({ failed: 1 }),
      cases: [{ path: '2026-03-12_Pearson_consent', counts: counts({ failed: 1 }), bytesDone: 0, bytesTotal: 1000, items: { done: 0, total: 1 }, skipped: 0 }],
      items: { done: 0, total: 1 },
      lastError: { code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT },
      failureReasons: [{ code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT, count: 1, fileNames: [REFUSED] }],
    }),
  };
}

function documents(): DocumentDto[] {
  let index = 0;
  const stored = (fileName: string, folder: string, fileType?: string): DocumentDto =>
    documentDto({ fileName, path: folder, hasContent: true, storageDownloadUri: `${ORIGIN_URL}/content/arch.stl?sig=1`, ...(fileType ? { fileType } : {}) }, ++index);
  return [
    ...THREE_SHAPE.map((name) => stored(name, '/scans/Case_80021')),
    ...ITERO.map((name) => stored(name, '/scans/iTero_76391186')),
    stored('Referral Dr Meyer.pdf', '/scans/Consent'),
    ...ORTHOCAD.map((folder) => stored('model.stl', `/scans/${folder}`)),
    // As the server sorts names: IM1, IM10, IM100, …, IM2 (the app must count them).
    ...Array.from({ length: 300 }, (_, slice) => `IM${slice + 1}`)
      .sort()
      .map((name) => stored(name, `/scans${CBCT}`, 'DCM')),
  ];
}

function day(): Handlers {
  const one = chairOne();
  const two = chairTwo();
  const stored = documents();
  return {
    listPairs: () => [one.pair, two.pair],
    listFiles: (input) => {
      const files = input.pairId === 'chair-1' ? one.files : two.files;
      return { files, total: files.length };
    },
    listPatients: (query) => {
      const found = PATIENTS.filter((entry) => matchesPatientFilter(entry, query, nameMatchesQuery));
      return { patients: found, total: found.length, offset: 0, limit: query.limit ?? 100 };
    },
    searchDocuments: (patientId, body: SearchBody) => {
      const found = (patientId === PATIENTS[0]!.id ? stored : []).filter(
        (document) =>
          (!body.id || body.id.includes(document.id)) &&
          (!body.path || body.path === '/' || document.path === body.path || document.path.startsWith(`${body.path}/`)) &&
          (!body.fileType || document.fileType === body.fileType) &&
          (!body.fileName || document.fileName.toLowerCase().includes(body.fileName.toLowerCase())),
      );
      const offset = body.offset ?? 0;
      const limit = body.limit ?? 50;
      return { documents: found.slice(offset, offset + limit), total: found.length, offset, limit };
    },
  };
}

// --- What staff see -------------------------------------------------------------------------------

/** Transitions settled, so the picture is what a person sees. */
function screenshot(page: Page, name: string): Promise<void> {
  return paintedScreenshot(page, path.join(SCREENS, `clinic-day-${name}.png`));
}

/**
 * What a cut name shows on screen: the part of its start that is not under the ellipsis (by the
 * characters' own boxes) and its end, and whether that end is wholly inside the name's box.
 */
function shownName(name: Locator): Promise<{ full: string; shown: string; tailInView: boolean }> {
  return name.evaluate((element) => {
    const head = element.querySelector<HTMLElement>('.middle-name-head')!;
    const tail = element.querySelector<HTMLElement>('.middle-name-tail')!;
    const box = element.getBoundingClientRect();
    const headBox = head.getBoundingClientRect();
    const text = head.firstChild;
    let visible = '';
    if (text) {
      const range = document.createRange();
      for (let index = 0; index < (text.textContent ?? '').length; index += 1) {
        range.setStart(text, index);
        range.setEnd(text, index + 1);
        // A character is shown when it ends before the head's edge less room for the ellipsis.
        if (range.getBoundingClientRect().right <= headBox.right - (head.scrollWidth > head.clientWidth ? 8 : 0) + 0.5) visible += text.textContent![index];
      }
    }
    // What is in view of the name's box: its own, cut by every ancestor that clips, and the window.
    let left = box.left;
    let right = Math.min(box.right, window.innerWidth);
    for (let parent = element.parentElement; parent; parent = parent.parentElement) {
      if (getComputedStyle(parent).overflowX === 'visible') continue;
      const clip = parent.getBoundingClientRect();
      left = Math.max(left, clip.left);
      right = Math.min(right, clip.right);
    }
    const tailBox = tail.getBoundingClientRect();
    // Nothing drawn over the end either (a count, a sticky cell): the tail is what is at its last characters.
    const onTop = document.elementFromPoint(tailBox.right - 2, tailBox.top + tailBox.height / 2);
    return {
      full: element.getAttribute('title') ?? '',
      shown: `${visible}${head.scrollWidth > head.clientWidth ? '…' : ''}${tail.textContent}`,
      tailInView: tailBox.width > 0 && tailBox.left >= left - 0.5 && tailBox.right <= right + 0.5 && onTop !== null && tail.contains(onTop),
    };
  });
}

/** The listed patients' second lines, each drawn whole inside the list (not cut, not hidden). */
async function expectWholeDetails(column: Locator, expected: string[]): Promise<void> {
  const details = column.locator('.patient-option-detail');
  expect(await details.allInnerTexts()).toEqual(expected);
  for (const detail of await details.all()) {
    const drawn = await detail.evaluate((element) => {
      const box = element.getBoundingClientRect();
      const list = element.closest('.patient-options')!.getBoundingClientRect();
      return { whole: element.scrollWidth <= element.clientWidth + 0.5, inside: box.left >= list.left - 0.5 && box.right <= list.right + 0.5 };
    });
    expect(drawn, await detail.innerText()).toEqual({ whole: true, inside: true });
  }
}

async function expectTellable(names: Locator[]): Promise<void> {
  // In the window, as staff would look at them (what is drawn on top is only known there). The list
  // may still be settling (a row finishing, a case folding) when the first look is taken: looked at
  // again until every end is in view, or 5 s; the names whose end is not are what a failure shows.
  let shown: Array<Awaited<ReturnType<typeof shownName>>> = [];
  await expect
    .poll(
      async () => {
        await names[0]!.scrollIntoViewIfNeeded();
        shown = await Promise.all(names.map(shownName));
        return shown.filter((name) => !name.tailInView).map((name) => name.full);
      },
      { timeout: 5_000, message: 'names whose end is not in view' },
    )
    .toEqual([]);
  expect(new Set(shown.map((name) => name.shown)).size, JSON.stringify(shown)).toBe(shown.length);
}

for (const size of SIZES) {
  describe(`a clinic's day at ${size.width}×${size.height}, scale ${size.deviceScaleFactor}`, () => {
    let app: RendererPage;
    beforeAll(async () => {
      app = await openRenderer(browser, day(), size);
    });
    afterAll(async () => {
      await app?.close();
    });

    it('Sync: the failure in the second folder is announced at the top with its file, the empty file is skipped, similar scans read differently', async () => {
      const page = app.page;
      const summary = page.getByTestId('attention-summary');
      await summary.waitFor();
      expect(await summary.locator('h2').innerText()).toBe('One folder needs attention');
      expect(await summary.innerText()).toContain('consent_refusal_Pearson_2026-03-12.pdf could not be uploaded');
      // At the top of the screen, above every folder, in view without scrolling.
      const summaryBox = (await summary.boundingBox())!;
      expect(summaryBox.y + summaryBox.height).toBeLessThanOrEqual(size.height);
      for (const card of await page.locator('.pair-card').all()) expect((await card.boundingBox())!.y).toBeGreaterThan(summaryBox.y);
      expect(await page.getByTestId('sync-attention-badge').innerText()).toBe('1');
      expect(await page.getByRole('button', { name: 'Sync', exact: true }).getAttribute('aria-describedby')).toBe('nav-sync-attention');

      const chairOneCard = page.locator('.pair-card[data-pair-id="chair-1"]');
      // The empty file is not a failure: no red notice, the folder up to date, its row neutral.
      expect(await chairOneCard.locator('.notice-danger').count()).toBe(0);
      expect(await chairOneCard.locator('.pair-header .badge').innerText()).toBe('Up to date');
      const skipped = chairOneCard.locator('.file-row[data-state="skipped"]');
      await skipped.waitFor();
      expect(await skipped.textContent(), 'the skipped row').toContain('Empty file (0 bytes): uploaded once it has content');
      expect(await skipped.getByRole('button').count()).toBe(0);
      // One measure: 31 items (the 300 slices as one series) in the text and the bar alike.
      expect(await chairOneCard.locator('.pair-progress-text').innerText()).toContain('All 31 items synced and verified');
      expect(await chairOneCard.getByRole('progressbar').first().getAttribute('aria-valuenow')).toBe('100');
      // Finished cases are folded under one line.
      expect(await chairOneCard.locator('.case-fold').innerText()).toMatch(/^29 finished cases$/i);

      const row = (name: string) => chairOneCard.locator(`.file-row[data-file$="/${name}"] .middle-name`);
      await row(THREE_SHAPE[0]!).waitFor();
      await expectTellable(THREE_SHAPE.map(row));
      await expectTellable(ITERO.map(row));
      expect(await row(THREE_SHAPE[1]!).getAttribute('title')).toBe(THREE_SHAPE[1]);
      await screenshot(page, `sync-${size.label}`);
    });

    it('Patients: search by words in any order and without accents, patients of one name told apart, similar file and folder names read differently', async () => {
      const page = app.page;
      await page.getByRole('button', { name: 'Patients', exact: true }).click();
      const column = page.locator('.browser-patients');
      const search = column.getByRole('searchbox');
      const names = () => column.locator('.patient-option').evaluateAll((options) => options.map((option) => option.textContent ?? ''));
      // What the list shows once the search has been answered (the names, in order).
      const searchFor = async (query: string, expected: string[]) => {
        await search.fill(query);
        await expect.poll(async () => (await names()).map((name) => PATIENTS.find((entry) => name.includes(entry.name))?.name)).toEqual(expected);
      };
      await searchFor('Jane Pearson', ['Jane Pearson', 'Jane Pearson']);
      await searchFor('muller', ['Anna Müller']);
      await searchFor('pearson jane', ['Jane Pearson', 'Jane Pearson']);
      await searchFor('garcia', ['José García']);
      await searchFor('obrien', ["Siobhán O'Brien"]);
      await searchFor('smith j', ['Smith, John', 'Smith, Jon']);

      // The two Jane Pearsons: a second line sets them apart (a birth date and chart number when the
      // server gives them, else the distinguishing end of the id), and the list is one Tab stop.
      await searchFor('jane pearson', ['Jane Pearson', 'Jane Pearson']);
      const details = await column.locator('.patient-option-detail').allInnerTexts();
      expect(details).toEqual(['ID …00000001', 'Born 12 Mar 1980 · Chart C-20417']);
      expect(await column.locator('.patient-option[tabindex="0"]').count()).toBe(1);
      await screenshot(page, `patients-search-${size.label}`);

      // Smith, John and Smith, Jon (one birth date), and two long Pearson, Johanna … names whose
      // ends are cut: the second lines differ and are shown whole (wrapped, never cut).
      await searchFor('smith', ['Smith, John', 'Smith, Jon']);
      await expectWholeDetails(column, ['Born 2 Mar 1984 · Chart 10231', 'Born 2 Mar 1984 · Chart 10232']);
      await searchFor('pearson johanna', ['Pearson, Johanna Elisabeth Margarethe', 'Pearson, Johanna Elisabeth Margarete']);
      await expectWholeDetails(column, ['Born 23 Jul 1991 · Chart 20031', 'Born 23 Jul 1991 · Chart 20032']);
      await screenshot(page, `patients-similar-${size.label}`);
      // The search box finds by chart number and by birth date (ISO or as this computer writes dates), alone or with a name.
      await searchFor('10232', ['Smith, Jon']);
      await searchFor('1984-03-02', ['Smith, John', 'Smith, Jon']);
      await searchFor('02/03/1984 jon', ['Smith, Jon']);
      await searchFor('20031', ['Pearson, Johanna Elisabeth Margarethe']);
      await searchFor('jane pearson', ['Jane Pearson', 'Jane Pearson']);

      await column.locator('.patient-option').first().click();
      await page.getByTestId('document-count').filter({ hasText: /^315 files$/ }).waitFor();
      const documentName = (name: string) => page.locator(`.document-row[data-document="${name}"] .middle-name`);
      await expectTellable(THREE_SHAPE.map(documentName));
      // The date stays in view at this size (in its short form when the column is narrow).
      const date = page.locator(`.document-row[data-document="${THREE_SHAPE[0]}"] .col-scanned`);
      expect(await date.isVisible()).toBe(true);
      expect((await date.innerText()).trim()).toMatch(/2026/);
      await expectTellable(ITERO.map(documentName));
      const tree = page.getByRole('tree', { name: 'Folders' });
      const scansFolder = tree.locator('[role="treeitem"][data-path="/scans"]');
      if ((await scansFolder.getAttribute('aria-expanded')) === 'false') await scansFolder.click();
      const label = (folder: string) => tree.locator(`[role="treeitem"][data-path="/scans/${folder}"] .middle-name`);
      await label(ORTHOCAD[0]!).waitFor();
      await expectTellable(ORTHOCAD.slice(0, 4).map(label));
      await screenshot(page, `patients-${size.label}`);
      // The folder column can be made wider (a splitter, by keyboard too).
      const before = (await page.locator('.browser-tree').boundingBox())!.width;
      await page.getByRole('separator', { name: 'Width of the folder tree' }).focus();
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowRight');
      await expect.poll(async () => (await page.locator('.browser-tree').boundingBox())!.width).toBeGreaterThan(before + 40);
      expect((await page.locator('.browser-tree').boundingBox())!.width).toBeLessThan(before + 60);
      await expectTellable(ORTHOCAD.slice(0, 4).map(label));
      await screenshot(page, `patients-wider-tree-${size.label}`);
      // Back to the width it had, for the screens that follow.
      await page.keyboard.press('ArrowLeft');
      await page.keyboard.press('ArrowLeft');
      await expect.poll(async () => (await page.locator('.browser-tree').boundingBox())!.width).toBe(before);
      await page.evaluate(() => window.localStorage.clear());
    });

    it('Patients: the DICOM filter finds the CBCT series as one entry, which opens to its slices in counting order', async () => {
      const page = app.page;
      await page.getByRole('combobox', { name: 'File type' }).selectOption('DCM');
      await page.getByTestId('document-count').filter({ hasText: /^300 files/ }).waitFor();
      const rows = page.locator('.document-rows [role="option"]');
      await expect.poll(() => rows.count()).toBe(1);
      const series = page.locator('.series-row');
      expect(await series.locator('.strong').innerText()).toBe('DICOM series · 300 slices');
      await screenshot(page, `patients-dicom-${size.label}`);
      await series.click();
      await page.getByTestId('document-count').filter({ hasText: /^300 files in \/scans\/CBCT\// }).waitFor();
      const firstSlices = await page.locator('.document-row[data-document]').evaluateAll((found) => found.slice(0, 4).map((row) => row.getAttribute('data-document')));
      expect(firstSlices).toEqual(['IM1', 'IM2', 'IM3', 'IM4']);
      await page.getByRole('combobox', { name: 'File type' }).selectOption('');
      await page.getByRole('tree', { name: 'Folders' }).locator('[role="treeitem"][aria-level="1"]').click();
    });

    it('3D viewer: the details show the whole name, the model has the focus when the viewer opens, and + zooms in', async () => {
      const page = app.page;
      const stl = makeArchStl({ triangles: 2_000 });
      await page.route(`${ORIGIN_URL}/content/**`, (route) => route.fulfill({ status: 200, contentType: 'model/stl', body: stl }));
      await page.locator(`.document-row[data-document="${THREE_SHAPE[1]}"]`).click();
      const title = page.locator('.details-title');
      await title.waitFor();
      expect(await title.innerText()).toBe(THREE_SHAPE[1]);
      expect(await title.evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(true);
      // The details take room from the other columns, yet the cases' folders still read apart.
      const tree = page.getByRole('tree', { name: 'Folders' });
      await expectTellable(ORTHOCAD.slice(0, 4).map((folder) => tree.locator(`[role="treeitem"][data-path="/scans/${folder}"] .middle-name`)));
      await screenshot(page, `patients-details-${size.label}`);
      await page.getByRole('button', { name: 'View in 3D' }).click();
      const viewer = page.locator('.model-canvas[data-viewer-state="ready"]');
      await viewer.waitFor({ timeout: 30_000 });
      await expect.poll(() => page.evaluate(() => document.activeElement?.classList.contains('model-canvas') ?? false)).toBe(true);
      const distance = async () => Number(await viewer.getAttribute('data-camera-distance'));
      const far = await distance();
      await page.keyboard.press('+');
      await expect.poll(distance).toBeLessThan(far);
      const near = await distance();
      await page.keyboard.press('-');
      await expect.poll(distance).toBeGreaterThan(near);
      await screenshot(page, `viewer-${size.label}`);
      await page.keyboard.press('Escape');
    });

    it('Activity and Settings: screenshots of what staff see', async () => {
      const page = app.page;
      await page.getByRole('button', { name: 'Activity', exact: true }).click();
      await page.locator('.screen h1').filter({ hasText: 'Activity' }).waitFor();
      await screenshot(page, `activity-${size.label}`);
      await page.getByRole('button', { name: 'Settings', exact: true }).click();
      await page.locator('.screen h1').filter({ hasText: 'Settings' }).waitFor();
      await screenshot(page, `settings-${size.label}`);
    });
  });
}
