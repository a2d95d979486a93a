/**
 * The database says a file is stored, the disk disagrees: a backup restored without its content
 * folder, an antivirus that quarantined one scan, a file truncated or changed in place. Downloads
 * say so plainly (never part of a file served as the whole), thumbnails are rendered again, and a
 * new version can still be uploaded.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeArchStl } from './fixtures/scans.js';
import type { LocalDiskStorage } from '../server/storage/local-disk.js';
import { expectProblem, PATIENT, startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
const stl = makeArchStl({ triangles: 2_000 });

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server?.close();
});

/** These cases remove and damage files on the local disk. */
const localDisk = () => server.server.context.content.storage as LocalDiskStorage;

async function uploaded(fileName: string): Promise<{ id: string; sha256: string; storageDownloadUri: string; thumbnailDownloadUri: string; file: string }> {
  const created = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName, path: '/missing' } });
  expect(created.status).toBe(201);
  expect((await upload(created.body.id, stl)).status).toBe(201);
  await server.server.context.content.thumbnails.idle();
  const document = (await server.api('GET', `/v1/patients/${PATIENT}/documents/${created.body.id}`)).body;
  const version = await server.server.context.store.content.version(created.body.id, 1);
  return { ...document, file: localDisk().localPath(version!.contentKey) };
}

async function upload(id: string, bytes: Buffer, ifMatch?: string): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('Id', id);
  form.append('Type', 'STL');
  form.append('file', new Blob([new Uint8Array(bytes)]), 'scan.stl');
  const headers: Record<string, string> = { authorization: `Bearer ${await server.token()}` };
  if (ifMatch) headers['if-match'] = `"${ifMatch}"`;
  const response = await fetch(`${server.url}/storage/v1/documents/${id}/file`, { method: 'POST', headers, body: form });
  return { status: response.status, body: await response.json() };
}

async function get(url: string, method = 'GET'): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(url, { method });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

describe('content missing or damaged on the disk', () => {
  it('a deleted file: download and HEAD say it is missing on the server, and a new version with If-Match is accepted', async () => {
    const document = await uploaded('quarantined.stl');
    fs.rmSync(document.file);
    const download = expectProblem(await get(document.storageDownloadUri), 404);
    expect(download.detail).toMatch(/stored file of document .* is missing on the server; the server administrator must restore it from a backup, or the file must be uploaded again/);
    const head = await fetch(document.storageDownloadUri, { method: 'HEAD' });
    expect(head.status).toBe(404);
    const again = await upload(document.id, stl, document.sha256);
    expect(again.status).toBe(201);
    const fresh = await fetch(again.body.storageDownloadUri);
    expect(Buffer.from(await fresh.arrayBuffer()).equals(stl)).toBe(true);
  });

  it('a truncated file is refused as damaged, never served as if complete', async () => {
    const document = await uploaded('truncated.stl');
    fs.truncateSync(document.file, 1000);
    const download = expectProblem(await get(document.storageDownloadUri), 404);
    expect(download.detail).toMatch(new RegExp(`damaged \\(1000 of its ${stl.length} bytes are there\\)`));
    expect((await fetch(document.storageDownloadUri, { method: 'HEAD' })).status).toBe(404);
  });

  it('a file changed in place (same size) is refused as damaged, or, once bytes are on the way, cut off before its end', async () => {
    const small = await uploaded('bit-rot.stl');
    const damaged = Buffer.from(stl);
    damaged[damaged.length - 10]! ^= 0xff;
    fs.writeFileSync(small.file, damaged);
    expect(expectProblem(await get(small.storageDownloadUri), 404).detail).toMatch(/is damaged on the server \(its bytes no longer match its sha256\)/);

    // Larger than one read of the disk: the first bytes are sent before the hash is known.
    const large = makeArchStl({ triangles: 120_000 });
    const created = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: 'bit-rot-large.stl', path: '/missing' } });
    const stored = await upload(created.body.id, large);
    expect(stored.status).toBe(201);
    const version = await server.server.context.store.content.version(created.body.id, 1);
    const file = localDisk().localPath(version!.contentKey);
    const changed = Buffer.from(large);
    changed[changed.length - 10]! ^= 0xff;
    fs.writeFileSync(file, changed);
    const response = await fetch(stored.body.storageDownloadUri);
    expect(response.status).toBe(200);
    expect(Number(response.headers.get('content-length'))).toBe(large.length);
    const received = await response.arrayBuffer().then(
      (body) => body.byteLength,
      () => -1,
    );
    expect(received).not.toBe(large.length);
    // An intact file still downloads whole.
    fs.writeFileSync(file, large);
    expect(Buffer.from(await (await fetch(stored.body.storageDownloadUri)).arrayBuffer()).equals(large)).toBe(true);
  });

  it('a missing thumbnail is rendered again: 503 with Retry-After, then the PNG', async () => {
    const document = await uploaded('thumbnail-lost.stl');
    const version = await server.server.context.store.content.version(document.id, 1);
    fs.rmSync(localDisk().localPath(version!.thumbnailKey!));
    const first = await get(document.thumbnailDownloadUri);
    expectProblem(first, 503);
    expect(Number(first.headers.get('retry-after'))).toBeGreaterThan(0);
    await server.server.context.content.thumbnails.idle();
    const second = await fetch(document.thumbnailDownloadUri);
    expect(second.status).toBe(200);
    expect(second.headers.get('content-type')).toBe('image/png');
  });
});
