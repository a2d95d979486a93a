/**
 * File names as disks really hold them, against the real server: a name written decomposed (NFD,
 * as macOS writes it and as it survives a copy to NTFS or Linux) is opened by that spelling and
 * synced under its composed (NFC) name; two files the server would take for one name (NFC and NFD
 * twins, names differing only in case) never become one document silently.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { tempDir } from './helpers/server.js';
import { allDocuments, startEngine, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

const COMPOSED = 'Ren\u00e9.stl';
const DECOMPOSED = 'Rene\u0301.stl';

describe('file names as written on disk', () => {
  let server: ServerProcess;
  let sut: EngineUnderTest | undefined;

  beforeAll(async () => {
    server = await startServerProcess();
  });
  afterEach(async () => {
    await sut?.close();
    sut = undefined;
  });
  afterAll(async () => {
    await server?.stop();
  });

  const rows = () => sut!.journal.byPair(sut!.pair.id);
  const settled = () => sut!.engine.isSettled() && rows().length > 0 && rows().every((row) => row.state === 'synced' || row.state === 'failed');

  it('syncs a file whose name is decomposed (NFD), read by its name on disk and stored under the composed name', async () => {
    sut = await startEngine(server.url, { remoteBasePath: '/nfd-only' });
    writeFile(sut.folder, `case 1/${DECOMPOSED}`, 'nfd only content');

    await waitFor('the decomposed file settled', settled);
    expect(rows()).toMatchObject([{ relativePath: `case 1/${DECOMPOSED}`, state: 'synced', fileName: COMPOSED, remotePath: '/nfd-only/case 1' }]);
    const documents = await allDocuments(sut.api, undefined, '/nfd-only');
    expect(documents.map((document) => [document.fileName, document.fileSize])).toEqual([[COMPOSED, 'nfd only content'.length]]);
  });

  it('does not let a composed and a decomposed file of the same name become one: the second fails with a plain reason', async () => {
    sut = await startEngine(server.url, { remoteBasePath: '/twins' });
    writeFile(sut.folder, `twins/${DECOMPOSED}`, 'twin NFD content');
    writeFile(sut.folder, `twins/${COMPOSED}`, 'twin NFC content, different');

    await waitFor('both twins settled', () => settled() && rows().length === 2);
    const synced = rows().filter((row) => row.state === 'synced');
    const failed = rows().filter((row) => row.state === 'failed');
    expect(synced).toHaveLength(1);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ errorCode: 'CONFLICT', documentId: null });
    expect(failed[0]!.errorMessage).toMatch(/same name on the server.*not uploaded.*rename one of the two/s);
    // The run's answer names it: what the CLI lists as not synced.
    expect(sut.engine.fileViews(sut.pair.id, ['failed']).map((file) => file.relativePath)).toEqual([failed[0]!.relativePath]);

    const documents = await allDocuments(sut.api, undefined, '/twins');
    expect(documents).toHaveLength(1);
    expect(documents[0]).toMatchObject({ fileName: COMPOSED, fileSize: fs.statSync(`${sut.folder}/${synced[0]!.relativePath}`).size, version: 1 });
  });

  it('does not let two names differing only in case become one document (the server folds case)', async () => {
    sut = await startEngine(server.url, { remoteBasePath: '/case-twins' });
    writeFile(sut.folder, 'Scan.STL', 'upper case one');
    writeFile(sut.folder, 'scan.stl', 'lower case one, longer');

    await waitFor('both settled', () => settled() && rows().length === 2);
    expect(rows().map((row) => row.state).sort()).toEqual(['failed', 'synced']);
    expect(rows().find((row) => row.state === 'failed')).toMatchObject({ errorCode: 'CONFLICT', documentId: null });
    const documents = await allDocuments(sut.api, undefined, '/case-twins');
    expect(documents).toHaveLength(1);
    expect(documents[0]!.version).toBe(1);
  });

  it('tells of a symbolic link instead of skipping it without a word, and uploads nothing through it', async () => {
    sut = await startEngine(server.url, { remoteBasePath: '/links' });
    const outside = tempDir('outside');
    writeFile(outside, 'elsewhere.stl', 'not in the sync folder');
    writeFile(sut.folder, 'case/real.stl', 'the real scan');
    fs.symlinkSync(path.join(sut.folder, 'case/real.stl'), path.join(sut.folder, 'case/shortcut.stl'));
    fs.symlinkSync(outside, path.join(sut.folder, 'case/linked folder'));

    await waitFor('every entry settled', () => settled() && rows().length === 3);
    expect(rows().map((row) => [row.relativePath, row.state])).toEqual([
      ['case/linked folder', 'failed'],
      ['case/real.stl', 'synced'],
      ['case/shortcut.stl', 'failed'],
    ]);
    for (const row of rows().filter((entry) => entry.state === 'failed')) expect(row.errorMessage).toMatch(/link.*not followed/);
    expect((await allDocuments(sut.api, undefined, '/links')).map((document) => document.fileName)).toEqual(['real.stl']);
    // "Retry all" does not upload through the link either.
    expect(sut.engine.retryFailed()).toBe(2);
    await waitFor('the retried links failed again', () => settled() && rows().filter((row) => row.state === 'failed').length === 2);
    for (const row of rows().filter((entry) => entry.state === 'failed')) expect(row.errorMessage).toMatch(/link.*not followed/);
    expect((await allDocuments(sut.api, undefined, '/links')).map((document) => document.fileName)).toEqual(['real.stl']);
    fs.rmSync(outside, { recursive: true, force: true });
  });
});
