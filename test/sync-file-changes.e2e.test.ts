/**
 * Files that change under the engine, against the real server process and real folders: a scan
 * whose server document was deleted, a resumable upload interrupted and resumed after the file
 * changed, a file changed or deleted during its upload, an empty file.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PipelineOutcome } from '../electron/sync/upload/pipeline.js';
import { statIfPresent } from '../electron/sync/watch/stability.js';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { PATIENT } from './helpers/server.js';
import { allDocuments, startEngine, usePipelineBench, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

describe('files that change under the engine', () => {
  let server: ServerProcess;
  let sut: EngineUnderTest;

  beforeAll(async () => {
    server = await startServerProcess();
    sut = await startEngine(server.url, { tuning: { settleMs: 300 }, remoteBasePath: '/changes' });
  });
  afterAll(async () => {
    await sut?.close();
    await server?.stop();
  });

  const record = (relativePath: string) => sut.journal.find(sut.pair.id, relativePath);

  it('a modified file whose document was deleted on the server goes up as a new document, without a storm of searches', async () => {
    writeFile(sut.folder, 'deleted/scan.stl', 'v1 content\n');
    const first = await waitFor('v1 synced', () => (record('deleted/scan.stl')?.state === 'synced' && sut.engine.isSettled() ? record('deleted/scan.stl') : undefined), 30_000);
    await sut.api.json({ method: 'DELETE', url: `${server.url}/v1/patients/${PATIENT}/documents/${first.documentId}`, organization: true });

    const searches = countSearches(sut);
    writeFile(sut.folder, 'deleted/scan.stl', 'v2 content, re-exported\n');
    const v2 = sha256('v2 content, re-exported\n');
    const after = await waitFor('re-uploaded', () => {
      const now = record('deleted/scan.stl');
      return now?.state === 'synced' && now.sha256 === v2 && sut.engine.isSettled() ? now : undefined;
    }, 20_000);
    expect(after.documentId).not.toBe(first.documentId);
    const documents = await allDocuments(sut.api, PATIENT, '/changes/deleted');
    expect(documents).toHaveLength(1);
    expect(documents[0]).toMatchObject({ id: after.documentId, version: 1, sha256: v2 });
    // Look up the old document, create, verify: a handful of searches, not thousands.
    expect(searches.count()).toBeLessThan(10);
    searches.stop();
  });

  it('an empty file fails in plain language without a placeholder or going offline; a scan truncated to 0 bytes keeps its server content', async () => {
    writeFile(sut.folder, 'empty/empty.stl', '');
    writeFile(sut.folder, 'empty/scan.stl', 'good scan data\n');
    await waitFor('settled', () => record('empty/empty.stl')?.state === 'failed' && record('empty/scan.stl')?.state === 'synced' && sut.engine.isSettled(), 20_000);
    expect(record('empty/empty.stl')).toMatchObject({ errorCode: 'EMPTY_FILE', documentId: null });
    expect(sut.engine.isOnline).toBe(true);
    const synced = record('empty/scan.stl')!;

    writeFile(sut.folder, 'empty/scan.stl', '');
    await waitFor('truncated file settled', () => record('empty/scan.stl')?.state === 'failed' && sut.engine.isSettled(), 20_000);
    expect(record('empty/scan.stl')).toMatchObject({ errorCode: 'EMPTY_FILE', documentId: synced.documentId });
    expect(sut.engine.isOnline).toBe(true);
    const documents = await allDocuments(sut.api, PATIENT, '/changes/empty');
    expect(documents.map((document) => [document.fileName, document.version, document.sha256])).toEqual([['scan.stl', 1, sha256('good scan data\n')]]);

    // Once the scanner writes it, it goes up.
    writeFile(sut.folder, 'empty/empty.stl', 'now with content\n');
    await waitFor('written file synced', () => record('empty/empty.stl')?.state === 'synced' && sut.engine.isSettled(), 20_000);
  });
});

/**
 * The pipeline driven by hand (the unit the engine runs per file), with the engine's real client
 * against the real server and a journal of its own: a crash mid-upload is set up exactly.
 */
