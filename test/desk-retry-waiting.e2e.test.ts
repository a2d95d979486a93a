/**
 * The server was down (an update, a restart) and scans wait out a retry delay that grew meanwhile.
 * Once it is back, staff need not wait for that delay: "Try now" in the app and
 * `patient-docs-sync retry` next to a running `run` send the waiting files at once (before, the
 * app had no button for waiting files and `retry` answered "no failed file").
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchHeadless } from '../electron/headless/main.js';
import { SyncApp } from '../electron/sync/app/sync-app.js';
import { openSyncHome } from '../electron/sync/home/sync-home.js';
import { type RestartableServer, restartableServer, ROOT, runCli, spawnCli } from './helpers/processes.js';
import { closeContexts, useBrowser } from './helpers/renderer-page.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { waitFor, writeFile } from './helpers/sync.js';

/** A first retry 30–60 s out: far longer than the few seconds the file may take after Retry. */
const LONG_BACKOFF_MS = 60_000;

describe('files waiting for a server that is back', () => {
  const scratch = tempDir('desk-retry-waiting');
  const dataDir = path.join(scratch, 'server-data');
  let servers: RestartableServer;
  let serverUrl: string;
  let browser: Browser;
  let homes = 0;

  /** A sync home connected to the server (while it runs), with one folder paired. */
  async function connectedHome(): Promise<{ home: string; folder: string }> {
    const home = path.join(scratch, `home-${(homes += 1)}`);
    const folder = path.join(scratch, `scans-${homes}`);
    fs.mkdirSync(folder, { recursive: true });
    const opened = await openSyncHome(home);
    const app = new SyncApp({ home, settings: opened.settings, secrets: opened.secrets, shell: 'headless', version: 'test', webhooks: false });
    try {
      await app.setupRemote({ serverUrl, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG });
      await app.updateSettings({ settleMs: 200, webhook: { port: 0 } });
      await app.addPair({ folder, patientId: PATIENT, patientName: 'Jane Roe', remoteBasePath: `/retry-waiting-${homes}` });
    } finally {
      await app.stop();
    }
    return { home, folder };
  }

  const startServer = () => servers.start();
  // The same data directory is used again: stop the process without removing it.
  const stopServer = () => servers.stop();

  beforeAll(async () => {
    servers = await restartableServer(dataDir);
    [serverUrl, browser] = await Promise.all([startServer(), useBrowser()]);
  });
  afterAll(async () => {
    await closeContexts(browser);
    await servers?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('"Try now" on the folder card sends a waiting file at once', async () => {
    const { home, folder } = await connectedHome();
    await stopServer();
    const headless = await launchHeadless({ home, firstRun: 'choose', rendererDir: path.join(ROOT, 'dist/renderer'), log: () => undefined, engine: { backoff: { baseMs: LONG_BACKOFF_MS, maxMs: LONG_BACKOFF_MS } } });
    const page = await browser.newPage();
    try {
      const pairId = headless.app.settings.get('pairs')[0]!.id;
      writeFile(folder, 'upper.stl', 'solid upper');
      const waiting = await waitFor('the file to wait for the server', () => headless.app.engine.fileViews(pairId, ['waiting'])[0]);
      expect(waiting.nextAttemptAt! - Date.now()).toBeGreaterThan(20_000);
      await page.goto(headless.openUrl);
      const card = page.locator('article.pair-card');
      await card.getByText('One file will be tried again').waitFor();

      await startServer();
      const clicked = Date.now();
      await card.getByRole('button', { name: 'Try now', exact: true }).click();
      await card.getByText('The file is synced and verified').waitFor({ timeout: 15_000 });
      expect(Date.now() - clicked).toBeLessThan(15_000);
    } finally {
      await page.close();
      await headless.stop();
    }
  });

  it('`patient-docs-sync retry` next to a running `run` sends a waiting file at once', async () => {
    const { home, folder } = await connectedHome();
    await stopServer();
    const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: String(LONG_BACKOFF_MS) };
    const run = spawnCli(home, ['run'], env);
    let output = '';
    run.child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await waitFor('run to watch', () => output.includes('watching 1 folder'), 30_000);
      writeFile(folder, 'lower.stl', 'solid lower');
      // Read straight from the journal `run` writes (what `status` shows), without a process per look.
      const journal = new Database(path.join(home, 'journal.db'), { readonly: true });
      try {
        await waitFor('the file to wait for the server', () => journal.prepare("SELECT 1 FROM files WHERE state = 'waiting'").get() !== undefined, 30_000);
      } finally {
        journal.close();
      }

      await startServer();
      const retried = await runCli(home, ['retry'], env);
      expect(retried.code).toBe(0);
      expect(retried.stdout).toContain('1 waiting file(s) will be tried again');
      const asked = Date.now();
      await waitFor('run to verify the file', () => output.includes('synced   lower.stl'), 15_000);
      expect(Date.now() - asked).toBeLessThan(15_000);
    } finally {
      run.child.kill('SIGTERM');
      await run.done;
    }
  });
});
