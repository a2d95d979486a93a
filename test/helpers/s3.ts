/**
 * A real S3-compatible server for tests: s3rver (npm, pure Node, no daemon to install) on loopback,
 * port 0, its objects in a temp folder, one bucket made at start. The test servers reach it as an
 * S3-compatible endpoint (PATIENT_DOCS_S3_ENDPOINT, path-style) when
 * PATIENT_DOCS_TEST_STORAGE=s3 (the `s3` project of vitest.config.ts).
 *
 * s3rver checks no request signature: it never catches a signing bug, only what the bytes become.
 * It keeps incomplete multipart uploads but has no ListMultipartUploads nor AbortMultipartUpload
 * (NotImplemented, 405): the two are added here over s3rver's own upload folders, as S3 answers
 * them, so the server's clean-up of abandoned multipart uploads is exercised and checked.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import S3rver from 's3rver';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';

/** The AWS SDK's credentials and region, as the environment variables the server reads them from. */
export interface S3Credentials {
  AWS_ACCESS_KEY_ID: string;
  AWS_SECRET_ACCESS_KEY: string;
  AWS_REGION: string;
}

/** What a test needs of an S3-compatible server on loopback: s3rver here, Ceph RGW (ceph-rgw.ts). */
export interface S3CompatibleServer {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  bucket: string;
  /** The credentials the server accepts. */
  credentials: S3Credentials;
  /** The environment a server needs to keep its content there (under `prefix`), credentials included. */
  env(prefix?: string): Record<string, string>;
  /** The keys of the bucket's incomplete multipart uploads under `prefix` (ListMultipartUploads). */
  multipartUploads(prefix?: string): Promise<string[]>;
  close(): Promise<void>;
}

export interface TestS3 extends S3CompatibleServer {
  /** Where s3rver keeps the bucket's objects on disk. */
  directory: string;
  /** The key of each multipart upload aborted so far (AbortMultipartUpload answered 204), in order. */
  readonly aborted: string[];
}

/** The AWS SDK's credentials and region for s3rver (it accepts these; it checks no signature). */
/** An SDK client of the test server at `endpoint` (path-style, as the server under test reaches it). */
export function testS3Client(endpoint: string, credentials: S3Credentials): S3Client {
  return new S3Client({ endpoint, forcePathStyle: true, region: credentials.AWS_REGION, credentials: { accessKeyId: credentials.AWS_ACCESS_KEY_ID, secretAccessKey: credentials.AWS_SECRET_ACCESS_KEY } });
}

/** What every S3-compatible test server gives alike: a server's environment for a prefix, and the bucket's incomplete multipart uploads. */
export function s3Access(endpoint: string, bucket: string, credentials: S3Credentials): Pick<S3CompatibleServer, 'env' | 'multipartUploads'> {
  return {
    env: (prefix = '') => ({ PATIENT_DOCS_STORAGE_URL: `s3://${bucket}${prefix ? `/${prefix}` : ''}`, PATIENT_DOCS_S3_ENDPOINT: endpoint, ...credentials }),
    multipartUploads: async (prefix = '') => {
      const client = testS3Client(endpoint, credentials);
      try {
        const listed = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }));
        return (listed.Uploads ?? []).map((upload) => upload.Key!).sort();
      } finally {
        client.destroy();
      }
    },
  };
}

export const TEST_S3_CREDENTIALS: S3Credentials = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' };

export async function startS3(bucket = 'patient-docs'): Promise<TestS3> {
  continuationTokensWithoutLegacyDes();
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] });
  const aborted: string[] = [];
  server.middleware.unshift(multipartUploadRoutes(directory, aborted));
  const address = (await server.run()) as AddressInfo;
  // The server under test runs in this process and reads its credentials from here, as the SDK does.
  Object.assign(process.env, TEST_S3_CREDENTIALS);
  const endpoint = `http://127.0.0.1:${address.port}`;
  let closing: Promise<void> | undefined;
  return {
    endpoint,
    bucket,
    credentials: TEST_S3_CREDENTIALS,
    directory,
    aborted,
    ...s3Access(endpoint, bucket, TEST_S3_CREDENTIALS),
    close: async () => {
      // Idempotent: a test that takes the store away closes it before the file's clean-up does.
      closing ??= server.close().then(() => fs.rmSync(directory, { recursive: true, force: true }));
      await closing;
    },
  };
}

