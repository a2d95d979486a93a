import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalDiskStorage } from './local-disk.js';
import { DiskResumableStore } from './resumable-disk.js';
import { ChecksumMismatchError, HEAD_BYTES, KEPT_CONTENT_BYTES, OffsetMismatchError, SizeLimitError } from './types.js';

let root: string;
let storage: LocalDiskStorage;

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-storage-'));
  storage = new LocalDiskStorage(root);
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const sha = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');
const read = async (stream: Readable): Promise<Buffer> => Buffer.concat(await stream.toArray());

describe('LocalDiskStorage', () => {
  it.skipIf(process.platform === 'win32')('keeps patient files and their folders to the server\'s user (0600 / 0700), and tightens a folder left open', async () => {
    const mode = (target: string) => fs.statSync(target).mode & 0o777;
    fs.chmodSync(path.join(root, 'objects'), 0o755);
    const reopened = new LocalDiskStorage(root);
    const received = await reopened.receive(Readable.from([Buffer.from('scan')]), 4);
    expect(mode(storage.tempPath(received.temp))).toBe(0o600);
    await reopened.commit(received.temp, 'documents/a/v1');
    await reopened.put('thumbnails/a/v1.png', Buffer.from('png'));
    for (const file of ['objects/documents/a/v1', 'objects/thumbnails/a/v1.png']) expect(mode(path.join(root, file))).toBe(0o600);
    for (const folder of ['', 'tmp', 'objects', 'objects/documents', 'objects/documents/a']) expect(mode(path.join(root, folder))).toBe(0o700);
  });

  it('receives with size and sha256, and makes the bytes readable only after commit', async () => {
    const received = await storage.receive(Readable.from([Buffer.from('hello '), Buffer.from('world')]), 11);
    expect(received).toMatchObject({ size: 11, sha256: sha('hello world') });
    expect(await storage.size('documents/a/v1')).toBeUndefined();
    await storage.commit(received.temp, 'documents/a/v1');
    expect(fs.existsSync(storage.tempPath(received.temp))).toBe(false);
    expect((await read(storage.read('documents/a/v1'))).toString()).toBe('hello world');
    expect((await read(storage.read('documents/a/v1', { start: 6, end: 10 }))).toString()).toBe('world');
  });

  it('gives the first bytes it stored (the type check reads them), however the stream cut them', async () => {
    const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(HEAD_BYTES * 3, 7)]);
    const cuts = [Readable.from([pdf]), Readable.from([pdf.subarray(0, 3), pdf.subarray(3, HEAD_BYTES - 1), pdf.subarray(HEAD_BYTES - 1)])];
    for (const stream of cuts) expect(Buffer.from((await storage.receive(stream, pdf.length)).head)).toEqual(pdf.subarray(0, HEAD_BYTES));
    expect(Buffer.from((await storage.receive(Readable.from([Buffer.from('%PDF')]), 10)).head).toString()).toBe('%PDF');
    expect((await storage.receive(Readable.from([]), 10)).head.length).toBe(0);
  });

  it('keeps a small file\'s bytes as they arrived (its thumbnail is rendered from them), and none of a larger one\'s', async () => {
    const chunks = [Buffer.alloc(KEPT_CONTENT_BYTES / 2, 1), Buffer.alloc(KEPT_CONTENT_BYTES / 2, 2)];
    const small = await storage.receive(Readable.from(chunks), KEPT_CONTENT_BYTES * 4);
    expect(Buffer.concat(small.content!.map((chunk) => Buffer.from(chunk)))).toEqual(Buffer.concat(chunks));
    await storage.commit(small.temp, 'documents/a/v1');
    expect(await read(storage.read('documents/a/v1'))).toEqual(Buffer.concat(chunks));
    const larger = await storage.receive(Readable.from([...chunks, Buffer.from('x')]), KEPT_CONTENT_BYTES * 4);
    expect(larger.size).toBe(KEPT_CONTENT_BYTES + 1);
    expect(larger.content).toBeUndefined();
  });

  it('refuses one byte over the limit and leaves no temp file', async () => {
    await expect(storage.receive(Readable.from([Buffer.alloc(10), Buffer.alloc(1)]), 10)).rejects.toBeInstanceOf(SizeLimitError);
    expect(fs.readdirSync(storage.tmpDir)).toEqual([]);
  });

  it('refuses keys that could leave the storage root', () => {
    for (const key of ['../x', 'a/../../x', '/abs', 'A/upper', 'a//b']) expect(() => storage.localPath(key)).toThrow();
  });

  it('collects abandoned temp files and objects nothing refers to', async () => {
    fs.writeFileSync(path.join(storage.tmpDir, 'abandoned.part'), 'x');
    await storage.put('documents/kept/v1', Buffer.from('kept'));
    await storage.put('documents/orphan/v1', Buffer.from('orphan'));
    const report = await storage.collectGarbage({ tempOlderThanMs: 0, orphanOlderThanMs: 0, isReferenced: async (key) => key.includes('kept') });
    expect(report).toEqual({ tempFiles: 1, orphanObjects: 1 });
    expect(await storage.size('documents/kept/v1')).toBe(4);
    expect(await storage.size('documents/orphan/v1')).toBeUndefined();
  });
});

