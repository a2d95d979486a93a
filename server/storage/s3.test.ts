/**
 * The S3 backend against two real S3-compatible servers on loopback, the same tests on each:
 * s3rver (npm, checks no signature) and Ceph's RADOS Gateway on a one-node cluster
 * (test/helpers/ceph-rgw.ts, checks AWS SigV4 signatures as S3 does). The bytes stored are the
 * bytes sent, the size limit leaves nothing behind, commit and clean-up, the start-up check's
 * one-line reasons, and tus uploads continued by another instance across S3's 5 MiB part minimum.
 * Then RGW refuses a request signed with a wrong secret, and a server given it does not start.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCephRgw } from '../../test/helpers/ceph-rgw.js';
import { startServerProcess } from '../../test/helpers/processes.js';
import { startS3, type S3CompatibleServer } from '../../test/helpers/s3.js';
import { createS3Client, PART_BYTES, S3ContentStorage } from './s3.js';
import { S3ResumableStore } from './s3-resumable.js';
import { ChecksumMismatchError, SizeLimitError } from './types.js';

/** The servers every test below runs against, each started once for the file on first use. */
const SERVERS = { s3rver: startS3, 'Ceph RGW': startCephRgw } as const;
type ServerName = keyof typeof SERVERS;
const started = new Map<ServerName, Promise<S3CompatibleServer>>();
const server = (name: ServerName): Promise<S3CompatibleServer> => {
  if (!started.has(name)) started.set(name, SERVERS[name]());
  return started.get(name)!;
};

/** The server the tests of the current describe run against; the code under test takes its credentials from the environment. */
let s3: S3CompatibleServer;
let storage: S3ContentStorage;
const CREDENTIAL_VARIABLES = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION'] as const;
const environmentBefore = Object.fromEntries(CREDENTIAL_VARIABLES.map((name) => [name, process.env[name]]));

afterAll(async () => {
  await Promise.all([...started.values()].map(async (starting) => (await starting.catch(() => undefined))?.close()));
  for (const name of CREDENTIAL_VARIABLES) {
    if (environmentBefore[name] === undefined) delete process.env[name];
    else process.env[name] = environmentBefore[name];
  }
});

const fresh = (): S3ContentStorage => new S3ContentStorage(createS3Client(s3.endpoint), { bucket: s3.bucket, prefix: `t-${randomUUID().slice(0, 8)}/` }, s3.endpoint);
const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Every key in the bucket under the storage's prefix (incomplete multipart uploads: s3.multipartUploads). */
async function leftovers(target: S3ContentStorage): Promise<{ keys: string[] }> {
  const listed = await target.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: target.where.prefix }));
  return { keys: (listed.Contents ?? []).map((object) => object.Key!.slice(target.where.prefix.length)).sort() };
}

function chunked(bytes: Buffer, size: number): Readable {
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
  return Readable.from(chunks);
}

