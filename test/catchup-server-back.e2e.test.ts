/**
 * Monday morning: the clinic's server was off over the weekend while a workstation's `run` kept
 * finding scans, each waiting out a retry delay that grew meanwhile. Once a request goes through
 * again, the files that waited only because nothing answered go at once (before, staff saw
 * "waiting" for minutes with the server up, until each file's own delay ran out).
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SyncApp } from '../electron/sync/app/sync-app.js';
import { openSyncHome } from '../electron/sync/home/sync-home.js';
import { type RestartableServer, restartableServer, spawnCli } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { waitFor, writeFile } from './helpers/sync.js';

/** Retry delays of 30 s and more: far longer than the few seconds the files may take once the server is back. */
const LONG_BACKOFF_MS = 60_000;

describe('the sync engine catches up by itself when the server is back', () => {
  const scratch = tempDir('catchup-server-back');
  const dataDir = path.join(scratch, 'server-data');
  let servers: RestartableServer;

  const startServer = () => servers.start();
  // The same data directory is used again: stop the process without removing it.
  const stopServer = () => servers.stop();

  beforeAll(async () => {
    servers = await restartableServer(dataDir);
    await startServer();
  });
  afterAll(async () => {
    await servers?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('files waiting for an unreachable server go as soon as one request gets through, not when their delays run out', async () => {
    const home = path.join(scratch, 'home');
    const folder = path.join(scratch, 'scans');
    fs.mkdirSync(folder, { recursive: true });
    const opened = await openSyncHome(home);
    const app = new SyncApp({ home, settings: opened.settings, secrets: opened.secrets, shell: 'headless', version: 'test', webhooks: false });
    try {
      await app.setupRemote({ serverUrl: servers.url, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG });
      await app.updateSettings({ settleMs: 200, concurrency: 2, webhook: { port: 0 } });
      await app.addPair({ folder, patientId: PATIENT, patientName: 'Jane Roe', remoteBasePath: '/catchup' });
    } finally {
      await app.stop();
    }
    await stopServer();

    const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: String(LONG_BACKOFF_MS) };
    const run = spawnCli(home, ['run'], env);
    let output = '';
    run.child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const weekend = ['fri-upper.stl', 'fri-lower.stl', 'sat-bite.stl', 'sat-cbct.pdf', 'sun-upper.stl'];
    try {
      await waitFor('run to watch', () => output.includes('watching 1 folder'), 30_000);
      for (const name of weekend) writeFile(folder, name, `solid ${name}`);
      // Read straight from the journal `run` writes (what `status` shows), without a process per look.
      const journal = new Database(path.join(home, 'journal.db'), { readonly: true });
      try {
        const waiting = await waitFor(
          'every weekend scan to wait for the server',
          () => {
            const rows = journal.prepare("SELECT next_attempt_at AS at, error_code AS code FROM files WHERE state = 'waiting'").all() as Array<{ at: number; code: string }>;
            return rows.length === weekend.length && rows;
          },
          30_000,
        );
        for (const row of waiting) {
          expect(row.code).toBe('UNREACHABLE');
          expect(row.at - Date.now()).toBeGreaterThan(20_000);
        }
      } finally {
        journal.close();
      }

      await startServer();
      // Monday's first scan is queued, not waiting: it is what finds the server back.
      writeFile(folder, 'mon-upper.stl', 'solid monday');
      const back = Date.now();
      // No stampede: never more files under way at once than the concurrency setting (2).
      const watching = new Database(path.join(home, 'journal.db'), { readonly: true });
      let mostAtOnce = 0;
      try {
        await waitFor(
          'every scan to be verified',
          () => {
            const { n } = watching.prepare("SELECT COUNT(*) AS n FROM files WHERE state IN ('creating', 'uploading', 'verifying')").get() as { n: number };
            mostAtOnce = Math.max(mostAtOnce, n);
            return [...weekend, 'mon-upper.stl'].every((name) => output.includes(`synced   ${name}`));
          },
          20_000,
          20,
        );
      } finally {
        watching.close();
      }
      expect(Date.now() - back).toBeLessThan(20_000);
      expect(mostAtOnce).toBeLessThanOrEqual(2);
    } finally {
      run.child.kill('SIGTERM');
      await run.done;
    }
  });
});
