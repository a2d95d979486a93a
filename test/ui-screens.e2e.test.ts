// The screens in real Chromium against a scripted engine (test/helpers/renderer-page.ts): what
// staff read for a given state of the engine, at the window sizes the clinic uses — the sync
// screen's reasons, the patient browser, activity, the forms, and what staff read when the
// workstation itself is the trouble (a full disk, a journal rebuilt after a power cut, a scan that
// cannot be opened).
import type { Browser } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { GONE_FROM_SERVER_MESSAGE, PLAIN_MESSAGES } from '../shared/bridge-errors.js';
import type { DocumentDto, SearchBody } from '../shared/schemas.js';
import { counts, documentDto, fileView, openRenderer, pairView, patient, Refusal, STATUS, useBrowser, type Handlers } from './helpers/renderer-page.js';

let browser: Browser;
beforeAll(async () => {
  browser = await useBrowser();
});

describe('sync screen: a pair’s reasons', () => {
  it('tells the failed files by their own reasons, and a file waiting for a retry apart from them', async () => {
    const pair = pairView({
      state: 'syncing',
      counts: counts({ failed: 3, waiting: 1, synced: 2 }),
      lastError: { code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT },
      failureReasons: [
        { code: 'INVALID_NAME', message: PLAIN_MESSAGES.INVALID_NAME, count: 2 },
        { code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT, count: 1 },
      ],
      retryReason: { code: 'UNREACHABLE', message: PLAIN_MESSAGES.UNREACHABLE },
    });
    const app = await openRenderer(browser, { listPairs: () => [pair] });
    try {
      const card = app.page.locator('.pair-card');
      const failure = card.locator('.notice-danger');
      await failure.waitFor();
      expect(await failure.locator('strong').first().innerText()).toBe('3 files could not be uploaded');
      expect(await failure.locator('.reason-list li').allInnerTexts()).toEqual([
        `2 files: ${PLAIN_MESSAGES.INVALID_NAME} Rename the files in the scan folder; they are uploaded under their new names.`,
        `1 file: ${PLAIN_MESSAGES.NO_CONSENT} Once the patient’s consent is recorded, choose Retry.`,
      ]);
      expect(await failure.innerText()).not.toContain(PLAIN_MESSAGES.UNREACHABLE);
      const waiting = card.locator('.notice-warning');
      expect(await waiting.innerText()).toContain('One file will be tried again');
      expect(await waiting.innerText()).toContain(PLAIN_MESSAGES.UNREACHABLE);
      expect(await card.locator('.pair-progress-text').innerText()).toContain('2 of 6 files synced');
    } finally {
      await app.close();
    }
  });

  it('says why a pair whose folder is gone needs attention', async () => {
    const pair = pairView({ state: 'attention', counts: counts({ synced: 1 }), lastError: { code: 'FOLDER_MISSING', message: PLAIN_MESSAGES.FOLDER_MISSING }, folderError: { code: 'FOLDER_MISSING', message: PLAIN_MESSAGES.FOLDER_MISSING } });
    const app = await openRenderer(browser, { listPairs: () => [pair] });
    try {
      const notice = app.page.locator('.pair-card .notice-danger');
      await notice.waitFor();
      const text = await notice.innerText();
      expect(text).toContain('The scan folder cannot be found');
      expect(text).toContain(PLAIN_MESSAGES.FOLDER_MISSING);
      expect(text).toContain('It is looked for every few seconds; files sync again when it is back.');
      expect(await app.page.locator('.pair-card .pair-progress-text').innerText()).toContain('The file is synced and verified');
    } finally {
      await app.close();
    }
  });

  it('file rows: the Retry button and the list are named as the screen shows them, a failed name says what to do, a near retry is said as such', async () => {
    const pair = pairView({ state: 'attention', counts: counts({ failed: 1, waiting: 1 }), failureReasons: [{ code: 'INVALID_NAME', message: 'fileName must not contain control characters', count: 1 }] });
    const files = [
      fileView({ relativePath: 'scan\u0007bell.stl', state: 'failed', syncedAt: null, error: { code: 'INVALID_NAME', message: 'fileName must not contain control characters' } }),
      fileView({ relativePath: 'later.stl', state: 'waiting', syncedAt: null, nextAttemptAt: Date.now() + 20_000, error: { code: 'SERVER_ERROR', message: PLAIN_MESSAGES.SERVER_ERROR } }),
    ];
    const app = await openRenderer(browser, { listPairs: () => [pair], listFiles: () => ({ files, total: files.length }) });
    try {
      const page = app.page;
      await page.getByRole('list', { name: 'Files of /home/clinic/scans/chair 1 to Jane Roe' }).waitFor();
      const retry = page.locator('.file-row[data-state="failed"] .file-row-action button');
      const label = (await retry.getAttribute('aria-label'))!;
      expect(label).not.toMatch(/\p{Cc}/u);
      // textContent: the name as drawn (head and tail), whatever the layout has measured yet.
      expect(label).toBe(`Retry ${await page.locator('.file-row[data-state="failed"] .strong').textContent()}`);
      const reason = page.locator('.file-row[data-state="failed"] .tone-text-danger');
      expect(await reason.innerText()).toContain('Rename the file in the scan folder');
      expect(await reason.getAttribute('title')).toContain('Rename the file in the scan folder');
      // 20 s from when the view was made: a loaded machine may take a few seconds to show it.
      expect(await page.locator('.file-row[data-state="waiting"]').innerText()).toMatch(/next try in (1[0-9]|20) seconds/);
    } finally {
      await app.close();
    }
  });
  it('scans the re-check found gone from the server are grouped by reason, told for several at once, and offer Retry only where it can work', async () => {
    const gone = { code: 'NOT_FOUND' as const, message: GONE_FROM_SERVER_MESSAGE };
    const lost = { code: 'LOST_ON_SERVER' as const, message: PLAIN_MESSAGES.LOST_ON_SERVER };
    const onlyLost = pairView({ id: 'pair-lost', folder: '/home/clinic/scans/chair 2', state: 'attention', counts: counts({ failed: 2, synced: 3 }), failureReasons: [{ ...lost, count: 2, detail: 'document 7a1c is gone' }] });
    const both = pairView({ state: 'attention', counts: counts({ failed: 5, synced: 1 }), failureReasons: [{ ...gone, count: 3 }, { ...lost, count: 2 }] });
    const mixed = pairView({ id: 'pair-mixed', folder: '/home/clinic/scans/chair 3', state: 'attention', counts: counts({ failed: 2 }), failureReasons: [{ ...gone, count: 1 }, { code: 'TOO_LARGE', message: PLAIN_MESSAGES.TOO_LARGE, count: 1 }] });
    const app = await openRenderer(browser, { listPairs: () => [both, onlyLost, mixed] });
    try {
      const page = app.page;
      const notice = (pairId: string) => page.locator(`.pair-card[data-pair-id="${pairId}"] .notice-danger`);
      await notice(both.id).waitFor();
      expect(await notice(both.id).locator('strong').first().innerText()).toBe('5 scans are no longer on the server');
      expect(await notice(both.id).locator('.reason-list li').allInnerTexts()).toEqual([
        '3 files: These scans are no longer on the server: they were deleted there, or the server was restored from an older backup. They are still in this folder. If they were not deleted on purpose, choose Retry all to upload them again as new documents.',
        '2 files: The server lost its copies of these scans, and they are no longer in this folder either. Copy them back into the folder (from the scanner software’s export or a backup) and they are uploaded again by themselves; if you cannot, tell IT which scans they are.',
      ]);
      expect(await notice(both.id).getByRole('button', { name: 'Retry all' }).count()).toBe(1);
      // Only scans in neither place: nothing Retry could upload, and one file's document id is not the others'.
      expect(await notice(onlyLost.id).locator('strong').first().innerText()).toBe('2 scans are no longer on the server');
      expect(await notice(onlyLost.id).locator('.notice-message').innerText()).toMatch(/^The server lost its copies of these scans/);
      expect(await notice(onlyLost.id).getByRole('button', { name: 'Retry all' }).count()).toBe(0);
      expect(await notice(onlyLost.id).locator('.notice-detail').count()).toBe(0);
      expect(await notice(mixed.id).locator('strong').first().innerText()).toBe('2 files need attention');
    } finally {
      await app.close();
    }
  });
  it('a file row’s Retry that the engine refuses says so on the card, instead of nothing happening', async () => {
    const pair = pairView({ state: 'attention', counts: counts({ failed: 1 }), failureReasons: [{ code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT, count: 1 }] });
    const failed = fileView({ relativePath: 'bite.stl', state: 'failed', syncedAt: null, error: { code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT } });
    const app = await openRenderer(browser, {
      listPairs: () => [pair],
      listFiles: () => ({ files: [failed], total: 1 }),
      retryFailed: () => {
        throw new Refusal('UNAVAILABLE', 'The sync engine is busy; try again in a moment.');
      },
    });
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Retry bite.stl' }).click();
      await page.locator('.pair-card [role="alert"]').filter({ hasText: 'The sync engine is busy; try again in a moment.' }).waitFor();
    } finally {
      await app.close();
    }
  });
});