/**
 * s3rver writes a listing's continuation token (every ListObjectsV2 answer cut short by max-keys)
 * with single DES, which OpenSSL 3 (Node 18 and later) keeps in its legacy provider: such a listing
 * answers 500. Triple DES with its three keys equal is single DES, byte for byte, and is in the
 * default provider: s3rver's `des` is given that, in this process only.
 */
function continuationTokensWithoutLegacyDes(): void {
  const patched = crypto as unknown as { createCipheriv: typeof crypto.createCipheriv; createDecipheriv: typeof crypto.createDecipheriv; s3rverDes?: true };
  if (patched.s3rverDes) return;
  const asTripleDes = <F extends (algorithm: string, key: Buffer, iv: Buffer, ...rest: never[]) => unknown>(original: F): F =>
    ((algorithm: string, key: Buffer, iv: Buffer, ...rest: never[]) => (algorithm === 'des' ? original('des-ede3-cbc', Buffer.concat([key, key, key]), iv) : original(algorithm, key, iv, ...rest))) as F;
  patched.createCipheriv = asTripleDes(crypto.createCipheriv.bind(crypto) as never);
  patched.createDecipheriv = asTripleDes(crypto.createDecipheriv.bind(crypto) as never);
  patched.s3rverDes = true;
}

/** Where s3rver (3.x, file system store) keeps a bucket's incomplete multipart uploads: one folder each, the key in a file `key`. */
const uploadsFolder = (directory: string, bucket: string): string => path.join(directory, bucket, '._S3rver_uploads');

const xmlEscape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * ListMultipartUploads (GET /bucket?uploads, one page, Prefix honoured) and AbortMultipartUpload
 * (DELETE /bucket/key?uploadId=…: 204, or 404 NoSuchUpload) over s3rver's upload folders, answered
 * as S3 answers them (path-style requests, as the server under test sends with an endpoint).
 */
function multipartUploadRoutes(directory: string, aborted: string[]): S3rver['middleware'][number] {
  return async (ctx, next) => {
    // Path-style: /bucket[/] for the bucket, /bucket/key for an object.
    const [bucket, ...keyParts] = ctx.path.replace(/^\/|\/$/g, '').split('/');
    const folder = uploadsFolder(directory, decodeURIComponent(bucket ?? ''));
    if (ctx.method === 'GET' && keyParts.length === 0 && 'uploads' in ctx.query) {
      const prefix = typeof ctx.query.prefix === 'string' ? ctx.query.prefix : '';
      const uploads: string[] = [];
      for (const uploadId of fs.existsSync(folder) ? fs.readdirSync(folder).sort() : []) {
        const keyFile = path.join(folder, uploadId, 'key');
        if (!fs.existsSync(keyFile)) continue;
        const key = fs.readFileSync(keyFile, 'utf8');
        if (!key.startsWith(prefix)) continue;
        const initiated = fs.statSync(keyFile).mtime.toISOString();
        uploads.push(`<Upload><Key>${xmlEscape(key)}</Key><UploadId>${xmlEscape(uploadId)}</UploadId><Initiated>${initiated}</Initiated><StorageClass>STANDARD</StorageClass></Upload>`);
      }
      ctx.type = 'application/xml';
      ctx.body = `<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${xmlEscape(bucket ?? '')}</Bucket><Prefix>${xmlEscape(prefix)}</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>${uploads.join('')}</ListMultipartUploadsResult>`;
      return;
    }
    const uploadId = ctx.query.uploadId;
    if (ctx.method === 'DELETE' && keyParts.length > 0 && typeof uploadId === 'string') {
      const upload = path.join(folder, path.basename(uploadId));
      const key = keyParts.map(decodeURIComponent).join('/');
      if (!fs.existsSync(path.join(upload, 'key')) || fs.readFileSync(path.join(upload, 'key'), 'utf8') !== key) {
        ctx.status = 404;
        ctx.type = 'application/xml';
        ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message><UploadId>${xmlEscape(uploadId)}</UploadId></Error>`;
        return;
      }
      fs.rmSync(upload, { recursive: true, force: true });
      aborted.push(key);
      ctx.status = 204;
      return;
    }
    await next();
  };
}
