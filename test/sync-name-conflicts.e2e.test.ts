/**
 * Two different scans for one server name (DESIGN §4: "409 on create is resolved by searching for
 * the existing document (adopt it when it matches)"): names that differ only in case in one folder,
 * and two workstations exporting the same name. One scan never replaces the other: the second
 * file fails with a plain reason and the server keeps the first scan as its only version.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NAME_TAKEN_MESSAGE } from '../electron/sync/upload/failure.js';
import { statIfPresent } from '../electron/sync/watch/stability.js';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { PATIENT } from './helpers/server.js';
import { allDocuments, startEngine, usePipelineBench, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

async function uploadDirect(sut: EngineUnderTest, storageUrl: string, documentId: string, fileName: string, bytes: string): Promise<void> {
  const { accessToken } = await sut.api.tokens.token();
  const form = new FormData();
  form.set('Id', documentId);
  form.set('FileName', fileName);
  form.set('Type', 'STL');
  form.set('file', new Blob([bytes]), fileName);
  const response = await fetch(`${storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${accessToken}` }, body: form });
  expect(response.status).toBe(201);
}

describe('two different files for one server name', () => {
  let server: ServerProcess;
  let sut: EngineUnderTest;

  beforeAll(async () => {
    server = await startServerProcess();
    sut = await startEngine(server.url, { tuning: { settleMs: 300 }, remoteBasePath: '/conflicts' });
  });
  afterAll(async () => {
    await sut?.close();
    await server?.stop();
  });

  const record = (relativePath: string) => sut.journal.find(sut.pair.id, relativePath);

  it('names that differ only in case: one document with one version; the other file fails in plain language', async () => {
    const upper = 'upper jaw scan AAAA\n';
    const lower = 'lower jaw scan bbbbbbbbbbbbb\n';
    writeFile(sut.folder, 'case/Scan.stl', upper);
    writeFile(sut.folder, 'case/scan.stl', lower);
    await waitFor('both settled', () => sut.engine.isSettled() && ['Scan.stl', 'scan.stl'].every((name) => ['synced', 'failed'].includes(record(`case/${name}`)?.state ?? '')), 30_000);

    const documents = await allDocuments(sut.api, PATIENT, '/conflicts/case');
    expect(documents).toHaveLength(1);
    const [document] = documents;
    expect(document!.version).toBe(1);
    const rows = [record('case/Scan.stl')!, record('case/scan.stl')!];
    const synced = rows.filter((row) => row.state === 'synced');
    const failed = rows.filter((row) => row.state === 'failed');
    expect(synced).toHaveLength(1);
    expect(failed).toHaveLength(1);
    const syncedBytes = synced[0]!.relativePath === 'case/Scan.stl' ? upper : lower;
    expect(document!.sha256).toBe(sha256(syncedBytes));
    // Refused on this computer already (the folder's names are compared as the server compares
    // them), or by the adoption rule when the server answered 409: either way in plain language.
    expect(failed[0]!.errorCode).toBe('CONFLICT');
    expect(failed[0]!.errorMessage).toMatch(/upper and lower case/);
    expect(sut.journal.history(failed[0]!.id).map((entry) => entry.event)).not.toContain('version');
  });

  it("another workstation's different scan under the same name stays the only version; the same bytes are adopted", async () => {
    const chair1 = 'chair 1 scan: upper jaw\n';
    const taken = await sut.api.createDocument(PATIENT, 'scan.stl', '/conflicts/chairs');
    await uploadDirect(sut, taken.storageUrl, taken.id, 'scan.stl', chair1);
    const same = await sut.api.createDocument(PATIENT, 'same.stl', '/conflicts/chairs');
    await uploadDirect(sut, same.storageUrl, same.id, 'same.stl', 'identical export\n');

    writeFile(sut.folder, 'chairs/scan.stl', 'chair 2 scan: lower jaw, different\n');
    writeFile(sut.folder, 'chairs/same.stl', 'identical export\n');
    await waitFor('settled', () => record('chairs/scan.stl')?.state === 'failed' && record('chairs/same.stl')?.state === 'synced' && sut.engine.isSettled(), 30_000);

    expect(record('chairs/scan.stl')).toMatchObject({ errorCode: 'CONFLICT', errorMessage: NAME_TAKEN_MESSAGE, documentId: null });
    expect(record('chairs/same.stl')!.documentId).toBe(same.id);
    const documents = await allDocuments(sut.api, PATIENT, '/conflicts/chairs');
    expect(documents.map((document) => [document.fileName, document.version, document.sha256]).sort()).toEqual(
      [
        ['same.stl', 1, sha256('identical export\n')],
        ['scan.stl', 1, sha256(chair1)],
      ].sort(),
    );
  });
});

describe('a placeholder both workstations adopted', () => {
  const bench = usePipelineBench({ remoteBasePath: '/race' });

  it('is not overwritten with a new version when the other workstation filled it first', async () => {
    const chair1 = 'chair 1 scan, uploaded first\n';
    const placeholder = await bench.sut.api.createDocument(PATIENT, 'scan.stl', '/race');
    const file = writeFile(bench.sut.folder, 'scan.stl', 'chair 2 scan, a different patient visit\n');
    const stat = (await statIfPresent(file))!;
    const row = bench.journal.observe('pair-1', 'scan.stl', { ...stat, remotePath: '/race', fileName: 'scan.stl' });
    // Chair 1 uploads its scan between chair 2's adoption of the placeholder and chair 2's upload.
    let raced = false;
    const api = bench.withUpload(async (request) => {
      if (!raced) {
        raced = true;
        await uploadDirect(bench.sut, placeholder.storageUrl, placeholder.id, 'scan.stl', chair1);
      }
      return bench.sut.api.upload(request);
    });
    const deps = { api };

    const first = await bench.run(row.id, deps);
    expect(first.record.documentId).toBe(placeholder.id);
    expect(first.result).not.toBe('synced');
    let outcome = first;
    for (let attempt = 0; attempt < 3 && outcome.result !== 'failed'; attempt += 1) outcome = await bench.run(row.id, deps);

    expect(outcome.result).toBe('failed');
    expect(outcome.record).toMatchObject({ errorCode: 'CONFLICT', errorMessage: NAME_TAKEN_MESSAGE });
    const [document] = (await bench.sut.api.search(PATIENT, { id: [placeholder.id], offset: 0, limit: 1 })).documents;
    expect(document).toMatchObject({ version: 1, sha256: sha256(chair1) });
  });
});
