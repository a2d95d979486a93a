/**
 * A backup while the server runs and takes uploads (`patient-docs-admin backup --to DIR`), checked
 * with `verify --hashes` and by starting a server on it; and `verify` naming the documents whose
 * files a restore left behind.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientToken, runAdmin, startServerProcess, type ServerProcess, stderrBesidesBusyWait } from './helpers/processes.js';
import { ORG, PATIENT, tempDir } from './helpers/server.js';

let server: ServerProcess;
let bearer: string;
const cleanup: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  server = await startServerProcess();
  bearer = await clientToken(server.url);
}, 60_000);

afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
  await server?.stop();
});

async function uploadScan(url: string, fileName: string, bytes: Buffer): Promise<{ id: string; sha256: string }> {
  const created = await fetch(`${url}/v1/patients/${PATIENT}/documents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG, 'content-type': 'application/json' },
    body: JSON.stringify({ fileName, path: '/backup' }),
  });
  const document = (await created.json()) as { id: string; storageUrl: string };
  const form = new FormData();
  form.append('Id', document.id);
  form.append('Type', 'BIN');
  form.append('file', new Blob([new Uint8Array(bytes)]), fileName);
  const stored = await fetch(`${document.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` }, body: form });
  expect(stored.status).toBe(201);
  return { id: document.id, sha256: ((await stored.json()) as { sha256: string }).sha256 };
}

const admin = runAdmin;

describe('backup while the server runs', () => {
  it('copies the database and every content file while uploads go on; the copy verifies and a server started on it serves the scans', async () => {
    const scans = await Promise.all(Array.from({ length: 5 }, (_, index) => randomBytes(200_000 + index)).map(async (bytes, index) => ({ bytes, ...(await uploadScan(server.url, `before-${index}.bin`, bytes)) })));
    const target = path.join(tempDir('srv-backup'), 'monday');
    cleanup.push(() => fs.rmSync(path.dirname(target), { recursive: true, force: true }));

    // Uploads keep arriving while the backup runs.
    let uploading = true;
    const during = (async () => {
      let count = 0;
      while (uploading) await uploadScan(server.url, `during-${(count += 1)}.bin`, randomBytes(50_000));
      return count;
    })();
    const backup = await admin(server.dataDir, ['backup', '--to', target]);
    uploading = false;
    expect(await during).toBeGreaterThan(0);
    expect(stderrBesidesBusyWait(backup.stderr)).toBe('');
    expect(backup.code).toBe(0);
    expect(backup.stdout).toMatch(/^backup written to .*monday: the database and \d+ stored files \(\d+ bytes\), each checked against its sha256/);

    const verify = await admin(target, ['verify', '--hashes']);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toMatch(/^all \d+ stored files are in place \(\d+ bytes, each matching its sha256\)/);

    // The restore check that counts: a server on the copy serves the scans as they were.
    const restored = await startServerProcess({ PATIENT_DOCS_DATA_DIR: target });
    cleanup.push(() => restored.stop());
    bearer = await clientToken(restored.url);
    for (const scan of scans) {
      const document = await fetch(`${restored.url}/v1/patients/${PATIENT}/documents/${scan.id}`, { headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG } });
      const body = (await document.json()) as { sha256: string; storageDownloadUri: string };
      expect(body.sha256).toBe(scan.sha256);
      const download = Buffer.from(await (await fetch(body.storageDownloadUri)).arrayBuffer());
      expect(createHash('sha256').update(download).digest('hex')).toBe(scan.sha256);
    }
    bearer = await clientToken(server.url);
  }, 60_000);

  it('verify and backup name the documents whose files are missing or damaged, and a used folder is refused', async () => {
    const lost = await uploadScan(server.url, 'quarantined.bin', randomBytes(10_000));
    const cut = await uploadScan(server.url, 'truncated.bin', randomBytes(10_000));
    const objects = path.join(server.dataDir, 'content', 'objects', 'documents');
    fs.rmSync(path.join(objects, lost.id), { recursive: true });
    const [cutFile] = fs.readdirSync(path.join(objects, cut.id));
    fs.truncateSync(path.join(objects, cut.id, cutFile!), 100);

    const verify = await admin(server.dataDir, ['verify']);
    expect(verify.code).toBe(1);
    expect(verify.stderr).toMatch(/2 of \d+ stored files are missing or damaged; restore them from a backup/);
    expect(verify.stderr).toContain(`document ${lost.id} version 1: the file is missing`);
    expect(verify.stderr).toContain(`document ${cut.id} version 1: the file has 100 of its 10000 bytes`);

    const target = tempDir('srv-backup-problems');
    cleanup.push(() => fs.rmSync(target, { recursive: true, force: true }));
    const backup = await admin(server.dataDir, ['backup', '--to', path.join(target, 'copy')]);
    expect(backup.code).toBe(1);
    expect(backup.stderr).toMatch(/backup written to .*copy, but 2 of \d+ stored files could not be copied/);
    expect(backup.stderr).toContain(`document ${lost.id} version 1: the file is missing`);

    const again = await admin(server.dataDir, ['backup', '--to', path.join(target, 'copy')]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/copy is not empty; give each backup a new or empty folder/);
  }, 60_000);
});
