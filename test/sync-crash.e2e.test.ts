/**
 * Crash safety (issue 5): the engine, run as the real CLI process, is killed with SIGKILL at random
 * points of a 1,000-file sync, five times, then allowed to finish. Every file ends synced exactly
 * once — one document each, one version each — and the journal agrees with the server.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../electron/sync/api/api-client.js';
import { openJournal } from '../electron/sync/journal/open-journal.js';
import { openSettings } from '../electron/sync/home/settings.js';
import { runCli, spawnCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { allDocuments, writeFile } from './helpers/sync.js';

const FILES = 1000;
const KILLS = 5;

describe('kill -9 during a 1,000-file sync', () => {
  let server: ServerProcess;
  let home: string;
  let folder: string;
  beforeAll(async () => {
    server = await startServerProcess();
    home = tempDir('crash-home');
    folder = tempDir('crash-folder');
    for (let index = 0; index < FILES; index += 1) writeFile(folder, `case-${String(index % 25).padStart(2, '0')}/scan-${index}.dcm`, `DICM ${index} ${'x'.repeat(index % 200)}`);
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(folder, { recursive: true, force: true });
  });

  it('resumes after every kill; in the end each file is synced exactly once and the journal agrees with the server', async () => {
    const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: '100' };
    expect((await runCli(home, ['connect', '--server', server.url, '--client-id', CLIENT.id, '--organization', ORG], env)).code).toBe(0);
    expect((await runCli(home, ['add-pair', '--folder', folder, '--patient', PATIENT, '--path', '/crash'], env)).code).toBe(0);
    expect((await runCli(home, ['config', '--concurrency', '12', '--settle-ms', '200'], env)).code).toBe(0);
    // Read once: the settings file is checked against its schema at each open (tens of ms of CPU),
    // and the loop below looks at the journal every 25 ms while the CLI and the server need the cores.
    const pairId = openSettings(home).get('pairs')[0]!.id;

    const syncedAfterKill: number[] = [];
    for (let kill = 0; kill < KILLS; kill += 1) {
      const before = countSynced(home, pairId);
      const run = spawnCli(home, ['run', '--once'], env);
      let exited = false;
      void run.done.then(() => (exited = true));
      // Kill in the middle of the work, whatever the machine's speed: once this run has verified a
      // random handful of files (the kill then lands in a random step of the files under way).
      const progress = 10 + Math.floor(Math.random() * 60);
      const deadline = Date.now() + 60_000;
      // One connection for the looks of this run (opening the journal checks it whole: a few ms of
      // CPU each time), closed before the kill as the looks of a new connection each were.
      const watched = openJournal(path.join(home, 'journal.db'));
      try {
        while (!exited && Date.now() < deadline && watched.counts(pairId).synced < Math.min(before + progress, FILES - 1)) await delay(25);
      } finally {
        watched.close();
      }
      await delay(Math.floor(Math.random() * 100));
      run.child.kill('SIGKILL');
      const result = await run.done;
      expect(result.signal).toBe('SIGKILL');
      syncedAfterKill.push(countSynced(home, pairId));
    }
    const finish = await runCli(home, ['run', '--once', '--timeout', '120'], env);
    expect(finish.stdout).toContain('every file is synced and verified');
    expect(finish.code).toBe(0);
    // The kills happened while work was under way, not before or after it.
    expect(syncedAfterKill.some((count) => count > 0 && count < FILES)).toBe(true);

    const api = new ApiClient({ serverUrl: server.url, organizationId: ORG, credentials: { tokenUrl: `${server.url}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret } });
    const documents = await allDocuments(api, PATIENT, '/crash');
    expect(documents).toHaveLength(FILES);
    const byKey = new Map(documents.map((document) => [`${document.path}/${document.fileName}`, document]));
    expect(byKey.size).toBe(FILES);
    expect(documents.every((document) => document.hasContent && document.version === 1)).toBe(true);

    const journal = openJournal(path.join(home, 'journal.db'));
    try {
      const rows = journal.byPair(pairId);
      expect(rows).toHaveLength(FILES);
      for (const row of rows) {
        const document = byKey.get(`${row.remotePath}/${row.fileName}`);
        expect(row.state).toBe('synced');
        expect(document?.id).toBe(row.documentId);
        const local = fs.readFileSync(path.join(folder, ...row.relativePath.split('/')));
        expect(document?.sha256).toBe(createHash('sha256').update(local).digest('hex'));
        expect(document?.fileSize).toBe(local.length);
        expect(row.remoteVersion).toBe(1);
      }
    } finally {
      journal.close();
    }
  }, 240_000);
});

function countSynced(home: string, pairId: string): number {
  const journal = openJournal(path.join(home, 'journal.db'));
  try {
    return journal.counts(pairId).synced;
  } finally {
    journal.close();
  }
}
