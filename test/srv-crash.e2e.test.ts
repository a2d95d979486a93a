/**
 * kill -9 (a power-cycled server box) with 20 uploads in flight (10 one-shot, 10 tus), a batch of
 * creates and thumbnail renders pending; on the local disk, and again in an S3-compatible store
 * (the `s3` project, PATIENT_DOCS_TEST_STORAGE=s3). After the restart on the same data nothing
 * claims bytes it lacks, a tus upload continues from its offset, pending thumbnails are rendered,
 * and clean-up (once the ages of abandoned uploads have passed) leaves only what rows name: no temp
 * object, no resumable upload, no incomplete multipart upload.
 * (Webhook deliveries have their own kill -9 test: webhooks.)
 */
import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../server/db/sqlite/store.js';
import { storageAndUploads } from '../server/storage/index.js';
import { StorageJanitor } from '../server/storage/janitor.js';
import { parseStorageUrl } from '../server/storage/s3.js';
import { RESUMABLE_LIFETIME_MS } from '../server/routes/tus.js';
import { makeArchStl } from './fixtures/scans.js';
import { clientToken, freePort, processStorageEnv, startKillableServer, type KillableServer } from './helpers/processes.js';
import { ORG, PATIENT, storedKeys, tempDir, TEST_STORAGE, testObjectStore } from './helpers/server.js';

const MiB = 1024 * 1024;
const children: ChildProcess[] = [];
const dataDir = tempDir('srv-crash');

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function start(port: number): Promise<KillableServer> {
  return startKillableServer(port, { PATIENT_DOCS_DATA_DIR: dataDir }, children);
}

