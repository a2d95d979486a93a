/**
 * A resumable (tus) upload whose PATCHes go to each instance of the deployment in turn, as a
 * round-robin load balancer sends them (DESIGN §6): small 64 KiB pieces, as a client behind a
 * proxy sends, and 8 MiB ones, past S3's 5 MiB part minimum. The document ends with exactly the
 * bytes sent and their SHA-256. In the `deployment` project (PostgreSQL, S3, two instances behind
 * nginx) the pieces alternate between the instances' own addresses; elsewhere one server takes them all.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PATIENT, startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => server.close());

const KiB = 1024;
const MiB = 1024 * KiB;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const tus = { 'tus-resumable': '1.0.0' };

/** Bytes that differ at every offset, so a piece stored twice or out of place changes the hash. */
function scan(size: number): Buffer {
  const bytes = Buffer.alloc(size);
  for (let index = 0; index + 4 <= size; index += 4) bytes.writeUInt32LE(index, index);
  return bytes;
}

/** Creates the document and uploads `bytes` in pieces of `pieceBytes`, piece n to instance n mod N. */
async function uploadAcross(fileName: string, bytes: Buffer, pieceBytes: number): Promise<void> {
  const created = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName, path: '/across' } });
  expect(created.status).toBe(201);
  const token = await server.token();
  const started = await fetch(`${created.body.storageUrl}/uploads`, { method: 'POST', headers: { ...tus, authorization: `Bearer ${token}`, 'upload-length': String(bytes.length) } });
  expect(started.status, await started.text()).toBe(201);
  const upload = new URL(started.headers.get('location')!).pathname;
  const instances = server.instances.map((instance) => instance.url);
  for (let offset = 0, piece = 0; offset < bytes.length; offset += pieceBytes, piece += 1) {
    const via = instances[piece % instances.length]!;
    // Now and then (each is a round trip), the offset as the other instance sees it.
    if (piece % 16 === 1) {
      const asked = await fetch(`${instances[(piece + 1) % instances.length]}${upload}`, { method: 'HEAD', headers: { ...tus, authorization: `Bearer ${token}` } });
      expect(asked.headers.get('upload-offset'), `piece ${piece}`).toBe(String(offset));
    }
    const body = bytes.subarray(offset, offset + pieceBytes);
    const patched = await fetch(`${via}${upload}`, {
      method: 'PATCH',
      headers: { ...tus, authorization: `Bearer ${token}`, 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) },
      body: new Blob([new Uint8Array(body)]),
    });
    expect(patched.status, `piece ${piece} via ${via}: ${await patched.text()}`).toBe(204);
    expect(patched.headers.get('upload-offset')).toBe(String(offset + body.length));
  }
  const found = await server.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { id: [created.body.id], hasContent: true } });
  expect(found.body.documents).toHaveLength(1);
  const [document] = found.body.documents;
  expect([document.fileSize, document.sha256]).toEqual([bytes.length, sha256(bytes)]);
  // Read back through every instance: the bytes, not only the recorded hash.
  for (const instance of instances) {
    const link = new URL(document.storageDownloadUri);
    const downloaded = Buffer.from(await (await fetch(`${instance}${link.pathname}${link.search}`)).arrayBuffer());
    expect(downloaded.length).toBe(bytes.length);
    expect(sha256(downloaded)).toBe(sha256(bytes));
  }
}

describe('a tus upload whose PATCHes alternate between instances', () => {
  it('stores 64 KiB pieces gathered past one 8 MiB part', async () => {
    await uploadAcross('small-pieces.dcm', scan(8 * MiB + 3 * 64 * KiB + 123), 64 * KiB);
  }, 120_000);

  it('stores 8 MiB pieces', async () => {
    await uploadAcross('large-pieces.dcm', scan(2 * 8 * MiB + 1000), 8 * MiB);
  }, 120_000);
});
