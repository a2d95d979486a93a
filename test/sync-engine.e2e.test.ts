/**
 * The sync engine against the real server process and real folders (issue 5, "What it must show"):
 * a nested tree of STL/PDF/DICOM with a 300 MB file and a slowly written file, new versions,
 * local deletes and renames that leave the server alone, 409 adoption, and a 413 that fails one
 * file while the rest sync.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeArchStl } from './fixtures/scans.js';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { PATIENT } from './helpers/server.js';
import { allDocuments, startEngine, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
const MB = 1024 * 1024;

function fileSha(file: string): string {
  const hash = createHash('sha256');
  const fd = fs.openSync(file, 'r');
  const buffer = Buffer.alloc(8 * MB);
  for (let read; (read = fs.readSync(fd, buffer, 0, buffer.length, null)) > 0; ) hash.update(buffer.subarray(0, read));
  fs.closeSync(fd);
  return hash.digest('hex');
}

function pdf(text: string): Buffer {
  return Buffer.from(`%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n% ${text}\ntrailer << /Root 1 0 R >>\n%%EOF\n`);
}

function dicom(index: number): Buffer {
  const bytes = Buffer.alloc(4096, index);
  bytes.write('DICM', 128, 'latin1');
  return bytes;
}

async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

describe('sync engine end to end', () => {
  let server: ServerProcess;
  let sut: EngineUnderTest;

  beforeAll(async () => {
    server = await startServerProcess();
    sut = await startEngine(server.url, { tuning: { settleMs: 1500 }, remoteBasePath: '/clinic' });
  });
  afterAll(async () => {
    await sut?.close();
    await server?.stop();
  });

  const synced = () => sut.journal.byPair(sut.pair.id).filter((record) => record.state === 'synced');
  const record = (relativePath: string) => sut.journal.find(sut.pair.id, relativePath);

  it('syncs a nested tree with a 300 MB scan and a slowly written file: every file verified, in its path, once', async () => {
    const stl = makeArchStl({ triangles: 5000 });
    writeFile(sut.folder, 'Case 2026-001/upper jaw.stl', stl);
    writeFile(sut.folder, 'Case 2026-001/report.pdf', pdf('report'));
    for (let index = 0; index < 12; index += 1) writeFile(sut.folder, `Case 2026-001/CT/series 1/IM${String(index).padStart(4, '0')}.dcm`, dicom(index));
    writeFile(sut.folder, 'referral.pdf', pdf('referral'));
    writeFile(sut.folder, '~$lock.docx', 'office lock');
    writeFile(sut.folder, 'Case 2026-001/.DS_Store', 'mac');
    // 300 MB, sparse: instant to create, real bytes to upload (the resumable route: over 64 MiB).
    const big = path.join(sut.folder, 'Case 2026-002', 'full arch.stl');
    fs.mkdirSync(path.dirname(big), { recursive: true });
    const handle = fs.openSync(big, 'w');
    fs.writeSync(handle, stl, 0, stl.length, 0);
    fs.ftruncateSync(handle, 300 * MB);
    fs.writeSync(handle, Buffer.from('end of scan'), 0, 11, 300 * MB - 11);
    fs.closeSync(handle);
    // Written in ten chunks over five seconds, as a slow scanner export does.
    const slow = path.join(sut.folder, 'Case 2026-003', 'slow export.stl');
    fs.mkdirSync(path.dirname(slow), { recursive: true });
    const slowChunks = Array.from({ length: 10 }, (_, index) => Buffer.alloc(100_000, index + 1));
    for (const chunk of slowChunks) {
      fs.appendFileSync(slow, chunk);
      await delay(500);
    }

    const expected = 12 + 5;
    await waitFor('every file synced', () => sut.engine.isSettled() && synced().length === expected, 120_000, 250);
    const documents = await allDocuments(sut.api);
    expect(documents).toHaveLength(expected);
    const byKey = new Map(documents.map((document) => [`${document.path}/${document.fileName}`, document]));
    expect([...byKey.keys()].sort()).toEqual(
      [
        '/clinic/referral.pdf',
        '/clinic/Case 2026-001/upper jaw.stl',
        '/clinic/Case 2026-001/report.pdf',
        ...Array.from({ length: 12 }, (_, index) => `/clinic/Case 2026-001/CT/series 1/IM${String(index).padStart(4, '0')}.dcm`),
        '/clinic/Case 2026-002/full arch.stl',
        '/clinic/Case 2026-003/slow export.stl',
      ].sort(),
    );
    // Verified the SPEC §4.3 rule 4 way, and the bytes are the bytes.
    for (const entry of sut.journal.byPair(sut.pair.id)) {
      const document = byKey.get(`${entry.remotePath}/${entry.fileName}`)!;
      expect(document.hasContent).toBe(true);
      expect(document.fileSize).toBe(entry.size);
      expect(document.sha256).toBe(entry.sha256);
      expect(document.id).toBe(entry.documentId);
    }
    expect(byKey.get('/clinic/Case 2026-002/full arch.stl')!.sha256).toBe(fileSha(big));
    expect(sha256(await download(byKey.get('/clinic/Case 2026-001/upper jaw.stl')!.storageDownloadUri!))).toBe(sha256(stl));
    // The slow file went up once, complete.
    const slowDocument = byKey.get('/clinic/Case 2026-003/slow export.stl')!;
    expect(slowDocument.version).toBe(1);
    expect(slowDocument.fileSize).toBe(1_000_000);
    expect(slowDocument.sha256).toBe(sha256(Buffer.concat(slowChunks)));
    const slowHistory = sut.journal.history(record('Case 2026-003/slow export.stl')!.id).map((entry) => entry.event);
    expect(slowHistory.filter((event) => event === 'uploaded' || event === 'version')).toEqual(['uploaded']);
    // The pair view adds up.
    const view = sut.engine.pairView(sut.pair.id)!;
    expect(view.counts.synced).toBe(expected);
    expect(view.state).toBe('idle');
    expect(view.cases.map((entry) => entry.path)).toEqual(['/', 'Case 2026-001', 'Case 2026-002', 'Case 2026-003']);
  });

  it('uploads a modified file as a new version of the same document', async () => {
    const before = record('referral.pdf')!;
    const changed = pdf('referral, corrected');
    writeFile(sut.folder, 'referral.pdf', changed);
    await waitFor('new version synced', () => {
      const now = record('referral.pdf');
      return now?.state === 'synced' && now.remoteVersion === 2 && sut.engine.isSettled();
    }, 30_000);
    const after = record('referral.pdf')!;
    expect(after.documentId).toBe(before.documentId);
    const [document] = (await sut.api.search(PATIENT, { id: [after.documentId!], hasContent: true, offset: 0, limit: 1 })).documents;
    expect(document!.version).toBe(2);
    expect(sha256(await download(document!.storageDownloadUri!))).toBe(sha256(changed));
    expect(sut.journal.history(after.id).map((entry) => entry.event)).toContain('version');
  });

  it('never deletes remotely: a local delete and a rename leave the server document alone', async () => {
    const countBefore = (await allDocuments(sut.api)).length;
    const deleted = record('Case 2026-001/report.pdf')!;
    fs.rmSync(path.join(sut.folder, 'Case 2026-001', 'report.pdf'));
    fs.renameSync(path.join(sut.folder, 'Case 2026-001', 'upper jaw.stl'), path.join(sut.folder, 'Case 2026-001', 'upper jaw (renamed).stl'));
    await waitFor('renamed file synced', () => record('Case 2026-001/upper jaw (renamed).stl')?.state === 'synced' && sut.engine.isSettled(), 30_000);
    await sut.engine.rescan();
    const documents = await allDocuments(sut.api);
    expect(documents).toHaveLength(countBefore + 1);
    const names = documents.map((document) => `${document.path}/${document.fileName}`);
    expect(names).toContain('/clinic/Case 2026-001/report.pdf');
    expect(names).toContain('/clinic/Case 2026-001/upper jaw.stl');
    expect(names).toContain('/clinic/Case 2026-001/upper jaw (renamed).stl');
    expect(record('Case 2026-001/report.pdf')!.deletedLocally).toBe(true);
    expect(sut.journal.history(deleted.id).map((entry) => entry.event)).toContain('deleted-locally');
  });

  it('adopts a document that already exists on the server (409) when it matches: same bytes are verified, an empty placeholder is filled, other bytes are never replaced', async () => {
    const same = pdf('already there');
    const different = pdf('local edit');
    for (const [name, remoteBytes] of [
      ['adopt-same.pdf', same],
      ['adopt-different.pdf', pdf('remote copy')],
      ['adopt-empty.pdf', null],
    ] as const) {
      const created = await sut.api.createDocument(PATIENT, name, '/clinic/Adopt');
      if (remoteBytes) await uploadDirect(sut, created.storageUrl, created.id, name, remoteBytes);
    }
    writeFile(sut.folder, 'Adopt/adopt-same.pdf', same);
    writeFile(sut.folder, 'Adopt/adopt-different.pdf', different);
    writeFile(sut.folder, 'Adopt/adopt-empty.pdf', pdf('first content'));
    await waitFor(
      'adopted files synced',
      () => ['same', 'empty'].every((kind) => record(`Adopt/adopt-${kind}.pdf`)?.state === 'synced') && record('Adopt/adopt-different.pdf')?.state === 'failed' && sut.engine.isSettled(),
      30_000,
    );
    const documents = (await allDocuments(sut.api, PATIENT, '/clinic/Adopt')).sort((a, b) => a.fileName.localeCompare(b.fileName));
    expect(documents.map((document) => [document.fileName, document.version])).toEqual([
      ['adopt-different.pdf', 1],
      ['adopt-empty.pdf', 1],
      ['adopt-same.pdf', 1],
    ]);
    expect(documents[0]!.sha256).toBe(sha256(pdf('remote copy')));
    expect(record('Adopt/adopt-different.pdf')).toMatchObject({ errorCode: 'CONFLICT', documentId: null });
    for (const kind of ['same', 'empty']) {
      const entry = record(`Adopt/adopt-${kind}.pdf`)!;
      expect(sut.journal.history(entry.id).map((item) => item.event)).toContain('adopted');
      expect(documents.find((document) => document.id === entry.documentId)).toBeDefined();
    }
  });
});

describe('a file over the server limit', () => {
  let server: ServerProcess;
  let sut: EngineUnderTest;
  beforeAll(async () => {
    server = await startServerProcess({ PATIENT_DOCS_MAX_UPLOAD_BYTES: '1MiB' });
    sut = await startEngine(server.url, { tuning: { settleMs: 300 } });
  });
  afterAll(async () => {
    await sut?.close();
    await server?.stop();
  });

  it('fails with the 413 detail in plain language; the other files sync', async () => {
    writeFile(sut.folder, 'big/too large.stl', Buffer.alloc(2 * MB, 7));
    for (let index = 0; index < 5; index += 1) writeFile(sut.folder, `small/${index}.pdf`, pdf(`small ${index}`));
    await waitFor('settled', () => sut.engine.isSettled() && sut.journal.counts(sut.pair.id).synced === 5 && sut.journal.counts(sut.pair.id).failed === 1, 30_000);
    const failed = sut.journal.find(sut.pair.id, 'big/too large.stl')!;
    expect(failed.state).toBe('failed');
    expect(failed.errorCode).toBe('TOO_LARGE');
    // Refused before anything was created (the server's Tus-Max-Size), with both sizes in plain words.
    expect(failed.errorMessage).toMatch(/^The file is larger than the server accepts\. This file is 2.1 MB; the server accepts up to 1 MB per file\./);
    expect(failed.errorDetail).toMatch(/limit/i);
    expect(failed.documentId).toBeNull();
    const view = sut.engine.fileViews(sut.pair.id, ['failed'])[0]!;
    expect(view.error).toEqual({ code: 'TOO_LARGE', message: failed.errorMessage, detail: failed.errorDetail });
    expect(sut.engine.pairView(sut.pair.id)!.state).toBe('attention');
    // A manual retry queues it again (and it fails again while the limit stands).
    expect(sut.engine.retryFailed({ fileId: failed.id })).toBe(1);
    await waitFor('failed again', () => sut.journal.get(failed.id)!.state === 'failed' && sut.engine.isSettled(), 30_000);
  });
});

async function uploadDirect(sut: EngineUnderTest, storageUrl: string, documentId: string, fileName: string, bytes: Buffer): Promise<void> {
  const { accessToken } = await sut.api.tokens.token();
  const form = new FormData();
  form.set('Id', documentId);
  form.set('FileName', fileName);
  form.set('Type', 'PDF');
  form.set('file', new Blob([new Uint8Array(bytes)]), fileName);
  const response = await fetch(`${storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${accessToken}` }, body: form });
  expect(response.status).toBe(201);
}

describe('what the UI is told', () => {
  let server: ServerProcess;
  let sut: EngineUnderTest;
  beforeAll(async () => {
    server = await startServerProcess();
    // Snapshots far apart: a small file passes through every state between two of them.
    sut = await startEngine(server.url, { tuning: { settleMs: 300 }, publishEveryMs: 5_000 });
  });
  afterAll(async () => {
    await sut?.close();
    await server?.stop();
  });

  it('publishes every state a file enters, however quickly it moves on', async () => {
    const states: string[] = [];
    const stop = sut.engine.onEvent((event) => {
      if (event.type !== 'files-changed') return;
      for (const file of event.files) if (file.relativePath === 'quick.pdf' && states[states.length - 1] !== file.state) states.push(file.state);
    });
    try {
      writeFile(sut.folder, 'quick.pdf', pdf('a small file'));
      await waitFor('quick.pdf synced', () => states.includes('synced'), 30_000, 20);
      expect(states).toEqual(['queued', 'creating', 'uploading', 'verifying', 'synced']);
    } finally {
      stop();
    }
  });
});
