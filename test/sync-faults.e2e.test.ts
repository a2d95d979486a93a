/**
 * A fault-injecting proxy between the engine and the server (random 500s and 429s, connections
 * dropped before, during and after the work, 2 s stalls) and tokens that expire every 5 s:
 * everything still syncs, once.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultProxy, type FaultProxy } from './helpers/fault-proxy.js';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { PATIENT } from './helpers/server.js';
import { allDocuments, startEngine, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

const MB = 1024 * 1024;

describe('sync through a faulty network with short-lived tokens', () => {
  let proxy: FaultProxy;
  let server: ServerProcess;
  let sut: EngineUnderTest;

  beforeAll(async () => {
    proxy = await startFaultProxy({ faultRate: 0.25 });
    // The server hands out URLs (storageUrl, issuer) under the proxy's address, as behind a real gateway.
    server = await startServerProcess({ PATIENT_DOCS_PUBLIC_URL: proxy.url, PATIENT_DOCS_TOKEN_LIFETIME: '5s' });
    proxy.target = server.url;
    sut = await startEngine(proxy.url, { tuning: { settleMs: 300, concurrency: 6 }, resumableThreshold: 8 * MB, backoffMs: 200 });
  });
  afterAll(async () => {
    await sut?.close();
    await server?.stop();
    await proxy?.close();
  });

  it('syncs every file exactly once despite 500s, 429s, dropped connections, stalls and expiring tokens', async () => {
    const files = new Map<string, Buffer>();
    for (let index = 0; index < 60; index += 1) files.set(`case-${index % 6}/scan-${index}.stl`, Buffer.alloc(20_000 + index * 1000, index));
    // Two large scans take the resumable route and get cut in the middle.
    files.set('large/arch-1.stl', Buffer.alloc(20 * MB, 1));
    files.set('large/arch-2.stl', Buffer.alloc(12 * MB, 2));
    for (const [relativePath, bytes] of files) writeFile(sut.folder, relativePath, bytes);

    const startedAt = Date.now();
    await waitFor('all synced', () => sut.engine.isSettled() && sut.journal.counts(sut.pair.id).synced === files.size, 150_000, 250).catch((error: unknown) => {
      // Say which files are stuck, in which state, and why, rather than only that time ran out.
      const stuck = sut.journal.byPair(sut.pair.id).filter((record) => record.state !== 'synced');
      const report = stuck.map((record) => ({ file: record.relativePath, state: record.state, attempts: record.attempts, nextInMs: record.nextAttemptAt === null ? null : record.nextAttemptAt - Date.now(), error: record.errorCode, bytesDone: record.bytesDone, history: sut.journal.history(record.id).slice(-6).map((entry) => `${entry.event}${entry.detail ? `: ${entry.detail}` : ""}`) }));
      throw new Error(`${(error as Error).message}: settled=${sut.engine.isSettled()}, ${stuck.length} not synced ${JSON.stringify(report, null, 1)}`);
    });
    const elapsedMs = Date.now() - startedAt;

    proxy.faultRate = 0;
    const documents = await allDocuments(sut.api);
    expect(documents).toHaveLength(files.size);
    for (const document of documents) {
      const relativePath = path.posix.relative('/scans', `${document.path}/${document.fileName}`);
      const bytes = files.get(relativePath)!;
      expect(document.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
      expect(document.version).toBe(1);
    }
    // Every kind of fault happened, and the run outlived several token lifetimes.
    for (const [fault, count] of Object.entries(proxy.injected)) expect(count, fault).toBeGreaterThan(0);
    expect(elapsedMs).toBeGreaterThan(5000);
    const retried = sut.journal.byPair(sut.pair.id).filter((record) => sut.journal.history(record.id).some((entry) => entry.event === 'adopted'));
    console.log(`fault proxy: ${proxy.requests} requests, injected ${JSON.stringify(proxy.injected)}; ${retried.length} adopted after a lost answer; ${elapsedMs} ms`);
    expect(fs.existsSync(sut.folder)).toBe(true);
  }, 180_000);
});

describe('a resumable upload whose last PATCH completes on the server but whose answer is lost', () => {
  let proxy: FaultProxy;
  let server: ServerProcess;
  let sut: EngineUnderTest;
  let lost = 0;

  beforeAll(async () => {
    // Only the first PATCH is hit: the server stores the bytes and finishes the upload (and so
    // forgets it), and the engine sees a dropped connection instead of the answer.
    proxy = await startFaultProxy({ pick: (request) => (request.method === 'PATCH' && lost++ === 0 ? 'loseResponse' : null) });
    server = await startServerProcess({ PATIENT_DOCS_PUBLIC_URL: proxy.url });
    proxy.target = server.url;
    sut = await startEngine(proxy.url, { resumableThreshold: 1 * MB, backoffMs: 200 });
  });
  afterAll(async () => {
    await sut?.close();
    await server?.stop();
    await proxy?.close();
  });

  it('is found complete by the search that verifies it: synced, with no error shown and one version', async () => {
    const bytes = Buffer.alloc(3 * MB, 7);
    writeFile(sut.folder, 'large/arch.stl', bytes);
    const [record] = await waitFor('the file settled', () => {
      const records = sut.journal.byPair(sut.pair.id);
      return records.length === 1 && (records[0]!.state === 'synced' || records[0]!.state === 'failed') ? records : undefined;
    }, 30_000);
    expect(proxy.injected.loseResponse).toBe(1);
    expect({ state: record!.state, error: record!.errorCode }).toEqual({ state: 'synced', error: null });
    const [document] = await allDocuments(sut.api);
    expect(document).toMatchObject({ fileName: 'arch.stl', path: '/scans/large', fileSize: bytes.length, version: 1, sha256: createHash('sha256').update(bytes).digest('hex') });
  });

  it('does not send the bytes again when the journal names an upload the server already finished (a crash before the verifying search)', async () => {
    const file = path.join(sut.home, 'resume.stl');
    fs.writeFileSync(file, Buffer.alloc(2 * MB, 9));
    const created = await sut.api.createDocument(PATIENT, 'resume.stl', '/scans/resume');
    const request = { patientId: PATIENT, storageUrl: created.storageUrl, documentId: created.id, filePath: file, fileName: 'resume.stl', fileType: 'STL', size: 2 * MB, ifMatch: null };
    let finished: string | null = null;
    await sut.api.upload({ ...request, onResumeUrl: (url) => (finished = url ?? finished) });
    expect(finished).not.toBeNull();
    // As after a restart: the journal still names the upload, which the server has finished and forgotten.
    const told: Array<string | null> = [];
    expect(await sut.api.upload({ ...request, resumeUrl: finished, onResumeUrl: (url) => told.push(url) })).toBeNull();
    expect(told).toEqual([null]);
    const stored = await sut.api.getDocument(PATIENT, created.id);
    expect(stored).toMatchObject({ version: 1, fileSize: 2 * MB, hasContent: true });
  });
});