describe('a file list that is still loading', () => {
  it('shows a file’s new state told while the list was on its way, and keeps a newer row over an older state told then', async () => {
    const readAt = Date.parse('2026-03-12T10:00:00Z');
    // The list as the engine read it: arch.stl still uploading, bite.stl already synced.
    const arch = fileView({ relativePath: 'arch.stl', state: 'uploading', syncedAt: null, bytesDone: 400, updatedAt: readAt });
    const bite = fileView({ relativePath: 'bite.stl', state: 'synced', updatedAt: readAt + 10, syncedAt: readAt + 10 });
    let answerList: (page: { files: (typeof arch)[]; total: number }) => void = () => undefined;
    let asked: () => void = () => undefined;
    const listAsked = new Promise<void>((resolve) => (asked = resolve));
    const pair = pairView({ state: 'syncing', counts: counts({ uploading: 1, synced: 1 }) });
    const app = await openRenderer(browser, {
      listPairs: () => [pair],
      listFiles: () => {
        asked();
        return new Promise((resolve) => (answerList = resolve));
      },
    });
    try {
      const page = app.page;
      await listAsked;
      // Told before the list's answer arrives: arch.stl has since been synced (newer than the
      // list's row); bite.stl's uploading is older than the list's row.
      await app.emit([
        {
          type: 'files',
          pairId: pair.id,
          files: [
            { ...arch, state: 'synced', bytesDone: arch.size, syncedAt: readAt + 20, updatedAt: readAt + 20 },
            { ...bite, state: 'uploading', syncedAt: null, bytesDone: 100, updatedAt: readAt },
          ],
        },
      ]);
      answerList({ files: [arch, bite], total: 2 });
      const row = (name: string) => page.locator('.file-row').filter({ hasText: name });
      await row('bite.stl').waitFor();
      expect(await row('arch.stl').getAttribute('data-state')).toBe('synced');
      expect(await row('bite.stl').getAttribute('data-state')).toBe('synced');
      expect(await page.locator('.file-row').count()).toBe(2);
    } finally {
      await app.close();
    }
  });
});

