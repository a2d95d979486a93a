/**
 * This computer's disk fills up while new scans arrive: the folder's card in the real browser says
 * that its files wait for space ("3 synced, 2 waiting: this computer's disk is full", "Needs
 * attention"), not "Syncing" with "2 files are still being written", and goes back to "All 5 files
 * synced and verified" by itself once space is freed. The sync home is a small tmpfs (the tests run
 * as root, like CI).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchHeadless, type HeadlessApp } from '../electron/headless/main.js';
import { SyncApp } from '../electron/sync/app/sync-app.js';
import { openSyncHome } from '../electron/sync/home/sync-home.js';
import { ROOT, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { closeContexts, useBrowser } from './helpers/renderer-page.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { fillDisk } from './helpers/disk.js';
import { waitFor, writeFile } from './helpers/sync.js';


describe('a folder card while this computer’s disk is full', () => {
  const mountPoint = tempDir('desk-disk-full');
  const home = path.join(mountPoint, 'home');
  const folder = tempDir('desk-disk-full-scans');
  let mounted = false;
  let server: ServerProcess;
  let headless: HeadlessApp | undefined;
  let browser: Browser;
  let filler: string | undefined;

  beforeAll(async () => {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0700', 'tmpfs', mountPoint]);
    mounted = true;
    // Chromium starts meanwhile: it needs none of the rest.
    const launching = useBrowser().then((launched) => (browser = launched));
    server = await startServerProcess();
    const opened = await openSyncHome(home);
    const app = new SyncApp({ home, settings: opened.settings, secrets: opened.secrets, shell: 'headless', version: 'test', webhooks: false });
    try {
      await app.setupRemote({ serverUrl: server.url, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG });
      await app.updateSettings({ settleMs: 200 });
      await app.addPair({ folder, patientId: PATIENT, patientName: 'Jane Roe', remoteBasePath: '/desk-disk-full' });
    } finally {
      await app.stop();
    }
    await launching;
  });
  afterAll(async () => {
    if (filler) fs.rmSync(filler, { force: true });
    await closeContexts(browser);
    await headless?.stop();
    await server?.stop();
    if (mounted) execFileSync('umount', ['-l', mountPoint]);
    fs.rmSync(mountPoint, { recursive: true, force: true });
    fs.rmSync(folder, { recursive: true, force: true });
  });

  it('says how many files wait for disk space, and goes back to all synced once there is space', async () => {
    // The journal is tried again every quarter second while the disk is full (the app's default: 2 s).
    headless = await launchHeadless({ home, firstRun: 'choose', rendererDir: path.join(ROOT, 'dist/renderer'), log: () => undefined, engine: { diskCheckMs: 250 } });
    const app = headless.app;
    const pairId = app.settings.get('pairs')[0]!.id;
    for (const name of ['upper.stl', 'lower.stl', 'bite.stl']) writeFile(folder, name, `solid ${name}`);
    await waitFor('three scans synced', () => app.engine.fileViews(pairId, ['synced']).length === 3);

    const page = await browser.newPage();
    try {
      await page.goto(headless.openUrl);
      const card = page.locator('article.pair-card');
      await card.getByText('All 3 files synced and verified').waitFor();

      filler = fillDisk(path.join(mountPoint, 'filler'));
      writeFile(folder, 'upper-2.stl', 'solid upper again');
      writeFile(folder, 'lower-2.stl', 'solid lower again');
      await waitFor('both new scans held for the full disk', () => app.engine.pairView(pairId)?.heldForDiskFull === 2, 20_000);
      expect(app.engine.pairView(pairId)?.state).toBe('attention');

      await card.getByText('3 synced, 2 waiting: this computer’s disk is full').waitFor();
      await card.getByText('2 files wait for space on this computer’s disk').waitFor();
      expect(await card.locator('header [data-state]').getAttribute('data-state')).toBe('attention');
      const text = await card.innerText();
      expect(text).not.toContain('still being written');
      expect(text).not.toContain('All 3 files synced');

      fs.rmSync(filler);
      filler = undefined;
      await card.getByText('All 5 files synced and verified').waitFor({ timeout: 30_000 });
      expect(app.engine.pairView(pairId)?.heldForDiskFull).toBe(0);
      expect(await card.innerText()).not.toContain('disk is full');
    } finally {
      await page.close();
    }
  });
});
