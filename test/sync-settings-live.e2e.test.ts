/**
 * IT changes a workstation's settings with `patient-docs-sync config` (or adds a folder with
 * `add-pair`) while `patient-docs-sync run` runs as a service: the running engine takes the change up
 * within seconds, without a restart, and says so in one line. A settings file broken by hand meanwhile stops nothing: the engine keeps the
 * settings it had, says why, and takes the file up again once it is fixed.
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, PATIENT, tempDir } from './helpers/server.js';
import { prepareSyncHome, waitFor, writeFile } from './helpers/sync.js';

const scratch = tempDir('sync-settings-live');
let server: ServerProcess;

beforeAll(async () => {
  server = await startServerProcess();
}, 60_000);

afterAll(async () => {
  await server?.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
});

describe('a running sync takes up settings changed by another process', () => {
  it('applies `config` and `add-pair` within seconds, keeps its settings while the file is broken, and takes it up again once fixed', async () => {
    const home = path.join(scratch, 'home');
    const folder = path.join(scratch, 'scans');
    fs.mkdirSync(folder, { recursive: true });
    await prepareSyncHome(home, { serverUrl: server.url, folder, remoteBasePath: '/live' });
    writeFile(folder, 'upper.stl', `solid upper ${'x'.repeat(2000)}`);
    const journal = new Database(path.join(home, 'journal.db'), { timeout: 5000 });
    // The last check was an hour ago: with 240 minutes the next is hours away, with 15 it is due now.
    // Recorded before the engine starts, so no pass of its own can end after it and move it.
    const anHourAgo = Date.now() - 60 * 60_000;
    journal.prepare("INSERT INTO meta (key, value) VALUES ('last-recheck-at', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(String(anHourAgo));

    // The clinic's own interval (no PATIENT_DOCS_SYNC_RECHECK_MS): every 240 minutes by default.
    const run = spawnCli(home, ['run'], { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret });
    let stdout = '';
    let stderr = '';
    run.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    run.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const state = (name: string) => (journal.prepare('SELECT state FROM files WHERE relative_path = ?').pluck().get(name) as string | undefined) ?? null;
    const lastRecheckAt = () => Number((journal.prepare("SELECT value FROM meta WHERE key = 'last-recheck-at'").pluck().get() as string | undefined) ?? NaN);
    const settingsFile = path.join(home, 'settings.json');
    const settingsLines = () => stdout.split('\n').filter((line) => line.startsWith('settings '));
    try {
      await waitFor('the scan to be synced', () => state('upper.stl') === 'synced', 30_000);
      // Not due with 240 minutes: the engine started without a pass.
      expect(lastRecheckAt()).toBe(anHourAgo);

      const configured = await runCli(home, ['config', '--recheck-minutes', '15']);
      expect(configured.code).toBe(0);
      const changedAt = Date.now();
      await waitFor('run to say it applied the new interval', () => settingsLines().length === 1, 10_000);
      expect(settingsLines()).toEqual([
        `settings Settings changed in ${settingsFile}, applied without a restart: synced files checked on the server: every 15 minutes (was every 240 minutes).`,
      ]);
      // The engine really moved its next check: it ran at once, not in 4 hours.
      await waitFor('the re-check the new interval made due', () => lastRecheckAt() >= changedAt, 10_000);
      const status = JSON.parse((await runCli(home, ['status', '--json'])).stdout) as { recheckMinutes: number };
      expect(status.recheckMinutes).toBe(15);

      // An ignore pattern set meanwhile is in force for the next file dropped in the folder.
      expect((await runCli(home, ['config', '--ignore', '*.tmp'])).code).toBe(0);
      await waitFor('run to say it ignores *.tmp', () => settingsLines().length === 2, 10_000);
      expect(settingsLines()[1]).toMatch(/applied without a restart: files ignored: \*\.tmp \(was none\)\.$/);
      writeFile(folder, 'lower.tmp', 'a scanner temp file');
      writeFile(folder, 'lower.stl', `solid lower ${'y'.repeat(2000)}`);
      await waitFor('the new scan to be synced', () => state('lower.stl') === 'synced', 30_000);
      await delay(1000);
      expect(state('lower.tmp')).toBeNull();

      // A folder added with `add-pair` is synced by the running engine too.
      const second = path.join(scratch, 'cbct');
      fs.mkdirSync(second);
      const added = await runCli(home, ['add-pair', '--folder', second, '--patient', PATIENT, '--path', '/live-cbct', '--name', 'Jane Roe'], { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret });
      expect(added.code).toBe(0);
      await waitFor('run to say it syncs the new folder', () => settingsLines().length === 3, 10_000);
      expect(settingsLines()[2]).toBe(`settings Settings changed in ${settingsFile}, applied without a restart: now syncing ${second} → Jane Roe /live-cbct.`);
      writeFile(second, 'scan.pdf', '%PDF-1.4 cbct report');
      await waitFor('the new folder\'s scan to be synced', () => state('scan.pdf') === 'synced', 30_000);

      // Broken by hand (an editor saved half a file): said once on stderr, and syncing goes on as before.
      const good = fs.readFileSync(settingsFile, 'utf8');
      fs.writeFileSync(settingsFile, good.slice(0, good.length / 2));
      const broken = `problem  The settings file ${settingsFile} was changed but cannot be used (it is not valid JSON): the settings from before stay in force until it is fixed.`;
      await waitFor('run to say the file cannot be used', () => stderr.includes(broken), 10_000);
      writeFile(folder, 'bite.stl', `solid bite ${'z'.repeat(2000)}`);
      writeFile(folder, 'bite.tmp', 'still ignored');
      await waitFor('a scan dropped meanwhile to be synced', () => state('bite.stl') === 'synced', 30_000);
      expect(state('bite.tmp')).toBeNull();
      expect(run.child.exitCode).toBeNull();
      // A value the schema refuses is refused the same way, naming it.
      fs.writeFileSync(settingsFile, good.replace(/"concurrency": \d+/, '"concurrency": 99'));
      await waitFor('run to name the refused value', () => /problem {2}The settings file .* cannot be used \(not allowed: .*concurrency.* must be <= 32\)/.test(stderr), 10_000);
      expect(stderr.split('\n').filter((line) => line.startsWith('problem')).length).toBe(2);

      // Fixed (with a change): taken up like any other change.
      fs.writeFileSync(settingsFile, good.replace(/"concurrency": \d+/, '"concurrency": 2'));
      await waitFor('run to apply the fixed file', () => settingsLines().length === 4, 10_000);
      expect(settingsLines()[3]).toMatch(/applied without a restart: files uploaded at once: 2 \(was 3\)\.$/);
      expect(run.child.exitCode).toBeNull();
    } finally {
      journal.close();
      run.child.kill('SIGTERM');
      await run.done;
    }
  }, 120_000);
});
