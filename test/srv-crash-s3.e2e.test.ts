/**
 * kill -9 of a server keeping content in an S3-compatible store (s3rver on loopback) while 20
 * uploads are in flight, 10 one-shot and 10 tus: after the restart no document claims content the
 * bucket lacks, a tus upload continues from its offset on the new process, and clean-up (once the
 * ages of abandoned uploads have passed) leaves nothing in the bucket that no row names. And a kill -9
 * in the moment between an upload's object complete in the bucket and the row that would name it:
 * no document claims it, and clean-up takes the object.
 */
import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../server/db/sqlite/store.js';
import { createS3Client, parseStorageUrl, S3ContentStorage } from '../server/storage/s3.js';
import { S3ResumableStore } from '../server/storage/s3-resumable.js';
import { freePort, startKillableServer, type KillableServer } from './helpers/processes.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';

const MiB = 1024 * 1024;
const children: ChildProcess[] = [];
const dataDir = tempDir('srv-crash-s3');
const betweenDir = tempDir('srv-crash-s3-between');
let s3: TestS3;

beforeAll(async () => {
  s3 = await startS3();
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(betweenDir, { recursive: true, force: true });
  await s3?.close();
});

function start(port: number, dir = dataDir, prefix = 'crash'): Promise<KillableServer> {
  return startKillableServer(port, { ...s3.env(prefix), PATIENT_DOCS_DATA_DIR: dir }, children);
}

async function token(url: string): Promise<string> {
  const response = await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) });
  return ((await response.json()) as { access_token: string }).access_token;
}

