/**
 * `patient-docs-sync run --once` (a scheduled task) while the workstation's disk fills up: a scan
 * found then has stopped changing but cannot be recorded in the journal, so it waits for space.
 * The summary says so, instead of calling it "still being written … did not stop changing" (which
 * sent IT looking at the scanner). The sync home is a small tmpfs (the tests run as root, like CI).
 */
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SyncApp } from '../electron/sync/app/sync-app.js';
import { openSyncHome } from '../electron/sync/home/sync-home.js';
import { fillDisk } from './helpers/disk.js';
import { spawnCli, startServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { waitFor, writeFile } from './helpers/sync.js';


describe('run --once while the disk fills up', () => {
  const mountPoint = tempDir('catchup-disk-full-once');
  const folder = tempDir('catchup-disk-full-once-scans');
  const home = path.join(mountPoint, 'home');
  let mounted = false;

  beforeAll(async () => {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'tmpfs', mountPoint]);
    mounted = true;
    // Connected to a server that is then stopped: the first scan waits out a long retry delay,
    // which keeps `run --once` going while the disk fills.
    const server = await startServerProcess();
    try {
      const opened = await openSyncHome(home);
      const app = new SyncApp({ home, settings: opened.settings, secrets: opened.secrets, shell: 'headless', version: 'test', webhooks: false });
      try {
        await app.setupRemote({ serverUrl: server.url, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG });
        await app.updateSettings({ settleMs: 200 });
        await app.addPair({ folder, patientId: PATIENT, patientName: 'Jane Roe', remoteBasePath: '/disk-full-once' });
      } finally {
        await app.stop();
      }
    } finally {
      await server.stop();
    }
  });
  afterAll(() => {
    if (mounted) execFileSync('umount', ['-l', mountPoint]);
    fs.rmSync(mountPoint, { recursive: true, force: true });
    fs.rmSync(folder, { recursive: true, force: true });
  });

  it('names the files found on the full disk as waiting for space, not as still being written', async () => {
    writeFile(folder, 'fri-upper.stl', 'solid friday');
    const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: '60000' };
    const run = spawnCli(home, ['run', '--once', '--timeout', '15'], env);
    let stderr = '';
    run.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    let filler: string | undefined;
    try {
      const journal = new Database(path.join(home, 'journal.db'), { readonly: true });
      try {
        await waitFor('the first scan to wait for the server', () => journal.prepare("SELECT 1 FROM files WHERE state = 'waiting'").get() !== undefined, 12_000);
      } finally {
        journal.close();
      }
      filler = fillDisk(path.join(mountPoint, 'filler'));
      writeFile(folder, 'mon-lower.stl', 'solid monday');
      await waitFor('run to find the disk full', () => stderr.includes('disk is full'), 12_000);
      const result = await run.done;
      expect(result.code).toBe(2);
      expect(result.stdout).toContain('disk full  This computer’s disk is full');
      expect(result.stdout).toContain(`waiting for space  1 file(s) in ${folder} `);
      expect(result.stdout).not.toContain('still being written');
      expect(result.stdout).toMatch(/not synced {2}fri-upper\.stl {2}\[waiting\]/);
      expect(result.stdout).toContain('2 file(s) not synced');
    } finally {
      if (filler) fs.rmSync(filler, { force: true });
      run.child.kill('SIGTERM');
      await run.done;
    }
  });
});
