/**
 * Two server instances on one PostgreSQL database and one bucket prefix of an S3-compatible store
 * (s3rver on loopback), as DESIGN §6 deploys them: one tus upload has one writer at a time whichever
 * instance its requests reach (a second PATCH, a DELETE and the expiry clean-up meanwhile leave it
 * alone), and the clean-up aborts each abandoned multipart upload once, leaving none in the bucket.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../server/db/postgres/store.js';
import { RESUMABLE_LIFETIME_MS } from '../server/routes/tus.js';
import { StorageJanitor } from '../server/storage/janitor.js';
import type { S3ContentStorage } from '../server/storage/s3.js';
import { S3ResumableStore } from '../server/storage/s3-resumable.js';
import { PATIENT, startTestServer, testPostgres, testS3, type TestServer } from './helpers/server.js';
import { holdPatch } from './helpers/tus.js';

const MiB = 1024 * 1024;
const PREFIX = 'clinic';
let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  // As behind a load balancer: one database, one bucket prefix, one public URL (the tokens' issuer).
  const env = { PATIENT_DOCS_DATABASE_URL: await (await testPostgres()).createDatabase(), PATIENT_DOCS_PUBLIC_URL: 'https://docs.clinic.test', ...(await testS3()).env(PREFIX) };
  [a, b] = await Promise.all([startTestServer(env), startTestServer(env)]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const db = (server: TestServer) => (server.server.context.store as PostgresStore).db;
const leaseHeld = async (key: string) => (await db(a).rows('SELECT 1 FROM work_leases WHERE key = $1 AND until > $2', [key, Date.now()])).length > 0;

/** A clean-up on `server` as it runs once the ages of abandoned uploads have passed (a day and more later). */
function laterJanitor(server: TestServer): StorageJanitor {
  const { store, content } = server.server.context;
  const later = () => new Date(Date.now() + 2 * RESUMABLE_LIFETIME_MS);
  const resumable = new S3ResumableStore(content.storage as S3ContentStorage, RESUMABLE_LIFETIME_MS, later, store.leases);
  return new StorageJanitor(content.storage, resumable, (key) => store.content.isKeyReferenced(key), { intervalMs: 60_000, tempMaxAgeMs: 0, orphanMaxAgeMs: 0 }, later, store.leases);
}

async function startUpload(server: TestServer, fileName: string, length: number): Promise<{ documentId: string; route: string; uploadId: string; headers: Record<string, string> }> {
  const token = await server.token();
  const documentId = (await server.api('POST', `/v1/patients/${PATIENT}/documents`, { token, body: { fileName, path: '/s3-instances' } })).body.id as string;
  const headers = { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' };
  const created = await fetch(`${server.url}/storage/v1/documents/${documentId}/uploads`, { method: 'POST', headers: { ...headers, 'upload-length': String(length) } });
  expect(created.status).toBe(201);
  const route = new URL(created.headers.get('location')!).pathname;
  return { documentId, route, uploadId: route.split('/').at(-1)!, headers };
}

describe('tus on S3 with two instances', () => {
  it('lets one request write an upload at a time: a PATCH, a DELETE and the expiry clean-up through the other instance meanwhile change nothing, and the stored bytes are exact', async () => {
    const bytes = randomBytes(10 * MiB);
    const { documentId, route, uploadId, headers } = await startUpload(a, 'racing.stl', bytes.length);
    const patch = (server: TestServer, offset: number, chunk: Buffer) =>
      fetch(`${server.url}${route}`, { method: 'PATCH', headers: { ...headers, 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) }, body: new Uint8Array(chunk) });

    // A PATCH through A of 9 MiB (a whole part and a chunk), its first MiB sent: it holds the upload's writes.
    const first = bytes.subarray(0, 9 * MiB);
    const held = holdPatch(`${a.url}${route}`, headers, 0, first.length, first.subarray(0, MiB));
    await expect.poll(() => leaseHeld(`tus:${uploadId}`), { timeout: 15_000, interval: 50 }).toBe(true);

    // Through B meanwhile: other bytes at the same offset, the termination, the clean-up of a day later.
    const rival = await patch(b, 0, randomBytes(MiB));
    expect(rival.status).toBe(409);
    const terminated = await fetch(`${b.url}${route}`, { method: 'DELETE', headers });
    expect(terminated.status).toBe(409);
    expect((await laterJanitor(b).sweep()).expiredUploads).toBe(0);

    expect(await held.end(first.subarray(MiB))).toBe(204);
    const head = await fetch(`${b.url}${route}`, { method: 'HEAD', headers });
    expect(head.headers.get('upload-offset')).toBe(String(first.length));
    expect((await patch(b, first.length, bytes.subarray(first.length))).status).toBe(204);

    const document = (await b.api('GET', `/v1/patients/${PATIENT}/documents/${documentId}`)).body;
    expect(document).toMatchObject({ hasContent: true, fileSize: bytes.length, sha256: sha256(bytes) });
    // The public URL is the load balancer's: the link goes to B here.
    const link = new URL(document.storageDownloadUri);
    const downloaded = Buffer.from(await (await fetch(`${b.url}${link.pathname}${link.search}`)).arrayBuffer());
    expect(downloaded.equals(bytes)).toBe(true);
  });

  it('aborts an abandoned upload\'s multipart upload in the clean-up, once, with both instances sweeping at the same moment; none is left', async () => {
    const s3 = await testS3();
    const abandoned = await startUpload(b, 'abandoned.stl', 12 * MiB);
    const answer = await fetch(`${a.url}${abandoned.route}`, {
      method: 'PATCH',
      headers: { ...abandoned.headers, 'content-type': 'application/offset+octet-stream', 'upload-offset': '0' },
      body: new Uint8Array(randomBytes(9 * MiB)),
    });
    expect(answer.status).toBe(204);
    const key = `${PREFIX}/objects/received/tus-${abandoned.uploadId}`;
    expect(await s3.multipartUploads(`${PREFIX}/`)).toContain(key);

    // The servers' own sweeps at start took the clean-up's lease: it is free again, as an interval later.
    await db(a).run("DELETE FROM work_leases WHERE key = 'janitor'");
    const reports = await Promise.all([laterJanitor(a).sweep(), laterJanitor(b).sweep()]);
    expect(reports.map((report) => report.expiredUploads).sort()).toEqual([0, 1]);
    expect(await s3.multipartUploads(`${PREFIX}/`)).toEqual([]);
    expect(s3.aborted.filter((aborted) => aborted === key)).toEqual([key]);
    const head = await fetch(`${a.url}${abandoned.route}`, { method: 'HEAD', headers: abandoned.headers });
    expect(head.status).toBe(404);
  });
});
