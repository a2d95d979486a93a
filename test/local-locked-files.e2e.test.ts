/**
 * Files the scanner software holds or protects: a file that cannot be opened for reading waits,
 * with a line that names it and says what to do, and is uploaded by itself once it can be read.
 * The CLI runs as an unprivileged user (root reads any file whatever its mode), as on a clinic PC.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { writeFile } from './helpers/sync.js';

const NOBODY = 65534;
const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: '100' };

/** `patient-docs-sync` as the unprivileged user, through setpriv (util-linux). */
function runAsNobody(home: string, args: string[]) {
  return runCli(home, args, { ...env, HOME: home }, undefined, ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--']);
}

describe.runIf(process.getuid?.() === 0)('a scan that cannot be opened', () => {
  let server: ServerProcess;
  const scratch = tempDir('local-locked');

  beforeAll(async () => {
    fs.chmodSync(scratch, 0o755);
    server = await startServerProcess();
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('waits with a line naming it and what to do, and is uploaded once it can be read', async () => {
    const home = path.join(scratch, 'home');
    const scans = path.join(scratch, 'scans');
    writeFile(scans, 'upper.stl', 'solid upper');
    const locked = writeFile(scans, 'lower.stl', 'solid lower');
    fs.chmodSync(locked, 0);
    fs.mkdirSync(home);
    execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, home, scans]);

    expect((await runAsNobody(home, ['connect', '--server', server.url, '--client-id', CLIENT.id, '--organization', ORG])).code).toBe(0);
    expect((await runAsNobody(home, ['config', '--settle-ms', '200'])).code).toBe(0);
    expect((await runAsNobody(home, ['add-pair', '--folder', scans, '--patient', PATIENT, '--path', '/locked'])).code).toBe(0);

    const waiting = await runAsNobody(home, ['run', '--once', '--timeout', '4']);
    expect(waiting.code, waiting.stdout + waiting.stderr).toBe(2);
    expect(waiting.stdout).toContain('synced   upper.stl');
    expect(waiting.stdout).toMatch(/cannot be opened {2}lower\.stl: another program has it open, or this account may not read it/);
    expect(waiting.stdout).not.toContain('still being written');

    fs.chmodSync(locked, 0o644);
    const done = await runAsNobody(home, ['run', '--once', '--timeout', '30']);
    expect(done.code, done.stdout + done.stderr).toBe(0);
    expect(done.stdout).toContain('synced   lower.stl');
  });
});