describe('a resumable upload interrupted, then the file re-exported', () => {
  const bench = usePipelineBench({ resumableThreshold: 100_000, remoteBasePath: '/tus' });

  for (const kind of ['larger', 'same-size'] as const) {
    it(`${kind}: the new bytes go up in a fresh upload and the stale one is abandoned`, async () => {
      const name = `${kind}.stl`;
      const original = randomBytes(2_000_000);
      const file = writeFile(bench.sut.folder, name, original);
      const row = bench.journal.observe('pair-1', name, { ...(await statIfPresent(file))!, remotePath: '/tus', fileName: name });
      const created = await bench.sut.api.createDocument(PATIENT, name, '/tus');
      // The first attempt: a resumable upload of the old bytes got 500 kB far, then the engine died.
      const uploadUrl = await startResumable(bench.sut, created.storageUrl, original.length, original.subarray(0, 500_000));
      bench.journal.transition(row.id, 'creating');
      bench.journal.transition(row.id, 'uploading', { documentId: created.id, remoteVersion: 0, uploadUrl, bytesDone: 500_000 });

      const changed = kind === 'larger' ? Buffer.concat([original, randomBytes(500_000)]) : randomBytes(2_000_000);
      fs.writeFileSync(file, changed);
      let outcome: PipelineOutcome | undefined;
      for (let run = 0; run < 4 && outcome?.result !== 'synced' && outcome?.result !== 'failed'; run += 1) outcome = await bench.run(row.id);

      expect(outcome?.result).toBe('synced');
      const [document] = (await bench.sut.api.search(PATIENT, { id: [created.id], offset: 0, limit: 1 })).documents;
      expect(document).toMatchObject({ version: 1, fileSize: changed.length, sha256: sha256(changed) });
      expect((await tus(bench.sut, 'HEAD', uploadUrl)).status).toBe(404);
    });
  }

  it('the client never continues an upload declared for another length: it abandons it and starts afresh', async () => {
    const bytes = randomBytes(300_000);
    const file = writeFile(bench.sut.folder, 'length.stl', bytes);
    const created = await bench.sut.api.createDocument(PATIENT, 'length.stl', '/tus');
    const stale = await startResumable(bench.sut, created.storageUrl, 200_000, bytes.subarray(0, 50_000));
    const urls: Array<string | null> = [];
    const request = { patientId: PATIENT, storageUrl: created.storageUrl, documentId: created.id, filePath: file, fileName: 'length.stl', fileType: 'STL' };
    await bench.sut.api.upload({ ...request, size: bytes.length, ifMatch: null, resumeUrl: stale, onResumeUrl: (url) => urls.push(url) });
    const [document] = (await bench.sut.api.search(PATIENT, { id: [created.id], offset: 0, limit: 1 })).documents;
    expect(document).toMatchObject({ version: 1, fileSize: bytes.length, sha256: sha256(bytes) });
    expect(urls[0]).toBeNull();
    expect(urls[1]).not.toBe(stale);
    expect((await tus(bench.sut, 'HEAD', stale)).status).toBe(404);
  });
});

describe('a file deleted from the folder during its upload', () => {
  const bench = usePipelineBench({ remoteBasePath: '/deleted-during' });

  it('is synced and verified when the server received all of it (and stays marked deleted locally)', async () => {
    const bytes = randomBytes(1_500_000);
    const file = writeFile(bench.sut.folder, 'scan.stl', bytes);
    const row = bench.journal.observe('pair-1', 'scan.stl', { ...(await statIfPresent(file))!, remotePath: '/deleted-during', fileName: 'scan.stl' });
    let deleted = false;
    const api = bench.withUpload((request) =>
      bench.sut.api.upload({
        ...request,
        onProgress: (bytesDone) => {
          if (!deleted && bytesDone > 0) {
            // The scanner software cleans its folder while the upload is under way.
            fs.rmSync(file);
            bench.journal.markDeletedLocally('pair-1', 'scan.stl');
            deleted = true;
          }
          request.onProgress?.(bytesDone);
        },
      }),
    );
    const outcome = await bench.run(row.id, { api });

    expect(deleted).toBe(true);
    expect(outcome.result).toBe('synced');
    expect(outcome.record).toMatchObject({ state: 'synced', deletedLocally: true, sha256: sha256(bytes), size: bytes.length, errorCode: null });
    const [document] = (await bench.sut.api.search(PATIENT, { id: [outcome.record.documentId!], hasContent: true, offset: 0, limit: 1 })).documents;
    expect(document).toMatchObject({ version: 1, fileSize: bytes.length, sha256: sha256(bytes) });
  });
});