async function createDocument(url: string, bearer: string, fileName: string): Promise<{ id: string; storageUrl: string }> {
  const response = await fetch(`${url}/v1/patients/${PATIENT}/documents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG, 'content-type': 'application/json' },
    body: JSON.stringify({ fileName, path: '/crash-s3' }),
  });
  return (await response.json()) as { id: string; storageUrl: string };
}

/** A request that sends `sent` bytes of a body announced as `length` and waits: in flight until the kill. */
function hanging(url: string, method: string, headers: Record<string, string>, length: number, sent: Buffer): Promise<void> {
  const request = http.request(url, { method, headers: { ...headers, 'content-length': String(length) } });
  request.on('error', () => undefined);
  return new Promise((resolve) => request.write(sent, () => resolve()));
}

describe('kill -9 with 20 uploads in flight, content in S3', () => {
  it('no document claims content the bucket lacks, a tus upload resumes, and clean-up leaves only what rows name', async () => {
    const port = await freePort();
    const first = await start(port);
    const bearer = await token(first.url);
    const auth = { authorization: `Bearer ${bearer}` };

    // Two uploads that finished before the kill: they must survive it.
    const kept: Array<{ id: string; sha256: string }> = [];
    for (let index = 0; index < 2; index += 1) {
      const document = await createDocument(first.url, bearer, `kept-${index}.bin`);
      const bytes = randomBytes(3 * MiB);
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(bytes)]), `kept-${index}.bin`);
      expect((await fetch(`${document.storageUrl}/file`, { method: 'POST', headers: auth, body: form })).status).toBe(201);
      kept.push({ id: document.id, sha256: createHash('sha256').update(bytes).digest('hex') });
    }

    // 10 one-shot uploads of 12 MiB, 9 MiB of each sent (a part or more streamed to the store).
    const inFlight: Array<Promise<void>> = [];
    const oneShot: string[] = [];
    for (let index = 0; index < 10; index += 1) {
      const document = await createDocument(first.url, bearer, `one-shot-${index}.bin`);
      oneShot.push(document.id);
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
    await first.kill();

    const second = await start(port);
    const fresh = await token(second.url);
    const freshAuth = { authorization: `Bearer ${fresh}`, 'organization-id': ORG };
    const search = (await (
      await fetch(`${second.url}/v1/patients/${PATIENT}/documents/search`, { method: 'POST', headers: { ...freshAuth, 'content-type': 'application/json' }, body: JSON.stringify({ path: '/crash-s3', offset: 0, limit: 100 }) })
    ).json()) as { documents: Array<{ id: string; hasContent: boolean; sha256: string | null; storageDownloadUri?: string }> };
    expect(search.documents).toHaveLength(22);
    // Every document that claims content serves it whole, as its sha256 says; the cut ones claim none.
    for (const document of search.documents) {
      if (!document.hasContent) continue;
      const body = Buffer.from(await (await fetch(document.storageDownloadUri!)).arrayBuffer());
      expect(createHash('sha256').update(body).digest('hex')).toBe(document.sha256);
    }
    expect(search.documents.filter((document) => document.hasContent).map((document) => document.id).sort()).toEqual(kept.map((document) => document.id).sort());

    // A tus upload goes on from the offset its last whole PATCH left, on the new process.
    const resumed = tus[0]!;
    const tusHeaders = { authorization: `Bearer ${fresh}`, 'tus-resumable': '1.0.0' };
    const head = await fetch(resumed.location, { method: 'HEAD', headers: tusHeaders });
    expect(head.status).toBe(200);
    const offset = Number(head.headers.get('upload-offset'));
    expect(offset).toBe(MiB);
    const rest = await fetch(resumed.location, { method: 'PATCH', headers: { ...tusHeaders, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, body: new Uint8Array(resumed.bytes.subarray(offset)) });
    expect(rest.status).toBe(204);
    const document = (await (await fetch(`${second.url}/v1/patients/${PATIENT}/documents/${resumed.id}`, { headers: freshAuth })).json()) as { sha256: string; storageDownloadUri: string };
    expect(document.sha256).toBe(createHash('sha256').update(resumed.bytes).digest('hex'));
    expect(Buffer.from(await (await fetch(document.storageDownloadUri)).arrayBuffer()).equals(resumed.bytes)).toBe(true);
    const stopped = new Promise((resolve) => second.child.once('exit', resolve));
    second.child.kill('SIGTERM');
    await stopped;

    // Clean-up once the abandoned uploads are old enough (their ages passed): what is left in the
    // bucket is exactly the objects the database names.
    const storage = new S3ContentStorage(createS3Client(s3.endpoint), parseStorageUrl('s3://patient-docs/crash'), s3.endpoint);
    const store = SqliteStore.open(path.join(dataDir, 'patient-docs.sqlite'));
    try {
      const resumable = new S3ResumableStore(storage, 24 * 3_600_000);
      expect(await resumable.removeExpired(new Date(Date.now() + 48 * 3_600_000))).toBe(9);
      await storage.collectGarbage({ tempOlderThanMs: 0, orphanOlderThanMs: 0, isReferenced: (key) => store.content.isKeyReferenced(key) });
      const left: string[] = [];
      for await (const object of storage.list('')) left.push(object.Key!.slice('crash/'.length));
      expect(left.length).toBe(3);
      for (const key of left) {
        expect(key.startsWith('objects/')).toBe(true);
        expect(await store.content.isKeyReferenced(key.slice('objects/'.length))).toBe(true);
      }
    } finally {
      await store.close();
    }
  }, 180_000);

  it('a kill -9 after the upload is in the bucket and before its row: no document claims it, and clean-up removes it', async () => {
    const port = await freePort();
    const first = await start(port, betweenDir, 'between');
    const bearer = await token(first.url);
    const document = await createDocument(first.url, bearer, 'between.bin');
    const storage = new S3ContentStorage(createS3Client(s3.endpoint), parseStorageUrl('s3://patient-docs/between'), s3.endpoint);
    const received = async (): Promise<string[]> => {
      const keys: string[] = [];
      for await (const object of storage.list('objects/received/')) keys.push(object.Key!);
      return keys;
    };
    // Another process holds the database's write lock: the upload's row waits for it (up to
    // 10 seconds) while its bytes are complete in the bucket, and the server dies then.
    const holder = new Database(path.join(betweenDir, 'patient-docs.sqlite'));
    holder.exec('BEGIN IMMEDIATE');
    try {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(randomBytes(3 * MiB))]), 'between.bin');
      const upload = fetch(`${document.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` }, body: form }).catch(() => undefined);
      const deadline = Date.now() + 30_000;
      while ((await received()).length === 0) {
        expect(Date.now()).toBeLessThan(deadline);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await first.kill();
      await upload;
    } finally {
      holder.exec('COMMIT');
      holder.close();
    }
    expect(await received()).toHaveLength(1);

    const second = await start(port, betweenDir, 'between');
    const fresh = await token(second.url);
    const got = await fetch(`${second.url}/v1/patients/${PATIENT}/documents/${document.id}`, { headers: { authorization: `Bearer ${fresh}`, 'organization-id': ORG } });
    expect(await got.json()).toMatchObject({ id: document.id, hasContent: false, sha256: null });
    // The object is young: the janitor of the instance that started leaves it to a later sweep.
    expect(await received()).toHaveLength(1);
    const stopped = new Promise((resolve) => second.child.once('exit', resolve));
    second.child.kill('SIGTERM');
    await stopped;

    const store = SqliteStore.open(path.join(betweenDir, 'patient-docs.sqlite'));
    try {
      expect(await storage.collectGarbage({ tempOlderThanMs: 0, orphanOlderThanMs: 0, isReferenced: (key) => store.content.isKeyReferenced(key) })).toEqual({ tempFiles: 1, orphanObjects: 0 });
    } finally {
      await store.close();
    }
    expect(await received()).toEqual([]);
  }, 120_000);
});
