/**
 * Monday morning without a new scan: the server was off over the weekend and every scan waits out
 * a retry delay of minutes. No file is due to find out that the server is back, so the engine asks
 * now and then itself (one small request): the waiting files go within seconds of the server
 * answering, not when the first of their delays runs out.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../electron/sync/api/api-client.js';
import { SyncEngine } from '../electron/sync/engine/engine.js';
import type { Journal } from '../electron/sync/journal/journal.js';
import { openJournal } from '../electron/sync/journal/open-journal.js';
import { type RestartableServer, restartableServer } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { waitFor, writeFile } from './helpers/sync.js';

/** Retry delays of 30 s and more: far longer than the few seconds the files may take once the server is back. */
const LONG_BACKOFF_MS = 60_000;

describe('the engine finds out by itself that the server is back', () => {
  const scratch = tempDir('catchup-probe');
  const dataDir = path.join(scratch, 'server-data');
  const folder = path.join(scratch, 'scans');
  let servers: RestartableServer;
  let journal: Journal;
  let engine: SyncEngine;

  const startServer = () => servers.start();
  // The same data directory is used again: stop the process without removing it.
  const stopServer = () => servers.stop();

  beforeAll(async () => {
    fs.mkdirSync(folder, { recursive: true });
    servers = await restartableServer(dataDir);
    const url = await startServer();
    const api = new ApiClient({ serverUrl: url, organizationId: ORG, credentials: { tokenUrl: `${url}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret } });
    journal = openJournal(path.join(scratch, 'journal.db'));
    engine = new SyncEngine({
      journal,
      api,
      tuning: { concurrency: 2, settleMs: 200, rescanMinutes: 0, ignorePatterns: [] },
      backoff: { baseMs: LONG_BACKOFF_MS, maxMs: LONG_BACKOFF_MS },
      publishEveryMs: 50,
      idlePollMs: 500,
      probeMs: 500,
    });
    await engine.start([{ id: 'pair-1', folder, patientId: PATIENT, patientName: 'Jane Roe', remoteBasePath: '/catchup-probe', paused: false }]);
  });
  afterAll(async () => {
    await engine?.stop();
    journal?.close();
    await servers?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  const state = (name: string) => journal.find('pair-1', name);

  it('waiting scans go within seconds of the server answering, with no new scan to find it out', async () => {
    writeFile(folder, 'thu-upper.stl', 'solid thursday');
    await waitFor('the first scan synced', () => state('thu-upper.stl')?.state === 'synced', 20_000);

    await stopServer();
    const weekend = ['fri-upper.stl', 'sat-bite.stl', 'sun-cbct.pdf'];
    for (const name of weekend) writeFile(folder, name, `solid ${name}`);
    await waitFor('every weekend scan to wait for the server', () => weekend.every((name) => state(name)?.state === 'waiting'), 20_000);
    expect(engine.isOnline).toBe(false);
    for (const name of weekend) expect(state(name)!.nextAttemptAt! - Date.now()).toBeGreaterThan(20_000);

    await startServer();
    const back = Date.now();
    await waitFor('every scan synced', () => weekend.every((name) => state(name)?.state === 'synced'), 15_000);
    expect(Date.now() - back).toBeLessThan(15_000);
    expect(engine.isOnline).toBe(true);
  });
});
