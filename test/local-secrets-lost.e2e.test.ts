/**
 * A power cut half-writes the encrypted secrets file (no keychain on this workstation): it is set
 * aside by secrets.ts, and `run --once` must say at once that the client secret is missing and
 * what to do, instead of waiting out its timeout (30 minutes by default) with files "queued".
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { writeFile } from './helpers/sync.js';

const env = { PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: '100' };
const withSecret = { ...env, PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret };

describe('the secrets file half-written by a power cut', () => {
  let server: ServerProcess;
  const scratch = tempDir('local-secrets-lost');

  beforeAll(async () => {
    server = await startServerProcess();
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('run --once says the client secret is missing and how to give it again, at once; after connect the file syncs', async () => {
    const home = path.join(scratch, 'home');
    const scans = path.join(scratch, 'scans');
    writeFile(scans, 'upper.stl', 'solid upper');
    const connect = () => runCli(home, ['connect', '--server', server.url, '--client-id', CLIENT.id, '--organization', ORG], withSecret);
    expect((await connect()).code).toBe(0);
    expect((await runCli(home, ['add-pair', '--folder', scans, '--patient', PATIENT, '--path', '/secrets-lost'], env)).code).toBe(0);
    const secrets = path.join(home, 'secrets.enc');
    if (!fs.existsSync(secrets)) return; // a keychain holds the secret here: nothing to half-write
    fs.truncateSync(secrets, Math.floor(fs.statSync(secrets).size / 2));

    const started = Date.now();
    const run = await runCli(home, ['run', '--once', '--timeout', '60'], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('client secret is not stored on this computer any more');
    expect(run.stderr).toContain('patient-docs-sync connect');
    expect(Date.now() - started).toBeLessThan(30_000);

    expect((await connect()).code).toBe(0);
    const again = await runCli(home, ['run', '--once', '--timeout', '60'], env);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toContain('synced   upper.stl');
  });
});