describe('a file still being written while it uploads', () => {
  const bench = usePipelineBench({ resumableThreshold: 1_000_000, remoteBasePath: '/growing' });

  for (const [route, size] of [
    ['one-shot', 600_000],
    ['resumable', 1_200_000],
  ] as const) {
    it(`${route}: the half-written bytes never become the document's content, and the file waits to settle before it goes up again`, async () => {
      const name = `${route}.stl`;
      const file = writeFile(bench.sut.folder, name, randomBytes(size));
      const row = bench.journal.observe('pair-1', name, { ...(await statIfPresent(file))!, remotePath: '/growing', fileName: name });
      let appended = 0;
      const api = bench.withUpload((request) =>
        bench.sut.api.upload({
          ...request,
          onProgress: (bytesDone) => {
            // The scanner is still writing: a piece arrives while the first bytes go up.
            if (appended === 0 && bytesDone > 0) fs.appendFileSync(file, randomBytes((appended = 100_000)));
            request.onProgress?.(bytesDone);
          },
        }),
      );
      const settleMs = 400;
      const deps = { api, settleMs };

      const before = Date.now();
      const first = await bench.run(row.id, deps);
      expect(appended).toBeGreaterThan(0);
      expect(first.result).toBe('queued');
      expect(first.record.nextAttemptAt).toBeGreaterThanOrEqual(before + settleMs);
      expect(first.record.uploadUrl).toBeNull();
      expect(bench.journal.due(Date.now(), 10).map((due) => due.id)).not.toContain(row.id);
      const [placeholder] = (await bench.sut.api.search(PATIENT, { id: [first.record.documentId!], offset: 0, limit: 1 })).documents;
      expect(placeholder!.hasContent).toBe(false);

      await waitFor('the hold to end', () => bench.journal.due(Date.now(), 10).some((due) => due.id === row.id), 5_000, 50);
      const second = await bench.run(row.id, deps);
      expect(second.result).toBe('synced');
      const [document] = (await bench.sut.api.search(PATIENT, { id: [second.record.documentId!], hasContent: true, offset: 0, limit: 1 })).documents;
      expect(document).toMatchObject({ version: 1, fileSize: size + appended, sha256: sha256(fs.readFileSync(file)) });
    });
  }
});

async function tus(sut: EngineUnderTest, method: string, url: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Response> {
  const { accessToken } = await sut.api.tokens.token();
  return fetch(url, { method, headers: { authorization: `Bearer ${accessToken}`, 'tus-resumable': '1.0.0', ...headers }, ...(body ? { body: new Uint8Array(body) } : {}) });
}

/** A tus upload of `length` bytes with its first bytes sent; returns its URL. */
async function startResumable(sut: EngineUnderTest, storageUrl: string, length: number, first: Buffer): Promise<string> {
  const created = await tus(sut, 'POST', `${storageUrl}/uploads`, { 'upload-length': String(length) });
  expect(created.status).toBe(201);
  const url = new URL(created.headers.get('location')!, storageUrl).toString();
  const patched = await tus(sut, 'PATCH', url, { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, first);
  expect(patched.status).toBe(204);
  return url;
}

/** Counts the engine's search calls from now on. */
function countSearches(sut: EngineUnderTest): { count(): number; stop(): void } {
  let count = 0;
  const original = sut.api.search.bind(sut.api);
  sut.api.search = (...args) => {
    count += 1;
    return original(...args);
  };
  return { count: () => count, stop: () => void (sut.api.search = original) };
}
