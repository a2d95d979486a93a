/**
 * The object store at start and at run time: a server whose bucket is missing or whose store is
 * unreachable does not start, and says why in one line; a store that goes away while the server
 * runs makes uploads and downloads answer 503 with Retry-After, and nothing half-stored; verify
 * then says the store failed.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../server/config.js';
import { verifyContent } from '../server/db/sqlite/backup.js';
import { startServer } from '../server/start.js';
import { startS3, TEST_S3_CREDENTIALS, type TestS3 } from './helpers/s3.js';
import { ADMIN_TOKEN, expectProblem, PATIENT, SEED_FILE, startTestServer, tempDir, type TestServer } from './helpers/server.js';

let s3: TestS3;
let t: TestServer;

beforeAll(async () => {
  s3 = await startS3();
  t = await startTestServer(s3.env('outage'));
});

afterAll(async () => {
  await t?.close();
  await s3?.close();
});

const config = (env: Record<string, string>) =>
  loadConfig({ PORT: '0', PATIENT_DOCS_DATA_DIR: tempDir('s3-start'), PATIENT_DOCS_SEED: SEED_FILE, PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN, PATIENT_DOCS_LOG_LEVEL: 'silent', ...TEST_S3_CREDENTIALS, ...env });

describe('the object store', () => {
  it('a missing bucket or an unreachable store stops the start with one line naming it', async () => {
    await expect(startServer(config({ PATIENT_DOCS_STORAGE_URL: 's3://no-such-bucket', PATIENT_DOCS_S3_ENDPOINT: s3.endpoint }), { logger: false })).rejects.toThrow(
      /^the bucket of s3:\/\/no-such-bucket does not exist at http:\/\/127\.0\.0\.1:\d+; create it first$/,
    );
    await expect(startServer(config({ PATIENT_DOCS_STORAGE_URL: 's3://patient-docs', PATIENT_DOCS_S3_ENDPOINT: 'http://127.0.0.1:9' }), { logger: false })).rejects.toThrow(
      /^the object store at http:\/\/127\.0\.0\.1:9 is unreachable \(ECONNREFUSED\)/,
    );
  });

  it('gone at run time: uploads and downloads answer 503 with Retry-After, and the document claims nothing', async () => {
    const created = await t.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: 'outage.bin', path: '/outage' } });
    const stored = await t.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: 'stored.bin', path: '/outage' } });
    const form = () => {
      const body = new FormData();
      body.append('file', new Blob([new Uint8Array(Buffer.alloc(100_000, 7))]), 'scan.bin');
      return body;
    };
    const bearer = { authorization: `Bearer ${await t.token()}` };
    expect((await fetch(`${stored.body.storageUrl}/file`, { method: 'POST', headers: bearer, body: form() })).status).toBe(201);
    const link = (await t.api('GET', `/v1/patients/${PATIENT}/documents/${stored.body.id}`)).body.storageDownloadUri as string;
    await s3.close();
    const refused = await fetch(`${created.body.storageUrl}/file`, { method: 'POST', headers: bearer, body: form() });
    const problem = expectProblem({ status: refused.status, body: await refused.json(), headers: refused.headers }, 503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(problem.detail).toMatch(/object store/);
    const download = await fetch(link);
    expect(download.status).toBe(503);
    expect(download.headers.get('retry-after')).toBe('5');
    expect((await t.api('GET', `/v1/patients/${PATIENT}/documents/${created.body.id}`)).body.hasContent).toBe(false);
    // verify (the admin CLI's, beside the server) names the store as what failed, not its own database.
    await expect(verifyContent(path.join(t.dataDir, 'patient-docs.sqlite'), t.server.context.content.storage, { hashes: false })).rejects.toThrow(/^the object store is unreachable or failing/);
  });
});