describe('DiskResumableStore', () => {
  const base = { documentId: 'd', metadata: {}, ifMatch: null, createdBy: 'c', createdAt: new Date().toISOString(), expiresAt: new Date(Date.now() + 60_000).toISOString() };
  const id = '00000000-0000-4000-8000-000000000001';

  it('appends at the offset, keeps a running hash, and completes into a temp object', async () => {
    const store = new DiskResumableStore(path.join(root, 'uploads'), storage, 60_000);
    await store.create({ ...base, id, length: 10 });
    await expect(store.append(id, 3, Readable.from([Buffer.from('x')]))).rejects.toBeInstanceOf(OffsetMismatchError);
    expect((await store.append(id, 0, Readable.from([Buffer.from('01234')]))).offset).toBe(5);
    await expect(store.append(id, 5, Readable.from([Buffer.from('56789')]), createHash('sha256').update('other').digest())).rejects.toBeInstanceOf(ChecksumMismatchError);
    expect((await store.get(id))?.offset).toBe(5);
    await store.append(id, 5, Readable.from([Buffer.from('56789')]), createHash('sha256').update('56789').digest());
    const done = await store.complete(id);
    expect(done).toMatchObject({ size: 10, sha256: sha('0123456789') });
    expect(fs.readFileSync(storage.tempPath(done.temp), 'utf8')).toBe('0123456789');
    expect(await store.get(id)).toBeUndefined();
  });

  it('hashes from disk after a restart (a new store instance) and never writes past the length', async () => {
    const directory = path.join(root, 'uploads');
    const before = new DiskResumableStore(directory, storage, 60_000);
    await before.create({ ...base, id, length: 6 });
    await before.append(id, 0, Readable.from([Buffer.from('abc')]));
    const after = new DiskResumableStore(directory, storage, 60_000);
    await expect(after.append(id, 3, Readable.from([Buffer.from('defg')]))).rejects.toBeInstanceOf(SizeLimitError);
    expect((await after.get(id))?.offset).toBe(3);
    await after.append(id, 3, Readable.from([Buffer.from('def')]));
    expect((await after.complete(id)).sha256).toBe(sha('abcdef'));
  });

  it('expires uploads past their time', async () => {
    const store = new DiskResumableStore(path.join(root, 'uploads'), storage, 60_000);
    await store.create({ ...base, id, length: 1 });
    expect(await store.removeExpired(new Date())).toBe(0);
    expect(await store.removeExpired(new Date(Date.now() + 120_000))).toBe(1);
    expect(fs.readdirSync(path.join(root, 'uploads'))).toEqual([]);
  });
});
