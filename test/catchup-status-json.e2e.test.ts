/**
 * An integrator's monitoring script reads `patient-docs-sync status --json`: a failed file carries
 * `hint`, what staff can do about it, in the words the text output ends the failure with (before,
 * only the text output said it, and a script had no way to tell a file someone must act on).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, tempDir } from './helpers/server.js';
import { prepareSyncHome } from './helpers/sync.js';

const CLI_HINT = 'Ask IT to raise the server’s upload limit, then run `patient-docs-sync retry`.';

interface JsonFile {
  relativePath: string;
  state: string;
  error: { code: string } | null;
  hint: string | null;
}

describe('status --json on failed files', () => {
  const scratch = tempDir('catchup-status-json');
  const home = path.join(scratch, 'home');
  const folder = path.join(scratch, 'scans');
  let server: ServerProcess;

  beforeAll(async () => {
    server = await startServerProcess({ PATIENT_DOCS_MAX_UPLOAD_BYTES: '1MiB' });
    fs.mkdirSync(folder, { recursive: true });
    await prepareSyncHome(home, { serverUrl: server.url, folder, remoteBasePath: '/status-json' });
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('gives each file a hint: what to do for a failure where staff can act, else null', async () => {
    fs.writeFileSync(path.join(folder, 'volume.dcm'), Buffer.alloc(3 * 1024 * 1024, 1));
    fs.writeFileSync(path.join(folder, 'upper.stl'), 'solid upper');
    fs.writeFileSync(path.join(folder, 'empty.stl'), '');
    const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret };
    const run = await runCli(home, ['run', '--once', '--timeout', '60'], env);
    expect(run.code).toBe(2);

    const status = await runCli(home, ['status', '--json'], env);
    expect(status.code).toBe(0);
    const parsed = JSON.parse(status.stdout) as { pairs: Array<{ files: JsonFile[] }> };
    const files = new Map(parsed.pairs[0]!.files.map((file) => [file.relativePath, file]));
    expect(files.get('volume.dcm')).toMatchObject({ state: 'failed', error: { code: 'TOO_LARGE' }, hint: CLI_HINT });
    // A failure staff cannot act on (an empty file is never a scan) and a synced file: the field is there, null.
    expect(files.get('empty.stl')).toMatchObject({ state: 'failed', hint: null });
    expect(files.get('upper.stl')).toMatchObject({ state: 'synced', hint: null });

    // The text output ends the same failure with the same words.
    const text = await runCli(home, ['status'], env);
    expect(text.stdout).toMatch(/failed {4}volume\.dcm {2}— .*Ask IT to raise the server’s upload limit, then run `patient-docs-sync retry`\.$/m);
  });
});
