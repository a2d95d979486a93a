/**
 * The database says a file is stored, the storage disagrees: a backup restored without its content
 * folder or bucket, an antivirus that quarantined one scan, a file truncated or changed in place.
 * Downloads say so plainly (never part of a file served as the whole), thumbnails are rendered
 * again, and a new version can still be uploaded. On the local disk, and again in an S3-compatible
 * store (the `s3` project): the damage is done through the server's own storage.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeArchStl } from './fixtures/scans.js';
import { expectProblem, PATIENT, startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
const stl = makeArchStl({ triangles: 2_000 });

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server?.close();
});

/** Where these cases remove and damage stored files: the server's content storage, disk or bucket. */
const storage = () => server.server.context.content.storage;

async function uploaded(fileName: string): Promise<{ id: string; sha256: string; storageDownloadUri: string; thumbnailDownloadUri: string; key: string }> {
  const created = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName, path: '/missing' } });
  expect(created.status).toBe(201);
  expect((await upload(created.body.id, stl)).status).toBe(201);
  await server.server.context.content.thumbnails.idle();
  const document = (await server.api('GET', `/v1/patients/${PATIENT}/documents/${created.body.id}`)).body;
  const version = await server.server.context.store.content.version(created.body.id, 1);
  return { ...document, key: version!.contentKey };
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

describe('content missing or damaged in the storage', () => {
  it('a deleted file: download and HEAD say it is missing on the server, and a new version with If-Match is accepted', async () => {
    const document = await uploaded('quarantined.stl');
    await storage().remove(document.key);
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
    await storage().put(document.key, stl.subarray(0, 1000));
    const download = expectProblem(await get(document.storageDownloadUri), 404);
    expect(download.detail).toMatch(new RegExp(`damaged \\(1000 of its ${stl.length} bytes are there\\)`));
    expect((await fetch(document.storageDownloadUri, { method: 'HEAD' })).status).toBe(404);
  });

  it('a file changed in place (same size) is refused as damaged, or, once bytes are on the way, cut off before its end', async () => {
    const small = await uploaded('bit-rot.stl');
    const damaged = Buffer.from(stl);
    damaged[damaged.length - 10]! ^= 0xff;
    await storage().put(small.key, damaged);
    expect(expectProblem(await get(small.storageDownloadUri), 404).detail).toMatch(/is damaged on the server \(its bytes no longer match its sha256\)/);

    // Larger than one read of the store: the first bytes are sent before the hash is known.
    const large = makeArchStl({ triangles: 120_000 });
    const created = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: 'bit-rot-large.stl', path: '/missing' } });
    const stored = await upload(created.body.id, large);
    expect(stored.status).toBe(201);
    const version = await server.server.context.store.content.version(created.body.id, 1);
    const key = version!.contentKey;
    const changed = Buffer.from(large);
    changed[changed.length - 10]! ^= 0xff;
    await storage().put(key, changed);
    const response = await fetch(stored.body.storageDownloadUri);
    expect(response.status).toBe(200);
    expect(Number(response.headers.get('content-length'))).toBe(large.length);
    const received = await response.arrayBuffer().then(
      (body) => body.byteLength,
      () => -1,
    );
    expect(received).not.toBe(large.length);
    // An intact file still downloads whole.
    await storage().put(key, large);
    expect(Buffer.from(await (await fetch(stored.body.storageDownloadUri)).arrayBuffer()).equals(large)).toBe(true);
  });

  it('a missing thumbnail is rendered again: 503 with Retry-After, then the PNG', async () => {
    const document = await uploaded('thumbnail-lost.stl');
    const version = await server.server.context.store.content.version(document.id, 1);
    await storage().remove(version!.thumbnailKey!);
    const first = await get(document.thumbnailDownloadUri);
    expectProblem(first, 503);
    expect(Number(first.headers.get('retry-after'))).toBeGreaterThan(0);
    await server.server.context.content.thumbnails.idle();
    const second = await fetch(document.thumbnailDownloadUri);
    expect(second.status).toBe(200);
    expect(second.headers.get('content-type')).toBe('image/png');
  });
});
