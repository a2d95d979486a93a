/**
 * A sync folder that is not there: deleted or renamed under a running sync, a network share
 * unmounted, a drive not yet plugged in when the app starts. The engine must keep running, show
 * the folder as missing, mark no file deleted, and sync again by itself once the folder is back.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { tempDir } from './helpers/server.js';
import { allDocuments, startEngine, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

describe('a sync folder that goes away and comes back', () => {
  let server: ServerProcess;
  let sut: EngineUnderTest | undefined;
  const parent = tempDir('folders');

  beforeAll(async () => {
    server = await startServerProcess();
  });
  afterEach(async () => {
    await sut?.close();
    sut = undefined;
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(parent, { recursive: true, force: true });
  });

  const pairView = () => sut!.engine.pairView(sut!.pair.id)!;
  const record = (relativePath: string) => sut!.journal.find(sut!.pair.id, relativePath);
  const remoteNames = async (remotePath: string) => (await allDocuments(sut!.api, undefined, remotePath)).map((document) => document.fileName).sort();

  it('survives its folder being deleted under it: the pair says the folder is missing, no file is marked deleted, and it syncs again once the folder is back', async () => {
    const folder = path.join(parent, 'scanner-export');
    writeFile(folder, 'case 1/upper.stl', 'solid upper');
    sut = await startEngine(server.url, { folder, remoteBasePath: '/gone' });
    await waitFor('the first file synced', () => record('case 1/upper.stl')?.state === 'synced');

    fs.rmSync(folder, { recursive: true, force: true });
    await waitFor('the pair showing its folder missing', () => pairView().lastError?.code === 'FOLDER_MISSING');
    expect(pairView().state).toBe('attention');
    expect(record('case 1/upper.stl')).toMatchObject({ state: 'synced', deletedLocally: false });

    // The share is back, with the same file and a new one.
    writeFile(folder, 'case 1/upper.stl', 'solid upper');
    writeFile(folder, 'case 1/lower.stl', 'solid lower');
    await waitFor('the new file synced', () => record('case 1/lower.stl')?.state === 'synced', 20_000);
    expect(pairView().lastError).toBeNull();
    expect(await remoteNames('/gone/case 1')).toEqual(['lower.stl', 'upper.stl']);
    expect(record('case 1/upper.stl')).toMatchObject({ state: 'synced', deletedLocally: false, remoteVersion: 1 });
  });

  it('survives its folder being renamed away, and a scan while it is gone marks nothing deleted', async () => {
    const folder = path.join(parent, 'cbct');
    writeFile(folder, 'volume.dcm', 'DICM');
    sut = await startEngine(server.url, { folder, remoteBasePath: '/renamed' });
    await waitFor('the file synced', () => record('volume.dcm')?.state === 'synced');

    fs.renameSync(folder, `${folder}-old`);
    await waitFor('the pair showing its folder missing', () => pairView().lastError?.code === 'FOLDER_MISSING');
    await sut.engine.rescan();
    expect(record('volume.dcm')).toMatchObject({ state: 'synced', deletedLocally: false });

    fs.renameSync(`${folder}-old`, folder);
    writeFile(folder, 'report.pdf', '%PDF-1.4');
    await waitFor('the new file synced', () => record('report.pdf')?.state === 'synced', 20_000);
    expect(pairView().lastError).toBeNull();
  });

  it('starts with its folder missing (a share not mounted yet) and syncs as soon as it appears', async () => {
    const folder = path.join(parent, 'not-yet-mounted');
    sut = await startEngine(server.url, { folder, remoteBasePath: '/late' });
    expect(pairView().lastError?.code).toBe('FOLDER_MISSING');

    writeFile(folder, 'scan.ply', 'ply');
    await waitFor('the file synced', () => record('scan.ply')?.state === 'synced', 20_000);
    expect(pairView().lastError).toBeNull();
    expect(await remoteNames('/late')).toEqual(['scan.ply']);
  });

  it('takes a file given as its folder (settings from an older version) as a missing folder, without crashing', async () => {
    const file = writeFile(parent, 'not-a-folder.txt', 'notes');
    sut = await startEngine(server.url, { folder: file, remoteBasePath: '/file' });
    expect(pairView().lastError?.code).toBe('FOLDER_MISSING');
    await sut.engine.rescan();
    expect(pairView().lastError?.code).toBe('FOLDER_MISSING');
  });
});