/** A patient list and a search that follow the server's rules closely enough for the screens (folder and below, name contains, by id). */
function records(documents: DocumentDto[], patientNames: string[]): Handlers {
  const patients = patientNames.map((name, index) => patient(name, index + 1));
  return {
    listPatients: (query) => {
      const found = patients.filter((entry) => !query.name || entry.name.toLowerCase().includes(query.name.toLowerCase()));
      return { patients: found, total: found.length, offset: 0, limit: query.limit ?? 100 };
    },
    searchDocuments: (patientId, body: SearchBody) => {
      const query = body as SearchBody & { path?: string; fileName?: string; id?: string[]; offset?: number; limit?: number };
      const found = (patientId === patients[0]!.id ? documents : []).filter(
        (document) =>
          (!query.id || query.id.includes(document.id)) &&
          (!query.path || query.path === '/' || document.path === query.path || document.path.startsWith(`${query.path}/`)) &&
          (!query.fileName || document.fileName.toLowerCase().includes(query.fileName.toLowerCase())),
      );
      const offset = query.offset ?? 0;
      return { documents: found.slice(offset, offset + (query.limit ?? 100)), total: found.length, offset, limit: query.limit ?? 100 };
    },
  };
}

const LONG_NAME = 'Maximiliane Alexandra von Hohenzollern-Sigmaringen-Wittelsbach';
const MANY_PATIENTS = [LONG_NAME, ...Array.from({ length: 60 }, (_, index) => `Patient ${String(index + 1).padStart(2, '0')}`)];

