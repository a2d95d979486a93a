/**
 * A real S3-compatible server for tests: s3rver (npm, pure Node, no daemon to install) on loopback,
 * port 0, its objects in a temp folder, one bucket made at start. The test servers reach it as an
 * S3-compatible endpoint (PATIENT_DOCS_S3_ENDPOINT, path-style) when
 * PATIENT_DOCS_TEST_STORAGE=s3 (the `s3` project of vitest.config.ts).
 *
 * s3rver checks no request signature: it never catches a signing bug, only what the bytes become.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import S3rver from 's3rver';

export interface TestS3 {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  bucket: string;
  /** Where s3rver keeps the bucket's objects on disk. */
  directory: string;
  /** The environment a server needs to keep its content there (under `prefix`). */
  env(prefix?: string): Record<string, string>;
  close(): Promise<void>;
}

/** The AWS SDK's credentials and region for s3rver (it accepts these; it checks no signature). */
export const TEST_S3_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' };

export async function startS3(bucket = 'patient-docs'): Promise<TestS3> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] });
  const address = (await server.run()) as AddressInfo;
  // The server under test runs in this process and reads its credentials from here, as the SDK does.
  Object.assign(process.env, TEST_S3_CREDENTIALS);
  const endpoint = `http://127.0.0.1:${address.port}`;
  let closing: Promise<void> | undefined;
  return {
    endpoint,
    bucket,
    directory,
    env: (prefix = '') => ({ PATIENT_DOCS_STORAGE_URL: `s3://${bucket}${prefix ? `/${prefix}` : ''}`, PATIENT_DOCS_S3_ENDPOINT: endpoint, ...TEST_S3_CREDENTIALS }),
    close: async () => {
      // Idempotent: a test that takes the store away closes it before the file's clean-up does.
      closing ??= server.close().then(() => fs.rmSync(directory, { recursive: true, force: true }));
      await closing;
    },
  };
}
