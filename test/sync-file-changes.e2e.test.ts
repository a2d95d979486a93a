/**
 * Files that change under the engine, against the real server process and real folders: a scan
 * whose server document was deleted, a resumable upload interrupted and resumed after the file
 * changed, a file changed or deleted during its upload, an empty file.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { PATIENT } from './helpers/server.js';
import { allDocuments, startEngine, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

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
});

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
