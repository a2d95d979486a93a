/**
 * A disk fault on the server took scans the workstations had synced. IT finds them with `verify`
 * and marks them lost (`verify --mark-lost`); a running `patient-docs-sync run` notices at its next
 * re-check and uploads each scan again from the folder — or, when the scan is gone from the folder
 * too, fails it with a reason staff can act on. Before, the app kept showing "synced" for good.
 */
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands, type AdminCommands, type AdminResult, processStorageEnv, runCli, spawnCli, startServerProcess, type ServerProcess, stderrBesidesBusyWait } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { prepareSyncHome, waitFor, writeFile } from './helpers/sync.js';

const scratch = tempDir('sync-content-lost');
let server: ServerProcess;
/** One admin CLI process for the file's commands: what they print and return is under test, not its start. */
let commands: AdminCommands;

beforeAll(async () => {
  server = await startServerProcess();
  commands = adminCommands({ PATIENT_DOCS_DATA_DIR: server.dataDir, ...(await processStorageEnv(server.dataDir)) });
}, 60_000);

afterAll(async () => {
  await commands?.close();
  await server?.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
});

function admin(args: string[]): Promise<AdminResult> {
  return commands.run(...args);
}

async function token(): Promise<string> {
  const response = await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) });
  return ((await response.json()) as { access_token: string }).access_token;
}

interface Row {
  id: number;
  relativePath: string;
  state: string;
  documentId: string;
  remoteVersion: number | null;
  errorCode: string | null;
  errorMessage: string | null;
}