describe.each(Object.keys(SERVERS) as ServerName[])('on %s', (name) => {
  beforeAll(async () => {
    s3 = await server(name);
    Object.assign(process.env, s3.credentials);
  });

  describe('S3ContentStorage', () => {
    beforeAll(() => {
      storage = fresh();
    });

    it('stores exactly the bytes sent, small (one PUT) and streamed in parts, with their sha256 and head', async () => {
      for (const size of [1000, 2 * PART_BYTES + 12345]) {
        const bytes = randomBytes(size);
        const received = await storage.receive(chunked(bytes, 64 * 1024), size);
        expect(received).toMatchObject({ size, sha256: sha(bytes) });
        expect(Buffer.from(received.head)).toEqual(bytes.subarray(0, 132));
        const key = `documents/${randomUUID()}/v1-${received.temp.id}`;
        await storage.commit(received.temp, key);
        // Read back raw, without the storage: no aws-chunked framing, no trailing checksum kept.
        const raw = await storage.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: storage.objectKey(key) }));
        expect(Buffer.from(await raw.Body!.transformToByteArray()).equals(bytes)).toBe(true);
        expect(await storage.size(key)).toBe(size);
        expect((await collect(storage.read(key, { start: 10, end: 19 }))).equals(bytes.subarray(10, 20))).toBe(true);
      }
      expect((await leftovers(storage)).keys.filter((key) => key.startsWith('objects/received/'))).toEqual([]);
    });

    it('keep adopts the received object where it lies (one object, no copy); one older than the adoption window is copied under the key', async () => {
      const target = fresh();
      const bytes = randomBytes(PART_BYTES + 1000);
      const received = await target.receive(chunked(bytes, 64 * 1024), bytes.length);
      const key = await target.keep(received.temp, 'documents/d/v1-x');
      expect(key).toBe(`received/${received.temp.id}`);
      expect((await leftovers(target)).keys).toEqual([`objects/received/${received.temp.id}`]);
      expect((await collect(target.read(key))).equals(bytes)).toBe(true);
      // Its row could not be written: uncommit leaves the temp object as it is, discard removes it.
      await target.uncommit(key, received.temp);
      expect(await target.size(key)).toBe(bytes.length);
      await target.discard(received.temp);
      expect(await leftovers(target)).toEqual({ keys: [] });

      // A store whose adoption window has passed for every object (as for a tus upload begun hours before).
      const late = new S3ContentStorage(target.client, target.where, s3.endpoint, -60_000);
      const old = await late.receive(Readable.from([Buffer.from('old bytes')]), 100);
      expect(await late.keep(old.temp, 'documents/d/v2-y')).toBe('documents/d/v2-y');
      expect((await leftovers(target)).keys).toEqual(['objects/documents/d/v2-y']);
      expect((await collect(target.read('documents/d/v2-y'))).toString()).toBe('old bytes');
    });

    it('refuses content past the limit while streaming and leaves nothing in the bucket', async () => {
      const target = fresh();
      await expect(target.receive(chunked(randomBytes(PART_BYTES + 10), 64 * 1024), PART_BYTES)).rejects.toBeInstanceOf(SizeLimitError);
      await expect(target.receive(chunked(randomBytes(100), 10), 99)).rejects.toBeInstanceOf(SizeLimitError);
      expect(await leftovers(target)).toEqual({ keys: [] });
    });

    it('a missing object has no size and its read fails; uncommit gives the temp object back', async () => {
      expect(await storage.size('documents/none/v1')).toBeUndefined();
      await expect(collect(storage.read('documents/none/v1'))).rejects.toMatchObject({ name: 'NoSuchKey' });
      const received = await storage.receive(Readable.from([Buffer.from('abc')]), 10);
      await storage.commit(received.temp, 'documents/u/v1');
      await storage.uncommit('documents/u/v1', received.temp);
      expect(await storage.size('documents/u/v1')).toBeUndefined();
      await storage.commit(received.temp, 'documents/u/v1');
      expect((await collect(storage.read('documents/u/v1'))).toString()).toBe('abc');
    });

    it('clean-up removes temp objects and unreferenced objects old enough, keeps referenced ones', async () => {
      const target = fresh();
      await target.put('documents/kept/v1', Buffer.from('kept'));
      await target.put('documents/orphan/v1', Buffer.from('orphan'));
      const received = await target.receive(Readable.from([Buffer.from('temp')]), 10);
      // Young: nothing goes.
      expect(await target.collectGarbage({ tempOlderThanMs: 60_000, orphanOlderThanMs: 60_000, isReferenced: async (key) => key.includes('kept') })).toEqual({ tempFiles: 0, orphanObjects: 0 });
      // Without the database's word, a received object may be a row's: it stays.
      expect(await target.collectGarbage({ tempOlderThanMs: -1000, orphanOlderThanMs: -1000 })).toEqual({ tempFiles: 0, orphanObjects: 0 });
      expect(await target.collectGarbage({ tempOlderThanMs: -1000, orphanOlderThanMs: -1000, isReferenced: async (key) => key.includes('kept') })).toEqual({ tempFiles: 1, orphanObjects: 1 });
      expect((await leftovers(target)).keys).toEqual(['objects/documents/kept/v1']);
      expect(await target.hasObjects()).toBe(true);
      expect(received.size).toBe(4);
    });

    it('the start-up check passes, and says in one line what failed: no bucket, endpoint unreachable', async () => {
      await storage.check();
      const noBucket = new S3ContentStorage(createS3Client(s3.endpoint), { bucket: 'no-such-bucket', prefix: '' }, s3.endpoint);
      await expect(noBucket.check()).rejects.toThrow(/^the bucket of s3:\/\/no-such-bucket does not exist at http:\/\/127\.0\.0\.1:\d+; create it first$/);
      const closed = 'http://127.0.0.1:9';
      const unreachable = new S3ContentStorage(createS3Client(closed), { bucket: s3.bucket, prefix: '' }, closed);
      await expect(unreachable.check()).rejects.toThrow(/^the object store at http:\/\/127\.0\.0\.1:9 is unreachable \(ECONNREFUSED\)/);
      expect((await leftovers(storage)).keys.filter((key) => key.startsWith('probe/'))).toEqual([]);
    });
  });

  describe('S3ResumableStore', () => {
    const upload = (length: number) => ({
      id: randomUUID(),
      documentId: randomUUID(),
      length,
      metadata: {},
      ifMatch: null,
      createdBy: 'scanner-pc-1',
      createdAt: new Date().toISOString(),
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    });

    it('small PATCHes and large ones on two instances make one object, its sha256 kept across them; a bad checksum keeps the offset', async () => {
      const target = fresh();
      const one = new S3ResumableStore(target, 60_000);
      const two = new S3ResumableStore(new S3ContentStorage(createS3Client(s3.endpoint), target.where, s3.endpoint), 60_000);
      const bytes = randomBytes(PART_BYTES * 2 + 300_000);
      const created = await one.create(upload(bytes.length));
      let offset = 0;
      // Small PATCHes (512 KiB, each kept as a chunk of its own until a part's worth is there)
      // alternating between the instances until past the first part, then large ones.
      for (let index = 0; offset < PART_BYTES + 100_000; index += 1) {
        const chunk = bytes.subarray(offset, offset + 512 * 1024);
        offset = (await (index % 2 === 0 ? one : two).append(created.id, offset, Readable.from([chunk]))).offset;
      }
      const wrong = createHash('sha256').update('other').digest();
      await expect(two.append(created.id, offset, Readable.from([bytes.subarray(offset, offset + 1000)]), wrong)).rejects.toBeInstanceOf(ChecksumMismatchError);
      expect((await one.get(created.id))!.offset).toBe(offset);
      const next = bytes.subarray(offset, offset + PART_BYTES);
      offset = (await two.append(created.id, offset, chunked(next, 256 * 1024), createHash('sha256').update(next).digest())).offset;
      offset = (await one.append(created.id, offset, chunked(bytes.subarray(offset), 1024 * 1024))).offset;
      expect(offset).toBe(bytes.length);
      const done = await two.complete(created.id);
      expect(done).toMatchObject({ size: bytes.length, sha256: sha(bytes) });
      await target.commit(done.temp, 'documents/tus/v1');
      expect((await collect(target.read('documents/tus/v1'))).equals(bytes)).toBe(true);
      expect(await leftovers(target)).toEqual({ keys: ['objects/documents/tus/v1'] });
    });

    it('a reopened upload takes its last byte again and completes with the same bytes; an expired one is removed with its parts', async () => {
      const target = fresh();
      const store = new S3ResumableStore(target, 60_000);
      const bytes = randomBytes(PART_BYTES + 5000);
      const created = await store.create(upload(bytes.length));
      await store.append(created.id, 0, chunked(bytes, 1024 * 1024));
      const done = await store.complete(created.id);
      await store.reopen({ ...created, offset: bytes.length }, done);
      expect((await store.get(created.id))!.offset).toBe(bytes.length - 1);
      await store.append(created.id, bytes.length - 1, Readable.from([bytes.subarray(bytes.length - 1)]));
      const again = await store.complete(created.id);
      expect(again).toMatchObject({ size: bytes.length, sha256: sha(bytes) });
      await target.discard(again.temp);

      const expiring = await store.create(upload(PART_BYTES * 2));
      await store.append(expiring.id, 0, chunked(randomBytes(PART_BYTES + 10), 1024 * 1024));
      expect(await store.removeExpired(new Date(Date.now() + 120_000))).toBe(1);
      expect(await leftovers(target)).toEqual({ keys: [] });
      expect(await s3.multipartUploads(target.where.prefix)).toEqual([]);
    });
  });
});