describe('patient browser', () => {
  it('keeps the search box its height beside a long patient list, ends a long name in an ellipsis, and moves through the patients with the arrow keys', async () => {
    const app = await openRenderer(browser, records([], MANY_PATIENTS), { height: 700 });
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Patients', exact: true }).click();
      const column = page.locator('.browser-patients');
      await column.getByRole('button', { name: /Patient 60/ }).waitFor({ state: 'attached' });
      expect((await column.locator('.search-input').boundingBox())!.height).toBeGreaterThanOrEqual(34);
      const longName = column.locator('.patient-option .truncate').first();
      expect(await longName.getAttribute('title')).toBe(LONG_NAME);
      expect(await longName.evaluate((element) => getComputedStyle(element).textOverflow)).toBe('ellipsis');
      expect(await longName.evaluate((element) => element.scrollWidth > element.clientWidth && element.getBoundingClientRect().right <= element.closest('.browser-patients')!.getBoundingClientRect().right)).toBe(true);

      await column.getByRole('searchbox').focus();
      await page.keyboard.press('ArrowDown');
      const focusedName = () => page.evaluate(() => document.activeElement?.closest('.patient-option')?.textContent ?? null);
      expect(await focusedName()).toContain(LONG_NAME);
      await page.keyboard.press('ArrowDown');
      expect(await focusedName()).toContain('Patient 01');
      await page.keyboard.press('End');
      expect(await focusedName()).toContain('Patient 60');
      await page.keyboard.press('Home');
      await page.keyboard.press('ArrowUp');
      expect(await page.evaluate(() => document.activeElement?.getAttribute('type'))).toBe('search');

      await page.getByRole('button', { name: 'Sync', exact: true }).click();
      await page.getByRole('button', { name: 'Add folder' }).first().click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('button', { name: /Patient 60/ }).waitFor({ state: 'attached' });
      expect((await dialog.locator('.search-input').boundingBox())!.height).toBeGreaterThanOrEqual(34);
    } finally {
      await app.close();
    }
  });

  it('shows a file this computer has just synced for the open patient, without a webhook', async () => {
    const documents: DocumentDto[] = [];
    const app = await openRenderer(browser, { ...records(documents, ['Jane Roe']), listPairs: () => [pairView()] });
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Patients', exact: true }).click();
      await page.locator('.browser-patients').getByRole('button', { name: /Jane Roe/ }).click();
      await page.getByText('No files for this patient yet').waitFor();
      documents.push(documentDto({ fileName: 'upper-arch.stl', path: '/scans' }, 1));
      await app.emit([{ type: 'files', pairId: 'pair-1', files: [fileView({ relativePath: 'upper-arch.stl', state: 'synced' })] }]);
      await page.getByTestId('document-count').filter({ hasText: /^1 file$/ }).waitFor({ timeout: 10_000 });
    } finally {
      await app.close();
    }
  });

  it('a patient with no files says so again after a filter is typed and cleared', async () => {
    const app = await openRenderer(browser, records([], ['Jane Roe']));
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Patients', exact: true }).click();
      await page.locator('.browser-patients').getByRole('button', { name: /Jane Roe/ }).click();
      await page.getByText('No files for this patient yet').waitFor();
      await page.getByLabel('Filter by file name').fill('upper');
      await page.getByText('No file matches').waitFor();
      await page.getByLabel('Filter by file name').fill('');
      await page.getByText('No files for this patient yet').waitFor();
    } finally {
      await app.close();
    }
  });

  it('at 1024×700 the file table fits, and the details panel leaves the list in view', async () => {
    const documents = Array.from({ length: 30 }, (_, index) => documentDto({ fileName: `upper-arch-${index + 1}.stl`, path: '/scans/2026-03-12 Upper arch' }, index + 1));
    const app = await openRenderer(browser, records(documents, ['Jane Roe']), { width: 1024, height: 700 });
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Patients', exact: true }).click();
      await page.locator('.browser-patients').getByRole('button', { name: /Jane Roe/ }).click();
      await page.getByTestId('document-count').filter({ hasText: '30 files' }).waitFor();
      const files = (await page.locator('.browser-files').boundingBox())!;
      const row = page.locator('.document-row').first();
      for (const cell of ['.col-name', '.col-type', '.col-size', '.col-actions']) {
        const box = (await row.locator(cell).boundingBox())!;
        expect(box.x + box.width, `${cell} ends inside the files column`).toBeLessThanOrEqual(files.x + files.width + 0.5);
        expect(box.width, `${cell} has room`).toBeGreaterThan(cell === '.col-name' ? 120 : 20);
      }
      expect((await row.locator('.col-actions .icon-button').boundingBox())!.x + 20).toBeLessThanOrEqual(1024);

      await row.click();
      await page.locator('.details-panel').waitFor();
      const list = (await page.locator('.document-rows').boundingBox())!;
      const panel = (await page.locator('.details-panel').boundingBox())!;
      expect(list.x + list.width, 'the list ends where the panel begins').toBeLessThanOrEqual(panel.x + 0.5);
      expect((await page.locator('.document-row').first().locator('.col-name').boundingBox())!.width).toBeGreaterThan(150);
      await page.locator('.details-panel').getByRole('button', { name: 'Close details' }).click();
      await page.locator('.browser-patients').waitFor();
    } finally {
      await app.close();
    }
  });

  it.each([1440, 1024])('at %i wide, a folder twelve levels down keeps a readable name in the tree, in view, with its whole path as the tooltip', async (width) => {
    const levels = Array.from({ length: 11 }, (_, index) => `level ${index + 2} folder`);
    const deepPath = `/${levels.join('/')}`;
    const app = await openRenderer(browser, records([documentDto({ fileName: 'deep.pdf', path: deepPath }, 1)], ['Jane Roe']), { width, height: 700 });
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Patients', exact: true }).click();
      await page.locator('.browser-patients').getByRole('button', { name: /Jane Roe/ }).click();
      await page.getByTestId('document-count').filter({ hasText: '1 file' }).waitFor();
      // Open every level with → on the last row.
      await page.locator('.tree-label[data-path="/"]').focus();
      for (let level = 0; level < levels.length; level += 1) {
        await page.keyboard.press('ArrowDown');
        await page.keyboard.press('ArrowRight');
      }
      const deepest = page.locator(`.tree-label[data-path="${deepPath}"]`);
      await deepest.waitFor();
      expect(await deepest.getAttribute('aria-level')).toBe('12');
      expect(await deepest.getAttribute('title')).toBe(deepPath);
      const name = (await deepest.locator('.tree-name').boundingBox())!;
      const tree = (await page.locator('.folder-tree').boundingBox())!;
      expect(name.width, 'room for the deepest name').toBeGreaterThanOrEqual(60);
      expect(name.x, 'the name begins in view').toBeGreaterThanOrEqual(tree.x);
      expect(name.x + name.width, 'and ends in view').toBeLessThanOrEqual(tree.x + tree.width);
    } finally {
      await app.close();
    }
  });

  it.each([1440, 1024, 360])('at %i wide, every folder’s file count in the tree is fully in view, also beside a long, deep folder name that ends in an ellipsis', async (width) => {
    const longName = '2026-03-12 Upper and lower arch, full-resolution export for the lab';
    const deepPath = `/scans/${longName}/${Array.from({ length: 6 }, (_, index) => `level ${index + 4} ${longName}`).join('/')}`;
    const documents = [
      ...Array.from({ length: 12 }, (_, index) => documentDto({ fileName: `scan-${index}.stl`, path: `/scans/${longName}` }, index + 1)),
      documentDto({ fileName: 'deep.pdf', path: deepPath }, 100),
    ];
    const app = await openRenderer(browser, records(documents, ['Jane Roe']), { width, height: 700 });
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Patients', exact: true }).click();
      await page.locator('.browser-patients').getByRole('button', { name: /Jane Roe/ }).click();
      await page.getByTestId('document-count').filter({ hasText: '13 files' }).waitFor();
      // Every count shown lies inside the tree column and its scrolling viewport, whole (its text not cut).
      const countsInView = async (when: string) => {
        const column = (await page.locator('.browser-tree').boundingBox())!;
        const viewport = (await page.locator('.folder-tree').boundingBox())!;
        const rows = page.locator('.tree-label');
        const paths = await rows.evaluateAll((elements) => elements.map((element) => (element as HTMLElement).dataset.path!));
        expect(paths.length, when).toBeGreaterThan(1);
        for (const path of paths) {
          const count = page.locator(`.tree-label[data-path="${path}"] .tree-count`);
          const box = (await count.boundingBox())!;
          const label = `${when}: the count of ${path}`;
          expect(box.width, label).toBeGreaterThan(0);
          for (const outer of [column, viewport]) {
            expect(box.x, `${label} begins in the column`).toBeGreaterThanOrEqual(outer.x - 0.5);
            expect(box.x + box.width, `${label} ends in the column`).toBeLessThanOrEqual(outer.x + outer.width + 0.5);
          }
          expect(await count.evaluate((element) => element.scrollWidth <= element.clientWidth), `${label} is not cut`).toBe(true);
        }
      };
      // The tree opens on the root and the way to the selected folder; open "scans" to show the long name.
      await page.locator('.tree-label[data-path="/scans"] .tree-twisty').click();
      const long = page.locator(`.tree-label[data-path="/scans/${longName}"]`);
      await long.waitFor();
      expect(await long.locator('.tree-count').innerText()).toBe('13');
      // Cut in the middle (the distinguishing end stays): its start ends in an ellipsis, its end is shown.
      expect(await long.locator('.tree-name .middle-name-head').evaluate((element) => element.scrollWidth > element.clientWidth), 'the long name is cut, with an ellipsis').toBe(true);
      await countsInView('opened');
      // Then open every level down to the deepest with the keyboard (the tree scrolls sideways to it).
      await long.focus();
      for (let level = 0; level < 7; level += 1) {
        await page.keyboard.press('ArrowRight');
        await page.keyboard.press('ArrowDown');
      }
      await page.locator(`.tree-label[data-path="${deepPath}"]`).waitFor();
      await expect.poll(() => page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.path)).toBe(deepPath);
      await countsInView('at the deepest folder');
    } finally {
      await app.close();
    }
  });

  it('closing a preview gives the focus back to the button that opened it', async () => {
    const pdf = documentDto({ fileName: 'order-form.pdf', path: '/reports', storageDownloadUri: 'http://patient-docs.test/content/order-form.pdf?signature=x' }, 1);
    const app = await openRenderer(browser, records([pdf], ['Jane Roe']));
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Patients', exact: true }).click();
      await page.locator('.browser-patients').getByRole('button', { name: /Jane Roe/ }).click();
      await page.locator('.document-row').first().click();
      const opener = page.locator('.details-panel').getByRole('button', { name: 'Preview' });
      await opener.click();
      await page.getByRole('dialog').waitFor();
      await page.keyboard.press('Escape');
      await page.getByRole('dialog').waitFor({ state: 'detached' }).catch(() => undefined);
      await expect.poll(() => page.evaluate(() => document.activeElement?.textContent?.trim() ?? document.activeElement?.tagName)).toBe('Preview');
      await opener.click();
      await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();
      await expect.poll(() => page.evaluate(() => document.activeElement?.textContent?.trim() ?? null)).toBe('Preview');
    } finally {
      await app.close();
    }
  });
});