describe('scans the server lost are uploaded again from the workstation', () => {
  it('a running sync re-checks its synced files, uploads a lost scan again, and fails one gone from the folder too with a plain reason', async () => {
    const home = path.join(scratch, 'home');
    const folder = path.join(scratch, 'scans');
    fs.mkdirSync(folder, { recursive: true });
    await prepareSyncHome(home, { serverUrl: server.url, folder, remoteBasePath: '/lost' });
    const scans = ['upper.stl', 'lower.stl', 'bite.stl', 'cbct.pdf', 'notes.pdf'];
    const bytes = new Map(scans.map((name) => [name, Buffer.from(`solid ${name} ${'x'.repeat(5000)}`)]));
    for (const [name, content] of bytes) writeFile(folder, name, content);

    // Checked again every 1.5 s here; a clinic's default is every 4 hours.
    const run = spawnCli(home, ['run'], { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_RECHECK_MS: '1500' });
    let output = '';
    run.child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const journal = new Database(path.join(home, 'journal.db'), { readonly: true });
    const rows = () =>
      new Map(
        (
          journal
            .prepare('SELECT id, relative_path AS relativePath, state, document_id AS documentId, remote_version AS remoteVersion, error_code AS errorCode, error_message AS errorMessage FROM files')
            .all() as Row[]
        ).map((row) => [row.relativePath, row]),
      );
    try {
      await waitFor('every scan to be synced', () => scans.every((name) => rows().get(name)?.state === 'synced'), 30_000);
      const before = rows();
      // A disk fault on the server: two stored files gone. One scan is also gone from the folder.
      for (const name of ['upper.stl', 'lower.stl']) fs.rmSync(path.join(server.dataDir, 'content', 'objects', 'documents', before.get(name)!.documentId), { recursive: true });
      fs.rmSync(path.join(folder, 'lower.stl'));

      const marked = await admin(['verify', '--mark-lost']);
      expect(stderrBesidesBusyWait(marked.stderr)).toBe('');
      expect(marked.code).toBe(0);
      expect(marked.stdout).toMatch(/^marked 2 of 5 stored files lost; 2 documents no longer count as having content/);

      const after = await waitFor(
        'the lost scan to be uploaded again and the one gone from the folder to fail',
        () => {
          const now = rows();
          return now.get('upper.stl')?.state === 'synced' && now.get('upper.stl')?.remoteVersion === 2 && now.get('lower.stl')?.state === 'failed' && now;
        },
        30_000,
      );
      const upper = after.get('upper.stl')!;
      expect(upper.documentId).toBe(before.get('upper.stl')!.documentId);
      const lower = after.get('lower.stl')!;
      expect(lower.errorCode).toBe('LOST_ON_SERVER');
      expect(lower.errorMessage).toMatch(/^The server lost its copy of this scan, and the scan is no longer in this folder either\. Copy the scan back into the folder/);
      // The others were not touched: still their first version, no new history.
      for (const name of ['bite.stl', 'cbct.pdf', 'notes.pdf']) expect(after.get(name)).toMatchObject({ state: 'synced', remoteVersion: 1 });
      const history = journal.prepare('SELECT event, detail FROM history WHERE file_id = ? ORDER BY id').all(upper.id) as Array<{ event: string; detail: string | null }>;
      expect(history.map((entry) => entry.event)).toEqual(['queued', 'uploaded', 'verified', 'queued', 'uploaded', 'verified']);
      expect(history[3]!.detail).toMatch(/the server lost this scan's stored file .*; uploading it again from the folder/);
      expect(output).toMatch(/failed {3}lower\.stl: The server lost its copy of this scan/);
      // The upload that followed is said to be one, not a plain "synced".
      await waitFor('run to print the upload again', () => /synced {3}upper\.stl → \S+ \(v2\), uploaded again: found missing on the server$/m.test(output), 10_000);

      // What staff read at the workstation meanwhile (status reads the journal beside the running sync).
      const status = await runCli(home, ['status', '--json']);
      const listed = (JSON.parse(status.stdout) as { pairs: Array<{ files: Array<{ relativePath: string; state: string; error: { code: string; message: string } | null }> }> }).pairs[0]!.files;
      expect(listed.find((file) => file.relativePath === 'lower.stl')).toMatchObject({ state: 'failed', error: { code: 'LOST_ON_SERVER', message: expect.stringMatching(/^The server lost its copy/) } });

      // `retry` has nothing to upload for it, and says so (it answered "no failed or waiting file").
      const retried = await runCli(home, ['retry'], { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret });
      expect(retried.code).toBe(0);
      expect(retried.stdout).toBe('1 failed file(s) cannot be tried again: the server lost them and they are no longer in their folder; copy them back into the folder and they are uploaded by themselves\n');

      // What the reason says to do: the scan copied back into the folder goes up again by itself.
      writeFile(folder, 'lower.stl', bytes.get('lower.stl')!);
      await waitFor('the scan copied back to be uploaded again', () => rows().get('lower.stl')?.state === 'synced' && rows().get('lower.stl')?.remoteVersion === 2, 30_000);

      // The server serves the scan again, byte for byte, and verify finds nothing new wrong.
      const bearer = await token();
      const document = (await (await fetch(`${server.url}/v1/patients/${PATIENT}/documents/${upper.documentId}`, { headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG } })).json()) as { storageDownloadUri: string; version: number };
      expect(document.version).toBe(2);
      const download = Buffer.from(await (await fetch(document.storageDownloadUri)).arrayBuffer());
      expect(createHash('sha256').update(download).digest('hex')).toBe(createHash('sha256').update(bytes.get('upper.stl')!).digest('hex'));
      expect((await admin(['verify'])).code).toBe(0);
    } finally {
      journal.close();
      run.child.kill('SIGTERM');
      await run.done;
    }

    const status = await runCli(home, ['status', '--json']);
    const files = (JSON.parse(status.stdout) as { pairs: Array<{ files: Array<{ relativePath: string; state: string; error: { code: string } | null }> }> }).pairs[0]!.files;
    expect(files.find((file) => file.relativePath === 'lower.stl')).toMatchObject({ state: 'synced' });
    expect(files.find((file) => file.relativePath === 'upper.stl')).toMatchObject({ state: 'synced' });
    expect(Date.parse((JSON.parse(status.stdout) as { lastRecheckAt: string }).lastRecheckAt)).toBeGreaterThan(Date.now() - 60_000);
    expect((await runCli(home, ['status'])).stdout).toMatch(/^synced files last checked against the server: (?!not yet).+ \(every 240 minutes\)$/m);

    // IT sets how often: within 15 minutes to 7 days, or 0 for never; anything else is refused in one line, and nothing saved.
    const refused = await runCli(home, ['config', '--recheck-minutes', '5', '--concurrency', '2']);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n').at(-1)).toBe('patient-docs-sync: Synced files are checked on the server every 15 minutes at the most and every 7 days (10080 minutes) at the least, or never (0); 5 minutes is not allowed.');
    expect(JSON.parse((await runCli(home, ['status', '--json'])).stdout)).toMatchObject({ recheckMinutes: 240 });
    expect((await runCli(home, ['config', '--recheck-minutes', '30'])).code).toBe(0);
    expect(JSON.parse((await runCli(home, ['status', '--json'])).stdout)).toMatchObject({ recheckMinutes: 30 });
    expect((await runCli(home, ['config', '--recheck-minutes', '0'])).code).toBe(0);
    expect((await runCli(home, ['status'])).stdout).toMatch(/^synced files last checked against the server: .+ \(regular checks are off\)$/m);
  }, 90_000);
  it('a scan failed as lost and gone from the folder is synced again once IT restores the stored file and runs verify --mark-restored', async () => {
    const home = path.join(scratch, 'home-restored');
    const folder = path.join(scratch, 'scans-restored');
    fs.mkdirSync(folder, { recursive: true });
    await prepareSyncHome(home, { serverUrl: server.url, folder, remoteBasePath: '/restored' });
    const bytes = Buffer.from(`solid restored ${'y'.repeat(7000)}`);
    writeFile(folder, 'jaw.stl', bytes);
    writeFile(folder, 'kept.stl', Buffer.from(`solid kept ${'z'.repeat(3000)}`));
    const run = spawnCli(home, ['run'], { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_RECHECK_MS: '1500' });
    let output = '';
    run.child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const journal = new Database(path.join(home, 'journal.db'), { readonly: true });
    const row = (name: string) =>
      journal
        .prepare('SELECT id, state, document_id AS documentId, remote_version AS remoteVersion, error_code AS errorCode, lost_at AS lostAt FROM files WHERE relative_path = ?')
        .get(name) as { id: number; state: string; documentId: string; remoteVersion: number; errorCode: string | null; lostAt: number | null } | undefined;
    try {
      await waitFor('both scans to be synced', () => row('jaw.stl')?.state === 'synced' && row('kept.stl')?.state === 'synced', 30_000);
      const { documentId } = row('jaw.stl')!;
      // The disk fault takes the stored file; the backup still has it. The scan is gone from the folder too.
      const stored = path.join(server.dataDir, 'content', 'objects', 'documents', documentId);
      const backup = path.join(scratch, 'backup-objects');
      fs.cpSync(stored, backup, { recursive: true });
      fs.rmSync(stored, { recursive: true });
      fs.rmSync(path.join(folder, 'jaw.stl'));
      expect((await admin(['verify', '--mark-lost'])).code).toBe(0);
      await waitFor('the scan to fail as lost in both places', () => row('jaw.stl')?.errorCode === 'LOST_ON_SERVER', 30_000);

      // IT restores the content folder from the backup and tells the server the file is back.
      fs.cpSync(backup, stored, { recursive: true });
      const restored = await admin(['verify', '--mark-restored']);
      expect(stderrBesidesBusyWait(restored.stderr)).toBe('');
      expect(restored.code).toBe(0);
      const synced = await waitFor('the scan to be synced again, with nothing uploaded', () => (row('jaw.stl')?.state === 'synced' ? row('jaw.stl') : undefined), 30_000);
      expect(synced).toMatchObject({ documentId, remoteVersion: 1, errorCode: null, lostAt: null });
      const history = journal.prepare('SELECT event, detail FROM history WHERE file_id = ? ORDER BY id').all(synced.id) as Array<{ event: string; detail: string | null }>;
      expect(history.at(-1)).toEqual({ event: 'verified', detail: `the server has this scan again (document ${documentId}, version 1): its stored file was restored` });
      // Not uploaded again: no 'uploaded' step after the loss.
      expect(history.filter((entry) => entry.event === 'uploaded')).toHaveLength(1);
      expect(output).toMatch(/synced {3}jaw\.stl → \/restored\/jaw\.stl \(v1\)\n/);
      expect(row('kept.stl')).toMatchObject({ state: 'synced', remoteVersion: 1 });

      const bearer = await token();
      const document = (await (await fetch(`${server.url}/v1/patients/${PATIENT}/documents/${documentId}`, { headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG } })).json()) as { storageDownloadUri: string; hasContent: boolean };
      expect(document.hasContent).toBe(true);
      expect(Buffer.from(await (await fetch(document.storageDownloadUri)).arrayBuffer()).equals(bytes)).toBe(true);
    } finally {
      journal.close();
      run.child.kill('SIGTERM');
      await run.done;
    }
  }, 90_000);
});