describe('Ceph RGW checks request signatures', () => {
  it('refuses a request signed with a wrong secret (nothing stored), and a server given that secret stops at start with one line', async () => {
    const rgw = await server('Ceph RGW');
    const signedWith = (accessKeyId: string, secretAccessKey: string) => new S3Client({ endpoint: rgw.endpoint, forcePathStyle: true, region: rgw.credentials.AWS_REGION, credentials: { accessKeyId, secretAccessKey } });
    const key = `signed/${randomUUID()}`;
    const wrongSecret = signedWith(rgw.credentials.AWS_ACCESS_KEY_ID, `${rgw.credentials.AWS_SECRET_ACCESS_KEY}x`);
    const unknownKey = signedWith('NOSUCHACCESSKEY', rgw.credentials.AWS_SECRET_ACCESS_KEY);
    const right = signedWith(rgw.credentials.AWS_ACCESS_KEY_ID, rgw.credentials.AWS_SECRET_ACCESS_KEY);
    try {
      await expect(wrongSecret.send(new PutObjectCommand({ Bucket: rgw.bucket, Key: key, Body: 'forged' }))).rejects.toMatchObject({ name: 'SignatureDoesNotMatch', $metadata: { httpStatusCode: 403 } });
      await expect(unknownKey.send(new PutObjectCommand({ Bucket: rgw.bucket, Key: key, Body: 'forged' }))).rejects.toMatchObject({ name: 'InvalidAccessKeyId', $metadata: { httpStatusCode: 403 } });
      await expect(right.send(new HeadObjectCommand({ Bucket: rgw.bucket, Key: key }))).rejects.toMatchObject({ $metadata: { httpStatusCode: 404 } });
    } finally {
      for (const client of [wrongSecret, unknownKey, right]) client.destroy();
    }

    // The server itself (the bins' bundle, as IT runs it): its start-up check's probe is refused.
    await expect(startServerProcess({ ...rgw.env('wrong-secret'), AWS_SECRET_ACCESS_KEY: `${rgw.credentials.AWS_SECRET_ACCESS_KEY}x` })).rejects.toThrow(
      /^server exited \(1\):\npatient-docs-server: failed to start: the object store at http:\/\/127\.0\.0\.1:\d+ refused the credentials for s3:\/\/patient-docs\/wrong-secret \(SignatureDoesNotMatch\): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's policy\n$/,
    );
  });
});