describe('activity', () => {
  it('sync history keeps the files of a folder no longer synced, with the folder and patient they went from and to', async () => {
    const kept = { ...fileView({ relativePath: 'case/upper-arch.stl', pairId: 'pair-gone' }), folder: '/scans/chair 2', patientName: 'John Doe', pairRemoved: true };
    const current = { ...fileView({ relativePath: 'case/lower-arch.stl' }), folder: '/scans/chair 1', patientName: 'Jane Roe', pairRemoved: false };
    const app = await openRenderer(browser, { listPairs: () => [pairView()], historyFiles: () => [current, kept] });
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Activity', exact: true }).click();
      await page.getByRole('tab', { name: 'Sync history' }).click();
      const row = page.locator('tr', { has: page.getByRole('button', { name: 'case/upper-arch.stl' }) });
      await row.waitFor();
      expect(await row.locator('.history-folder').innerText()).toBe('/scans/chair 2 to John Doe · no longer synced');
      expect(app.calls.some((call) => call.method === 'historyFiles')).toBe(true);
    } finally {
      await app.close();
    }
  });

  it('a document.lost notification is named in words, like the other events', async () => {
    const app = await openRenderer(browser, {
      webhookActivity: () => [{ id: 1, receivedAt: Date.parse('2026-03-12T10:00:00Z'), verdict: 'accepted', eventType: 'document.lost', patientId: '5f0e8a3c-1d2b-4c3d-8e9f-000000000001', reason: null, messageId: 'msg_lost' }],
    });
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Activity', exact: true }).click();
      const row = page.locator('tr[data-event-type="document.lost"]');
      await row.waitFor();
      expect(await row.locator('td').nth(2).innerText()).toBe('Document’s file lost on the server');
    } finally {
      await app.close();
    }
  });

  it('a notification told while the list is still loading stays on the screen when the list arrives', async () => {
    const older = { id: 1, receivedAt: Date.parse('2026-03-12T10:00:00Z'), verdict: 'accepted' as const, eventType: 'document.created', patientId: '5f0e8a3c-1d2b-4c3d-8e9f-000000000001', reason: null, messageId: 'msg_older' };
    const forged = { id: 2, receivedAt: Date.parse('2026-03-12T10:00:05Z'), verdict: 'rejected' as const, eventType: null, patientId: null, reason: 'signature does not match', messageId: null };
    let answerList: (entries: Array<typeof older | typeof forged>) => void = () => undefined;
    let asked: () => void = () => undefined;
    const listAsked = new Promise<void>((resolve) => (asked = resolve));
    const app = await openRenderer(browser, {
      // The list as the engine read it just before the forged delivery came in, answered after it.
      webhookActivity: () => {
        asked();
        return new Promise((resolve) => (answerList = resolve));
      },
    });
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Activity', exact: true }).click();
      await listAsked;
      await app.emit([{ type: 'webhook', activity: forged }]);
      answerList([older]);
      await page.locator('tr[data-verdict="accepted"]').waitFor();
      expect(await page.locator('tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-verdict')))).toEqual(['rejected', 'accepted']);
    } finally {
      await app.close();
    }
  });

  it('the arrow keys move the focus with the selected tab', async () => {
    const app = await openRenderer(browser, {});
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Activity', exact: true }).click();
      await page.getByRole('tab', { name: 'Server notifications' }).focus();
      await page.keyboard.press('ArrowRight');
      expect(await page.getByRole('tab', { name: 'Sync history' }).getAttribute('aria-selected')).toBe('true');
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('tab-history');
      await page.keyboard.press('ArrowLeft');
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('tab-webhooks');
    } finally {
      await app.close();
    }
  });
});

