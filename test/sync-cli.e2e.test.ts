/**
 * `patient-docs-sync` as IT scripts it (DESIGN §4): `run --once` exits 0 only when every file of
 * every folder is verified — never while a folder cannot be read, a file is still being written or
 * the timeout cut the run short; `add-pair` refuses a folder that would send scans to two places or
 * to a patient the server refuses; `retry` brings failed files back once the cause is fixed; and a
 * secret typed as an argument is never echoed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { runCli, spawnCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { ADMIN_TOKEN, CLIENT, ORG, PATIENT, PATIENT_WITHOUT_CONSENT, tempDir } from './helpers/server.js';
import { prepareSyncHome, writeFile } from './helpers/sync.js';

const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: '100' };

describe('patient-docs-sync tells the truth', () => {
  let server: ServerProcess;
  const scratch = tempDir('sync-cli');
  let homes = 0;

  /**
   * A sync home connected to the server, with the settle time short (set up in-process, as
   * `connect` and `config` would: the CLI runs under test are the ones each test is about).
   */
  async function connectedHome(): Promise<string> {
    const home = path.join(scratch, `home-${(homes += 1)}`);
    await prepareSyncHome(home, { serverUrl: server.url });
    return home;
  }
  const folder = (name: string) => {
    const created = path.join(scratch, name);
    fs.mkdirSync(created, { recursive: true });
    return created;
  };
  /** A connected sync home whose folder `name` syncs to Jane Roe's `/name`. */
  async function syncingHome(name: string): Promise<{ home: string; scans: string }> {
    const home = path.join(scratch, `home-${(homes += 1)}`);
    const scans = folder(name);
    await prepareSyncHome(home, { serverUrl: server.url, folder: scans, remoteBasePath: `/${name}` });
    return { home, scans };
  }
  const consent = (method: 'PUT' | 'DELETE') =>
    fetch(`${server.url}/admin/v1/patients/${PATIENT}/consents/${ORG}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then((response) => expect(response.status).toBe(200));

  beforeAll(async () => {
    server = await startServerProcess();
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('refuses a folder inside, around or equal to one already synced, naming the patient it syncs to', async () => {
    const home = await connectedHome();
    const exports = folder('overlap/exports');
    fs.mkdirSync(path.join(exports, 'chair-1'));
    expect((await runCli(home, ['add-pair', '--folder', path.join(exports, 'chair-1'), '--patient', PATIENT, '--name', 'Jane Roe'], env)).code).toBe(0);
    for (const candidate of [path.join(exports, 'chair-1'), exports]) {
      const refused = await runCli(home, ['add-pair', '--folder', candidate, '--patient', PATIENT_WITHOUT_CONSENT], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('already syncs to Jane Roe');
    }
    expect((await runCli(home, ['add-pair', '--folder', '/', '--patient', PATIENT], env)).stderr).toContain('whole drive');
  });

  it('refuses a patient the server does not know or may not share with this clinic', async () => {
    const home = await connectedHome();
    const unknown = await runCli(home, ['add-pair', '--folder', folder('unknown'), '--patient', '5f0e8a3c-1d2b-4c3d-8e9f-0000000000ff'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('does not exist on the server');
    const noConsent = await runCli(home, ['add-pair', '--folder', folder('no-consent'), '--patient', PATIENT_WITHOUT_CONSENT], env);
    expect(noConsent.code).toBe(1);
    expect(noConsent.stderr).toContain('has not given consent');
  });

  it('run --once fails when the folder is gone, naming it, instead of reporting every file synced', async () => {
    const { home, scans: gone } = await syncingHome('unmounted');
    fs.rmSync(gone, { recursive: true });
    const run = await runCli(home, ['run', '--once', '--timeout', '60'], env);
    expect(run.code).toBe(2);
    expect(run.stdout).toContain(`folder not synced  ${gone}: The folder does not exist or cannot be read.`);
    expect(run.stdout).not.toContain('every file is synced');
  });

  it('run --once fails when the timeout stops it while a file is still being written', async () => {
    const { home, scans: busy } = await syncingHome('busy');
    const growing = writeFile(busy, 'scan.stl', 'solid ');
    const writer = setInterval(() => fs.appendFileSync(growing, 'facet '), 50);
    try {
      const run = await runCli(home, ['run', '--once', '--timeout', '4'], env);
      expect(run.code).toBe(2);
      expect(run.stdout).toContain('1 file(s) in');
      expect(run.stdout).toContain('stopped after the --timeout with work still under way');
      expect(run.stdout).not.toContain('every file is synced');
    } finally {
      clearInterval(writer);
    }
  });

  it('retry brings back files that failed for a cause now fixed (consent given again)', async () => {
    const { home, scans } = await syncingHome('consent');
    writeFile(scans, 'upper.stl', 'solid upper');
    await consent('DELETE');
    try {
      const refused = await runCli(home, ['run', '--once', '--timeout', '60'], env);
      expect(refused.code).toBe(2);
      expect(refused.stdout).toContain('not synced  upper.stl  [failed]  The patient has not given consent');
    } finally {
      await consent('PUT');
    }
    // Fixed on the server, but a permanent failure stays failed until someone says so.
    expect((await runCli(home, ['run', '--once', '--timeout', '60'], env)).code).toBe(2);
    const retry = await runCli(home, ['retry'], env);
    expect(retry.stdout).toContain('1 failed file(s) will be tried again at the next run');
    const run = await runCli(home, ['run', '--once', '--timeout', '60'], env);
    expect(run.stdout).toContain('every file is synced and verified');
    expect(run.code).toBe(0);
  }, 60_000);

  it('runs one sync per sync home: a second run is refused while the first runs, and starts once it was killed', async () => {
    const { home, scans } = await syncingHome('one-at-a-time');
    writeFile(scans, 'scan.stl', 'solid');
    const first = spawnCli(home, ['run'], env);
    let output = '';
    first.child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    for (const deadline = Date.now() + 20_000; !output.includes('watching') && Date.now() < deadline; ) await delay(50);
    expect(output).toContain('watching');

    const second = await runCli(home, ['run', '--once', '--timeout', '30'], env);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`already syncing from this computer (process ${first.child.pid})`);

    first.child.kill('SIGKILL');
    await first.done;
    const after = await runCli(home, ['run', '--once', '--timeout', '60'], env);
    expect(after.stdout).toContain('every file is synced and verified');
    expect(after.code).toBe(0);
  }, 60_000);

  it('does not echo an argument that may be a secret', async () => {
    const result = await runCli(path.join(scratch, 'home-echo'), ['connect', 'MY-CLIENT-SECRET-123', '--server', server.url], {});
    expect(result.code).toBe(64);
    expect(result.stderr).toContain('unexpected argument (not shown');
    expect(result.stderr + result.stdout).not.toContain('MY-CLIENT-SECRET-123');
  });
});
