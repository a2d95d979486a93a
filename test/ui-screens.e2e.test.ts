// The screens in real Chromium against a scripted engine (test/helpers/renderer-page.ts): what
// staff read for a given state of the engine, at the window sizes the clinic uses.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAIN_MESSAGES } from '../shared/bridge-errors.js';
import { counts, fileView, launchBrowser, openRenderer, pairView } from './helpers/renderer-page.js';

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
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
      await page.getByRole('listbox', { name: 'Files of /home/clinic/scans/chair 1 to Jane Roe' }).waitFor();
      const retry = page.locator('.file-row[data-state="failed"] button');
      const label = (await retry.getAttribute('aria-label'))!;
      expect(label).not.toMatch(/\p{Cc}/u);
      expect(label).toBe(`Retry ${await page.locator('.file-row[data-state="failed"] .strong').innerText()}`);
      const reason = page.locator('.file-row[data-state="failed"] .tone-text-danger');
      expect(await reason.innerText()).toContain('Rename the file in the scan folder');
      expect(await reason.locator('..').getAttribute('title')).toContain('Rename the file in the scan folder');
      expect(await page.locator('.file-row[data-state="waiting"]').innerText()).toMatch(/next try in (19|20) seconds/);
    } finally {
      await app.close();
    }
  });
});
