/**
 * A scan larger than the server's upload limit (PATIENT_DOCS_MAX_UPLOAD_BYTES) fails before anything
 * is created on the server: no empty placeholder in the patient's tree, a plain message naming the
 * limit, and Retry uploads it once IT has raised the limit.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { tempDir } from './helpers/server.js';
import { allDocuments, startEngine, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

describe('a file over the server upload limit', () => {
  let server: ServerProcess;
  let sut: EngineUnderTest;
  let dataDir: string;
  let port: string;
  const serverEnv = (limit: string) => ({ PORT: port, PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_MAX_UPLOAD_BYTES: limit });

  beforeAll(async () => {
    dataDir = tempDir('pipe2-too-large-data');
    port = String(await freePort());
    server = await startServerProcess(serverEnv('1MiB'));
    sut = await startEngine(server.url, { remoteBasePath: '/too-large' });
  });
  afterAll(async () => {
    await sut?.close();
    await server?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('fails as TOO_LARGE naming the limit, leaves no placeholder, and Retry uploads it once the limit is raised', async () => {
    const big = writeFile(sut.folder, 'cbct/volume.dcm', '');
    fs.truncateSync(big, 3 * 1024 * 1024);
    writeFile(sut.folder, 'cbct/small.stl', 'solid small\nendsolid small\n');

    const failed = await waitFor('the big file to fail', () => {
      const row = sut.journal.find(sut.pair.id, 'cbct/volume.dcm');
      return row?.state === 'failed' ? row : undefined;
    });
    expect(failed.errorCode).toBe('TOO_LARGE');
    expect(failed.errorMessage).toBe('The file is larger than the server accepts. This file is 3.1 MB; the server accepts up to 1 MB per file. Nothing was uploaded for it.');
    expect(failed.errorDetail).toBe("the server's upload limit is 1048576 bytes (Tus-Max-Size); this file has 3145728 bytes");
    expect(failed.documentId).toBeNull();
    await waitFor('the small file to sync', () => sut.journal.find(sut.pair.id, 'cbct/small.stl')?.state === 'synced');
    // Only the small file is in the patient's tree: no empty document named volume.dcm.
    const documents = await allDocuments(sut.api, undefined, '/too-large');
    expect(documents.map((document) => document.fileName).sort()).toEqual(['small.stl']);

    // IT raises the limit (the same server, restarted with a larger PATIENT_DOCS_MAX_UPLOAD_BYTES).
    await server.stop();
    server = await startServerProcess(serverEnv('8MiB'));
    expect(sut.engine.retryFailed({ fileId: failed.id })).toBe(1);
    const synced = await waitFor('the big file to sync after Retry', () => {
      const row = sut.journal.find(sut.pair.id, 'cbct/volume.dcm');
      return row?.state === 'synced' ? row : undefined;
    });
    const after = await allDocuments(sut.api, undefined, '/too-large');
    const volume = after.find((document) => document.fileName === 'volume.dcm');
    expect(volume?.id).toBe(synced.documentId);
    expect(volume?.fileSize).toBe(3 * 1024 * 1024);
    expect(path.basename(big)).toBe('volume.dcm');
  });
});