function api(url: string, bearer: string, method: string, route: string, body?: unknown): Promise<Response> {
  return fetch(`${url}${route}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function createDocument(url: string, bearer: string, fileName: string, folder = '/crash'): Promise<{ id: string; storageUrl: string }> {
  return (await (await api(url, bearer, 'POST', `/v1/patients/${PATIENT}/documents`, { fileName, path: folder })).json()) as { id: string; storageUrl: string };
}

/** A request that sends `sent` bytes of a body announced as `length` and waits: in flight until the kill. */
function hanging(url: string, method: string, headers: Record<string, string>, length: number, sent: Buffer): Promise<void> {
  const request = http.request(url, { method, headers: { ...headers, 'content-length': String(length) } });
  request.on('error', () => undefined);
  return new Promise((resolve) => request.write(sent, () => resolve()));
}

async function until<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe(`kill -9 with 20 uploads in flight and restart on the same data (content on ${TEST_STORAGE})`, () => {
  it('nothing claims content it lacks, a tus upload resumes, thumbnails are rendered, and clean-up leaves only what rows name', async () => {
    const port = await freePort();
    const first = await start(port);
    const bearer = await clientToken(first.url);
    const auth = { authorization: `Bearer ${bearer}` };

    // Uploads that finished before the kill, three of them scans whose thumbnails are still to render.
    const kept: Array<{ id: string; sha256: string }> = [];
    const stl = makeArchStl({ triangles: 60_000 });
    const files = [randomBytes(3 * MiB), randomBytes(3 * MiB), stl, stl, stl];
    for (const [index, bytes] of files.entries()) {
      const fileName = bytes === stl ? `crash-scan-${index}.stl` : `kept-${index}.bin`;
      const document = await createDocument(first.url, bearer, fileName);
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(bytes)]), fileName);
      expect((await fetch(`${document.storageUrl}/file`, { method: 'POST', headers: auth, body: form })).status).toBe(201);
      kept.push({ id: document.id, sha256: sha256(bytes) });
    }
    const scans = kept.slice(2).map((document) => document.id);

    // 10 one-shot uploads of 12 MiB, 9 MiB of each sent (a part or more streamed to an object store).
    const inFlight: Array<Promise<void>> = [];
    for (let index = 0; index < 10; index += 1) {
      const document = await createDocument(first.url, bearer, `one-shot-${index}.bin`);
      const boundary = `crash${index}`;
      const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="one-shot-${index}.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
      const size = 12 * MiB;
      inFlight.push(hanging(`${document.storageUrl}/file`, 'POST', { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, head.length + size + tail.length, Buffer.concat([head, randomBytes(9 * MiB)])));
    }
    // 10 tus uploads of 9 MiB: a first PATCH of 1 MiB completed, a second one cut after 6 of its 8 MiB.
    const tus: Array<{ id: string; location: string; bytes: Buffer }> = [];
    for (let index = 0; index < 10; index += 1) {
      const document = await createDocument(first.url, bearer, `tus-${index}.bin`);
      const bytes = randomBytes(9 * MiB);
      const created = await fetch(`${document.storageUrl}/uploads`, { method: 'POST', headers: { ...auth, 'tus-resumable': '1.0.0', 'upload-length': String(bytes.length) } });
      expect(created.status).toBe(201);
      const location = created.headers.get('location')!;
      const patch = { ...auth, 'tus-resumable': '1.0.0', 'content-type': 'application/offset+octet-stream' };
      expect((await fetch(location, { method: 'PATCH', headers: { ...patch, 'upload-offset': '0' }, body: new Uint8Array(bytes.subarray(0, MiB)) })).status).toBe(204);
      inFlight.push(hanging(location, 'PATCH', { ...patch, 'upload-offset': String(MiB) }, 8 * MiB, bytes.subarray(MiB, 7 * MiB)));
      tus.push({ id: document.id, location, bytes });
    }
    await Promise.all(inFlight);
    const resumed = tus[0]!;
    if (TEST_STORAGE === 'disk') {
      // On the disk every byte of a cut PATCH that reached the file counts: wait for some of them.
      // (An object store keeps the last whole PATCH: the upload's state object is written last.)
      const binFile = path.join(dataDir, 'content', 'uploads', `${resumed.location.split('/').pop()}.bin`);
      await until(() => (fs.statSync(binFile).size >= 3 * MiB ? true : undefined), 'bytes of the cut PATCH on the disk');
    }

    // A batch of creates in flight.
    const batch = Array.from({ length: 40 }, (_, index) => api(first.url, bearer, 'POST', `/v1/patients/${PATIENT}/documents`, { fileName: `crash-batch-${index}.pdf`, path: '/crash/batch' }).then((response) => response.status, () => 0));
    await first.kill();
    await Promise.all(batch);

    const second = await start(port);
    const fresh = await clientToken(second.url);
    const search = async (folder: string) =>
      ((await (await api(second.url, fresh, 'POST', `/v1/patients/${PATIENT}/documents/search`, { path: folder, offset: 0, limit: 100 })).json()) as { documents: Array<{ id: string; hasContent: boolean; sha256: string | null; storageDownloadUri?: string }> })
        .documents;
    // Every document that claims content serves it whole, as its sha256 says; the cut ones claim none.
    const documents = await search('/crash');
    expect(documents).toHaveLength(25);
    for (const document of documents.filter((found) => found.hasContent)) {
      const body = Buffer.from(await (await fetch(document.storageDownloadUri!)).arrayBuffer());
      expect(sha256(body)).toBe(document.sha256);
    }
    expect(documents.filter((document) => document.hasContent).map((document) => document.id).sort()).toEqual(kept.map((document) => document.id).sort());
    // The batch: every document created is a placeholder, none claims content.
    expect((await search('/crash/batch')).every((found) => !found.hasContent)).toBe(true);

    // tus: the upload goes on from its offset on the new process, and completes the same bytes.
    const tusHeaders = { authorization: `Bearer ${fresh}`, 'tus-resumable': '1.0.0' };
    const head = await fetch(resumed.location, { method: 'HEAD', headers: tusHeaders });
    expect(head.status).toBe(200);
    const offset = Number(head.headers.get('upload-offset'));
    if (TEST_STORAGE === 'disk') {
      expect(offset).toBeGreaterThanOrEqual(3 * MiB);
      expect(offset).toBeLessThanOrEqual(7 * MiB);
    } else {
      expect(offset).toBe(MiB);
    }
    const rest = await fetch(resumed.location, { method: 'PATCH', headers: { ...tusHeaders, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, body: new Uint8Array(resumed.bytes.subarray(offset)) });
    expect(rest.status).toBe(204);
    const document = (await (await api(second.url, fresh, 'GET', `/v1/patients/${PATIENT}/documents/${resumed.id}`)).json()) as { sha256: string; storageDownloadUri: string };
    expect(document.sha256).toBe(sha256(resumed.bytes));
    expect(Buffer.from(await (await fetch(document.storageDownloadUri)).arrayBuffer()).equals(resumed.bytes)).toBe(true);

    // Thumbnails: each one rendered (resumed at start if the kill came first), none failed.
    for (const id of scans) {
      const status = await until(async () => {
        const { versions } = (await (await api(second.url, fresh, 'GET', `/v1/patients/${PATIENT}/documents/${id}/versions`)).json()) as { versions: Array<{ thumbnailStatus: string }> };
        const current = versions[0]?.thumbnailStatus;
        return current === 'pending' ? undefined : current;
      }, `the thumbnail of ${id}`);
      expect(status).toBe('ready');
    }
    const stopped = new Promise((resolve) => second.child.once('exit', resolve));
    second.child.kill('SIGTERM');
    await stopped;

    // Clean-up once the abandoned uploads are old enough (a day and more later): what is left is
    // exactly the objects the database names.
    const env = await processStorageEnv(dataDir);
    const { storage, resumable } = await storageAndUploads({ dataDir, storageUrl: env.PATIENT_DOCS_STORAGE_URL, s3Endpoint: env.PATIENT_DOCS_S3_ENDPOINT }, undefined);
    const store = SqliteStore.open(path.join(dataDir, 'patient-docs.sqlite'));
    try {
      const later = () => new Date(Date.now() + 2 * RESUMABLE_LIFETIME_MS);
      const janitor = new StorageJanitor(storage, resumable, (key) => store.content.isKeyReferenced(key), { intervalMs: 60_000, tempMaxAgeMs: 0, orphanMaxAgeMs: 0 }, later);
      expect((await janitor.sweep()).expiredUploads).toBe(9);
      expect(await storedKeys(storage, 'tmp')).toEqual([]);
      expect(await storedKeys(storage, 'uploads')).toEqual([]);
      const objects = await storedKeys(storage, 'objects');
      // The 6 uploads' content (the resumed one's too) and the 3 scans' thumbnails.
      expect(objects).toHaveLength(9);
      for (const key of objects) expect(await store.content.isKeyReferenced(key)).toBe(true);
      if (TEST_STORAGE === 's3') expect(await (await testObjectStore()).multipartUploads(parseStorageUrl(env.PATIENT_DOCS_STORAGE_URL!).prefix)).toEqual([]);
    } finally {
      await store.close();
    }
  }, 240_000);
});
