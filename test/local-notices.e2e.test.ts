// What staff read in the real renderer (Chromium, scripted engine) when the workstation itself is
// the trouble: a full disk, a journal rebuilt after a power cut, a scan that cannot be opened.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAIN_MESSAGES } from '../shared/bridge-errors.js';
import { counts, launchBrowser, openRenderer, pairView, STATUS } from './helpers/renderer-page.js';

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
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