describe('forms say what is wrong in staff’s words', () => {
  it('the connection form names each empty field beside it and sends nothing; the first-run promises are ones the app keeps', async () => {
    const app = await openRenderer(browser, { getStatus: () => ({ ...STATUS, mode: 'unconfigured', server: null }) });
    try {
      const page = app.page;
      await page.getByText('This computer runs the server').click();
      const embedded = await page.locator('.first-run').innerText();
      expect(embedded).not.toContain('later in Settings');
      expect(embedded).not.toContain('right away');
      await page.getByText('Connect to a server').click();
      await page.getByRole('button', { name: 'Test connection' }).click();
      expect(await page.locator('.field-error').allInnerTexts()).toEqual(['Enter the server address your IT contact gave you.', 'Enter the client ID.', 'Enter the client secret.', 'Enter the organization ID.']);
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('field-server-address');
      expect(await page.getByLabel('Server address', { exact: true }).getAttribute('aria-invalid')).toBe('true');
      expect(await page.locator('.first-run').innerText()).not.toMatch(/Server said|argument/);
      expect(app.calls.filter((call) => call.method === 'testConnection')).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('settings: 0 files at once is named beside the field, and a refusal of the app’s own check is never "Server said"', async () => {
    let refuse = false;
    const app = await openRenderer(browser, {
      updateSettings: () => {
        if (refuse) throw new Refusal('INVALID_INPUT', 'The request was not valid.', 'updateSettings: argument /0/webhook/port must be <= 65535');
        throw new Refusal('INTERNAL');
      },
    });
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Settings', exact: true }).click();
      await page.getByLabel('Files at once').fill('0');
      await page.getByRole('button', { name: 'Save settings' }).click();
      expect(await page.locator('.field-error').allInnerTexts()).toEqual(['Enter a whole number from 1 to 16.']);
      expect(app.calls.filter((call) => call.method === 'updateSettings')).toEqual([]);
      await page.getByLabel('Files at once').fill('2');
      expect(await page.locator('.field-error').count()).toBe(0);
      refuse = true;
      await page.getByRole('button', { name: 'Save settings' }).click();
      const notice = page.locator('.notice-danger');
      await notice.waitFor();
      expect(await notice.innerText()).not.toContain('Server said');
      expect(await notice.innerText()).toContain('Details:');
    } finally {
      await app.close();
    }
  });
});

describe('the workstation’s own trouble, on screen', () => {
  it('a full disk and a rebuilt upload record are told above every screen', async () => {
    const rebuilt = 'The upload record on this computer was damaged (often after a power cut) and has been rebuilt: every folder is being checked again.';
    const app = await openRenderer(browser, { getStatus: () => ({ ...STATUS, notices: [PLAIN_MESSAGES.DISK_FULL, rebuilt] }), listPairs: () => [pairView({ counts: counts({ synced: 1 }) })] });
    try {
      const notices = app.page.locator('.app-main > .notice-warning');
      await notices.first().waitFor();
      expect(await notices.allInnerTexts()).toEqual([PLAIN_MESSAGES.DISK_FULL, rebuilt]);
    } finally {
      await app.close();
    }
  });

  it('a scan that cannot be opened is named with what to do, and files still being written are told apart', async () => {
    const pair = pairView({ state: 'attention', counts: counts({ synced: 2 }), settling: 3, unreadable: ['case-7/lower.stl'] });
    const app = await openRenderer(browser, { listPairs: () => [pair] });
    try {
      const card = app.page.locator('.pair-card');
      const locked = card.locator('.notice-warning');
      await locked.waitFor();
      const text = await locked.innerText();
      expect(text).toContain("'case-7/lower.stl' cannot be opened");
      expect(text).toContain('uploaded by itself as soon as it can be read');
      expect(text).toContain('check the file’s permissions');
      expect(await card.locator('.notice-info').innerText()).toContain('2 files are still being written');
    } finally {
      await app.close();
    }
  });
});
