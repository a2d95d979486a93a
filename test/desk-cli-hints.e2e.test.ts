/**
 * A scan over the server's upload limit, on a workstation without a display: `run --once` and
 * `status` say what to do about it in the same words as the app ("ask IT to raise the server's
 * upload limit, then …"), with the CLI's way to retry instead of the app's Retry button.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failureHint } from '../renderer/src/documents/failure-hints.js';
import { runCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, tempDir } from './helpers/server.js';
import { prepareSyncHome } from './helpers/sync.js';

const CLI_HINT = 'Ask IT to raise the server’s upload limit, then run `patient-docs-sync retry`.';

describe('the CLI on a file over the upload limit', () => {
  const scratch = tempDir('desk-cli-hints');
  const home = path.join(scratch, 'home');
  const folder = path.join(scratch, 'scans');
  let server: ServerProcess;

  beforeAll(async () => {
    server = await startServerProcess({ PATIENT_DOCS_MAX_UPLOAD_BYTES: '1MiB' });
    fs.mkdirSync(folder, { recursive: true });
    await prepareSyncHome(home, { serverUrl: server.url, folder, remoteBasePath: '/cli-hints' });
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('run --once and status say to ask IT to raise the limit, then run `patient-docs-sync retry`, as the app says with Retry', async () => {
    fs.writeFileSync(path.join(folder, 'volume.dcm'), Buffer.alloc(3 * 1024 * 1024, 1));
    const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret };
    const run = await runCli(home, ['run', '--once', '--timeout', '60'], env);
    expect(run.code).toBe(2);
    expect(run.stdout).toMatch(/^failed {3}volume\.dcm: The file is larger than the server accepts\..*\)/m);
    expect(run.stdout).toContain(`the server accepts up to 1 MB per file. Nothing was uploaded for it. (the server's upload limit is 1048576 bytes (Tus-Max-Size); this file has 3145728 bytes) ${CLI_HINT}`);
    const status = await runCli(home, ['status'], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`failed {4}volume\\.dcm {2}— The file is larger than the server accepts\\..* ${CLI_HINT.replace(/[.`]/g, '\\$&')}$`, 'm'));
    // The app says the same, with its button: one source of the wording.
    expect(failureHint('TOO_LARGE')).toBe('Ask IT to raise the server’s upload limit, then choose Retry.');
  });
});
