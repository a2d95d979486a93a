/**
 * The workstation's disk fills up (a CBCT export on a small disk) while the engine runs: the
 * journal's writes fail with SQLITE_FULL and the settings' with ENOSPC. Nothing may crash, no file
 * may be called synced that is not, the user reads plain words, and the sync goes on by itself
 * once space is freed. The sync home is a small tmpfs (the tests run as root, like CI).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAIN_MESSAGES } from '../shared/bridge-errors.js';
import { ApiClient } from '../electron/sync/api/api-client.js';
import { toCodedError } from '../electron/sync/app/bridge-error.js';
import { SyncEngine } from '../electron/sync/engine/engine.js';
import type { Journal } from '../electron/sync/journal/journal.js';
import { openJournal } from '../electron/sync/journal/open-journal.js';
import { openSettings } from '../electron/sync/home/settings.js';
import { runCli, spawnCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { fillDisk } from './helpers/disk.js';
import { allDocuments, waitFor, writeFile } from './helpers/sync.js';


describe("the sync home's disk is full", () => {
  const mountPoint = tempDir('local-disk-full');
  let mounted = false;
  let server: ServerProcess;
  let api: ApiClient;

  beforeAll(async () => {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'tmpfs', mountPoint]);
    mounted = true;
    server = await startServerProcess();
    api = new ApiClient({ serverUrl: server.url, organizationId: ORG, credentials: { tokenUrl: `${server.url}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret } });
  });
  afterAll(async () => {
    await server?.stop();
    if (mounted) execFileSync('umount', ['-l', mountPoint]);
    fs.rmSync(mountPoint, { recursive: true, force: true });
  });

  it('files found while the disk is full wait with a plain message, and sync by themselves once space is freed', async () => {
    const home = path.join(mountPoint, 'engine');
    fs.mkdirSync(home);
    const folder = tempDir('local-disk-full-scans');
    const journal: Journal = openJournal(path.join(home, 'journal.db'));
    const engine = new SyncEngine({
      journal,
      api,
      tuning: { concurrency: 2, settleMs: 200, rescanMinutes: 0, ignorePatterns: [] },
      backoff: { baseMs: 100, maxMs: 500 },
      publishEveryMs: 50,
      idlePollMs: 200,
      diskCheckMs: 200,
    });
    const told: Array<string | null> = [];
    engine.onEvent((event) => {
      if (event.type === 'disk-full-changed') told.push(event.message);
    });
    const pair = { id: 'pair-full', folder, patientId: PATIENT, remoteBasePath: '/disk-full', paused: false };
    let filler: string | undefined;
    try {
      await engine.start([pair]);
      writeFile(folder, 'upper.stl', 'solid upper');
      await waitFor('the first scan synced', () => journal.find(pair.id, 'upper.stl')?.state === 'synced');

      filler = fillDisk(path.join(mountPoint, 'filler'));
      writeFile(folder, 'lower.stl', 'solid lower');
      writeFile(folder, 'upper.stl', 'solid upper, exported again');
      await waitFor('the full disk noticed', () => engine.diskFullMessage);
      expect(engine.diskFullMessage).toBe(PLAIN_MESSAGES.DISK_FULL);
      expect(engine.diskFullMessage).toMatch(/disk is full.*Free some space/);
      // Not settled: `run --once` must not report every file synced.
      expect(engine.isSettled()).toBe(false);
      expect(journal.find(pair.id, 'lower.stl')?.state).not.toBe('synced');
      expect((await allDocuments(api, PATIENT, '/disk-full')).map((document) => `${document.fileName} v${document.version}`)).toEqual(['upper.stl v1']);

      fs.rmSync(filler);
      filler = undefined;
      await waitFor('both files synced once space is back', () => journal.find(pair.id, 'lower.stl')?.state === 'synced' && journal.find(pair.id, 'upper.stl')?.state === 'synced' && engine.isSettled(), 20_000);
      expect(engine.diskFullMessage).toBeNull();
      expect(told).toEqual([PLAIN_MESSAGES.DISK_FULL, null]);
      const documents = await allDocuments(api, PATIENT, '/disk-full');
      expect(documents.map((document) => `${document.fileName} v${document.version} ${document.fileSize}`).sort()).toEqual([
        `lower.stl v1 ${'solid lower'.length}`,
        `upper.stl v2 ${'solid upper, exported again'.length}`,
      ]);
    } finally {
      if (filler) fs.rmSync(filler, { force: true });
      await engine.stop();
      journal.close();
      fs.rmSync(folder, { recursive: true, force: true });
    }
  });

  it('patient-docs-sync run started on a full disk says so once, waits, and syncs once space is freed', async () => {
    const home = path.join(mountPoint, 'cli');
    const scans = tempDir('local-disk-full-cli');
    const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: '100', PATIENT_DOCS_SYNC_DISK_CHECK_MS: '200' };
    expect((await runCli(home, ['connect', '--server', server.url, '--client-id', CLIENT.id, '--organization', ORG], env)).code).toBe(0);
    expect((await runCli(home, ['config', '--settle-ms', '200'], env)).code).toBe(0);
    expect((await runCli(home, ['add-pair', '--folder', scans, '--patient', PATIENT, '--path', '/disk-full-cli'], env)).code).toBe(0);
    let filler: string | undefined = fillDisk(path.join(mountPoint, 'filler'));
    writeFile(scans, 'lower.stl', 'solid lower');
    const refused = await runCli(home, ['status'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("This computer’s disk is full");
    expect(refused.stderr).not.toContain('disk I/O error\n');

    const service = spawnCli(home, ['run'], env);
    let output = '';
    service.child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    service.child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await waitFor('the full disk told', () => output.includes('Waiting for space'), 20_000);
      fs.rmSync(filler);
      filler = undefined;
      await waitFor('the new scan synced', () => output.includes('synced   lower.stl'), 30_000);
      expect(output.match(/disk is full/g)).toHaveLength(1);
    } finally {
      if (filler) fs.rmSync(filler, { force: true });
      service.child.kill('SIGTERM');
      await service.done;
      fs.rmSync(scans, { recursive: true, force: true });
    }
  });

  it('a setting saved on a full disk is refused in plain words and the file keeps what it held', async () => {
    const home = path.join(mountPoint, 'settings');
    fs.mkdirSync(home);
    const settings = openSettings(home);
    settings.set('concurrency', 2);
    const before = fs.readFileSync(settings.path, 'utf8');
    const filler = fillDisk(path.join(mountPoint, 'filler'));
    try {
      let refused: unknown;
      try {
        settings.set('ignorePatterns', Array.from({ length: 200 }, (_, index) => `*.export-${index}-${'x'.repeat(40)}`));
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeDefined();
      expect(toCodedError(refused)).toMatchObject({ code: 'DISK_FULL', message: PLAIN_MESSAGES.DISK_FULL });
      expect(fs.readFileSync(settings.path, 'utf8')).toBe(before);
      // conf's writer (atomically) removes its temp file asynchronously after the failed write.
      await waitFor('the temp file removed', () => fs.readdirSync(home).every((entry) => !entry.includes('tmp')), 5_000);
    } finally {
      fs.rmSync(filler);
    }
    expect(openSettings(home).get('concurrency')).toBe(2);
  });
});
