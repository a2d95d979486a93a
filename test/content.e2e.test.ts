/**
 * Document content end to end (issue 3): a real server on a real socket, real files, real SQLite.
 * Upload, the SPEC §4.3 rule 4 check, signed downloads with ranges, limits, races, versions,
 * deletion, thumbnails of hostile files and of types without one. The renders of real scans, timed
 * by the server's render timeout, are test/content-renders.e2e.test.ts's, which runs alone.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Links } from '../server/domain/links.js';
import { contentRoutes, sha256 } from './helpers/content.js';
import { lyingCountStl, makeArchStl, makePdf, pdfBomb, truncatedStl } from './fixtures/scans.js';
import { ADMIN_TOKEN, CLIENT, expectProblem, ORG, PATIENT, startTestServer, storedIn, type TestServer } from './helpers/server.js';
import * as tus from 'tus-js-client';

const OTHER_ORG_CLIENT = { id: 'other-clinic-pc', secret: 'other-clinic-pc-secret-0123456789' };
const MAX_UPLOAD_BYTES = 4 * 1024 * 1024;

let t: TestServer;
const { createDocument, upload, checkUpload, waitForThumbnail } = contentRoutes(() => t);

/**
 * Nothing of a refused upload stays in the server's temp area (folder or bucket prefix). Polled: a thumbnail rendered in the
 * background for an earlier upload passes through that folder too, for the moment of its write.
 */
async function expectNoTempFiles(): Promise<void> {
  await expect.poll(() => storedIn(t, 'tmp'), { timeout: 5000, interval: 50 }).toEqual([]);
}

beforeAll(async () => {
  t = await startTestServer({ PATIENT_DOCS_MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES) });
  await t.server.context.directory.applySeed({
    clients: [{ clientId: OTHER_ORG_CLIENT.id, clientSecret: OTHER_ORG_CLIENT.secret, scopes: ['Patient.File.Write', 'Patient.File.Read'], organizations: ['0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a02'] }],
  });
});

afterAll(async () => {
  await t?.close();
});

describe('one-shot upload', () => {
  it('moves a placeholder to "with content": the SPEC §4.3 rule 4 check passes and document.uploaded is recorded', async () => {
    const document = await createDocument('rule4.stl');
    const before = await t.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { path: '/scans', hasContent: true, offset: 0, limit: 50 } });
    expect(before.body.documents.map((found: any) => found.id)).not.toContain(document.id);
    const bytes = makeArchStl({ triangles: 2000 });
    const response = await upload(document, bytes);
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ id: document.id, hasContent: true, fileSize: bytes.length, sha256: sha256(bytes), version: 1 });
    expect(response.headers.get('etag')).toBe(`"${sha256(bytes)}"`);
    const checked = await checkUpload(document.id, bytes);
    expect(Date.parse(checked.lastModifiedAt)).toBeGreaterThanOrEqual(Date.parse(checked.createdAt));
    const events = await t.server.context.store.outbox.after(0, 10_000);
    const uploaded = events.find((event) => event.eventType === 'document.uploaded' && (event.data.document as any).id === document.id);
    expect(uploaded?.data).toMatchObject({ fileSize: bytes.length, sha256: sha256(bytes), version: 1 });
    expect(uploaded?.organizationId).toBe(ORG);
  });

  it('accepts the file part before the text fields', async () => {
    const document = await createDocument('file-first.stl');
    const bytes = Buffer.from('solid first\nendsolid first\n');
    const response = await upload(document, bytes, { fileFirst: true });
    expect(response.status).toBe(201);
    await checkUpload(document.id, bytes);
  });

  it('refuses a mismatched Id, a missing file, a bad Type and a non-multipart body with 400 and stores nothing', async () => {
    const document = await createDocument('refused.stl');
    const bytes = Buffer.from('x'.repeat(1000));
    expectProblem(await upload(document, bytes, { fields: [['Id', '5f0e8a3c-1d2b-4c3d-8e9f-000000000099']] }), 400);
    expectProblem(await upload(document, bytes, { omitFile: true }), 400);
    expectProblem(await upload(document, bytes, { fields: [['Id', document.id], ['Type', 'not a type!']] }), 400);
    const json = await fetch(`${document.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${await t.token()}`, 'content-type': 'application/json' }, body: '{}' });
    expectProblem({ status: json.status, body: await json.json(), headers: json.headers }, 400);
    const raw = await fetch(`${document.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${await t.token()}`, 'content-type': 'multipart/form-data; boundary=xyz' }, body: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc' });
    expectProblem({ status: raw.status, body: await raw.json(), headers: raw.headers }, 400);
    const stored = await t.api('GET', `/v1/patients/${PATIENT}/documents/${document.id}`);
    expect(stored.body.hasContent).toBe(false);
    await expectNoTempFiles();
  });

  it('takes a form with the file alone (SPEC §4.2: FileName, Type and Id are the first-party client’s, not guaranteed for others)', async () => {
    const document = await createDocument('file-only.stl');
    const bytes = randomBytes(5000);
    const stored = await upload(document, bytes, { fields: [] });
    expect(stored.status).toBe(201);
    expect(stored.body).toMatchObject({ id: document.id, fileName: 'file-only.stl', fileType: 'STL', hasContent: true, fileSize: 5000 });
    await checkUpload(document.id, bytes);
    // With a name but no Id, as a client that knows the form but not the id field might send it.
    const named = await createDocument('named-no-id.stl');
    expect((await upload(named, bytes, { fields: [['FileName', 'named-no-id.stl'], ['Type', 'STL']] })).status).toBe(201);
  });

  it('needs a token with Patient.File.Write of the document’s organization', async () => {
    const document = await createDocument('authz.stl');
    const bytes = Buffer.from('abc');
    const none = await fetch(`${document.storageUrl}/file`, { method: 'POST', body: new FormData() });
    expectProblem({ status: none.status, body: await none.json(), headers: none.headers }, 401);
    expectProblem(await upload(document, bytes, { token: await t.token({ id: 'read-only', secret: 'read-only-secret-0123456789' }) }), 403);
    expectProblem(await upload(document, bytes, { token: await t.token(OTHER_ORG_CLIENT) }), 403);
    const missing = await upload({ id: '5f0e8a3c-1d2b-4c3d-8e9f-0000000000aa', storageUrl: document.storageUrl.replace(document.id, '5f0e8a3c-1d2b-4c3d-8e9f-0000000000aa') }, bytes);
    expectProblem(missing, 404);
  });

  it('answers 413 one byte over the limit and stores nothing, and accepts exactly the limit', async () => {
    const over = await createDocument('over.bin');
    expectProblem(await upload(over, Buffer.alloc(MAX_UPLOAD_BYTES + 1, 7), { type: 'BIN' }), 413);
    expect((await t.api('GET', `/v1/patients/${PATIENT}/documents/${over.id}`)).body.hasContent).toBe(false);
    await expectNoTempFiles();
    const exact = await createDocument('exact.bin');
    const bytes = Buffer.alloc(MAX_UPLOAD_BYTES, 9);
    expect((await upload(exact, bytes, { type: 'BIN' })).status).toBe(201);
    await checkUpload(exact.id, bytes);
    const huge = await fetch(`${over.storageUrl}/file`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await t.token()}`, 'content-type': 'multipart/form-data; boundary=b', 'content-length': String(MAX_UPLOAD_BYTES * 10) },
      body: Buffer.alloc(MAX_UPLOAD_BYTES * 10),
    });
    expectProblem({ status: huge.status, body: await huge.json(), headers: huge.headers }, 413);
  });

  it('lets one of two simultaneous uploads win; the other gets 409', async () => {
    const document = await createDocument('race.stl');
    const first = Buffer.alloc(MAX_UPLOAD_BYTES - 10, 1);
    const second = Buffer.alloc(MAX_UPLOAD_BYTES - 10, 2);
    const results = await Promise.all([upload(document, first), upload(document, second)]);
    expect(results.map((result) => result.status).sort()).toEqual([201, 409]);
    expectProblem(results.find((result) => result.status === 409)!, 409);
    const winner = results.find((result) => result.status === 201)!;
    await checkUpload(document.id, winner.body.sha256 === sha256(first) ? first : second);
    expect((await t.api('GET', `/v1/patients/${PATIENT}/documents/${document.id}/versions`)).body.versions).toHaveLength(1);
  });
});

describe('signed downloads', () => {
  let document: any;
  const bytes = Buffer.from(Array.from({ length: 1000 }, (_, index) => index % 251));

  beforeAll(async () => {
    const created = await createDocument('Zahnbogen Ünterkiefer "final".stl', '/downloads');
    document = (await upload(created, bytes)).body;
  });

  it('serves the file without a bearer token, with its name, type and ETag', async () => {
    const response = await fetch(document.storageDownloadUri);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('model/stl');
    expect(response.headers.get('content-length')).toBe('1000');
    expect(response.headers.get('etag')).toBe(`"${sha256(bytes)}"`);
    expect(response.headers.get('accept-ranges')).toBe('bytes');
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="Zahnbogen _nterkiefer _final_.stl"; filename*=UTF-8''Zahnbogen%20%C3%9Cnterkiefer%20%22final%22.stl`,
    );
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    const notModified = await fetch(document.storageDownloadUri, { headers: { 'if-none-match': `"${sha256(bytes)}"` } });
    expect(notModified.status).toBe(304);
  });

  it('lets any origin read a signed link (the app’s viewer), always as a download', async () => {
    const response = await fetch(document.storageDownloadUri, { headers: { origin: 'http://127.0.0.1:9999' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('content-disposition')).toMatch(/^attachment; filename=/);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    // A parameter added to the link is not part of its signature: refused (test/stored-script.test.ts).
    const added = await fetch(`${document.storageDownloadUri}&disposition=inline`);
    expectProblem({ status: added.status, body: await added.json(), headers: added.headers }, 403);
  });

  it('honours Range with 206 and answers 416 past the end', async () => {
    const partial = await fetch(document.storageDownloadUri, { headers: { range: 'bytes=100-199' } });
    expect(partial.status).toBe(206);
    expect(partial.headers.get('content-range')).toBe('bytes 100-199/1000');
    expect(Buffer.from(await partial.arrayBuffer()).equals(bytes.subarray(100, 200))).toBe(true);
    const suffix = await fetch(document.storageDownloadUri, { headers: { range: 'bytes=-10' } });
    expect(suffix.status).toBe(206);
    expect(Buffer.from(await suffix.arrayBuffer()).equals(bytes.subarray(990))).toBe(true);
    const open = await fetch(document.storageDownloadUri, { headers: { range: 'bytes=995-' } });
    expect(Buffer.from(await open.arrayBuffer()).equals(bytes.subarray(995))).toBe(true);
    const beyond = await fetch(document.storageDownloadUri, { headers: { range: 'bytes=1000-' } });
    const problem = expectProblem({ status: beyond.status, body: await beyond.json(), headers: beyond.headers }, 416);
    expect(problem.messageKey).toBe('RANGE_NOT_SATISFIABLE');
    expect(beyond.headers.get('content-range')).toBe('bytes */1000');
  });

  it('never serves content through a tampered or expired link, nor through storageUrl', async () => {
    const url = new URL(document.storageDownloadUri);
    const tampered = [
      url.toString().replace(/sig=[^&]+/, 'sig=AAAA'),
      url.toString().replace(/expires=(\d+)/, (_, value: string) => `expires=${Number(value) + 3600}`),
      url.toString().replace(/v=\d+/, 'v=2'),
      url.toString().replace('/content?', '/thumbnail?'),
      `${url.origin}${url.pathname}`,
    ];
    for (const link of tampered) {
      const response = await fetch(link);
      expectProblem({ status: response.status, body: await response.json(), headers: response.headers }, 403);
    }
    const key = Buffer.from((await t.server.context.store.meta.get('link-signing-key'))!, 'base64');
    const past = new Links(t.server.context.config.publicUrl, key, () => Date.now() - 16 * 60_000);
    const expired = await fetch(past.signed(document.id, document.version, 'content', { clientId: CLIENT.id, organizationId: ORG }));
    const problem = expectProblem({ status: expired.status, body: await expired.json(), headers: expired.headers }, 403);
    expect(problem.detail).toMatch(/expired/);
    const storage = await fetch(document.storageUrl);
    expect(storage.status).toBe(404);
  });

  it('stops serving a link once the patient withdraws consent or its client is disabled, before the link expires', async () => {
    const admin = (method: string, route: string, body?: unknown) => t.api(method, route, { token: ADMIN_TOKEN, organization: null, ...(body === undefined ? {} : { body }) });
    const patient = (await admin('POST', '/admin/v1/patients', { name: 'Link Holder Patient', organizations: [ORG], consents: [ORG] })).body.id as string;
    const created = await t.api('POST', `/v1/patients/${patient}/documents`, { body: { fileName: 'holder.stl', path: '/links' } });
    const stored = (await upload(created.body, bytes)).body;
    const expectRefused = async (link: string, reason: RegExp) => {
      const response = await fetch(link);
      expect(expectProblem({ status: response.status, body: await response.json(), headers: response.headers }, 403).detail).toMatch(reason);
    };
    expect((await fetch(stored.storageDownloadUri)).status).toBe(200);
    expect((await admin('DELETE', `/admin/v1/patients/${patient}/consents/${ORG}`)).status).toBe(200);
    await expectRefused(stored.storageDownloadUri, /withdrawn consent/);
    await expectRefused(stored.thumbnailDownloadUri, /withdrawn consent/);
    expect((await admin('PUT', `/admin/v1/patients/${patient}/consents/${ORG}`)).status).toBe(200);
    expect((await fetch(stored.storageDownloadUri)).status).toBe(200);

    const client = (await admin('POST', '/admin/v1/clients', { name: 'Stolen PC', scopes: ['Patient.File.Read'], organizations: [ORG] })).body;
    const token = await t.token({ id: client.clientId, secret: client.clientSecret });
    const link = (await t.api('GET', `/v1/patients/${patient}/documents/${stored.id}`, { token })).body.storageDownloadUri as string;
    expect((await fetch(link)).status).toBe(200);
    expect((await admin('PATCH', `/admin/v1/clients/${client.clientId}`, { disabled: true })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 5_200)); // the membership cache's 5 s, as for its tokens
    await expectRefused(link, /disabled/);
    expect((await fetch(stored.storageDownloadUri)).status).toBe(200);
  });
});

describe('versions and deletion', () => {
  it('needs If-Match with the current sha256 for a second upload and keeps the history', async () => {
    const document = await createDocument('versions.pdf', '/versions');
    const first = makePdf('version one');
    const second = makePdf('version two');
    // If-Match: * needs content to replace (RFC 9110): none yet.
    expect(expectProblem(await upload(document, first, { type: 'PDF', fileName: 'versions.pdf', ifMatch: '*' }), 409).detail).toContain('has none yet');
    expect((await upload(document, first, { type: 'PDF', fileName: 'versions.pdf' })).status).toBe(201);
    expectProblem(await upload(document, second, { type: 'PDF' }), 409);
    expectProblem(await upload(document, second, { type: 'PDF', ifMatch: `"${'0'.repeat(64)}"` }), 409);
    const replaced = await upload(document, second, { type: 'PDF', ifMatch: `"${sha256(first)}"` });
    expect(replaced.status).toBe(201);
    expect(replaced.body).toMatchObject({ version: 2, sha256: sha256(second), fileSize: second.length });
    await checkUpload(document.id, second);
    const history = await t.api('GET', `/v1/patients/${PATIENT}/documents/${document.id}/versions`);
    expect(history.status).toBe(200);
    expect(history.body.versions.map((version: any) => [version.version, version.sha256, version.current])).toEqual([
      [2, sha256(second), true],
      [1, sha256(first), false],
    ]);
    const old = await fetch(history.body.versions[1].storageDownloadUri);
    expect(sha256(Buffer.from(await old.arrayBuffer()))).toBe(sha256(first));
  });

  it('deletes: gone from search, document.deleted recorded, history kept, the name free again', async () => {
    const document = await createDocument('deleted.stl', '/deleting');
    const bytes = Buffer.from('solid d\nendsolid d\n');
    expect((await upload(document, bytes)).status).toBe(201);
    const removed = await t.api('DELETE', `/v1/patients/${PATIENT}/documents/${document.id}`);
    expect(removed.status).toBe(204);
    expectProblem(await t.api('DELETE', `/v1/patients/${PATIENT}/documents/${document.id}`), 404);
    const search = await t.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { id: [document.id], offset: 0, limit: 1 } });
    expect(search.body.total).toBe(0);
    expectProblem(await t.api('GET', `/v1/patients/${PATIENT}/documents/${document.id}`), 404);
    expectProblem(await upload(document, bytes), 404);
    const events = await t.server.context.store.outbox.after(0, 10_000);
    expect(events.some((event) => event.eventType === 'document.deleted' && (event.data.document as any).id === document.id)).toBe(true);
    expect(await t.server.context.store.content.versions(document.id)).toHaveLength(1);
    const again = await createDocument('deleted.stl', '/deleting');
    expect(again.id).not.toBe(document.id);
    expectProblem(await t.api('DELETE', `/v1/patients/${PATIENT}/documents/${document.id}`, { token: await t.token({ id: 'read-only', secret: 'read-only-secret-0123456789' }) }), 403);
  });
});

describe('thumbnails', () => {
  it('has no thumbnail for types without a preview', async () => {
    const document = await createDocument('notes.bin', '/thumbs');
    expect((await upload(document, Buffer.from('plain bytes'), { type: 'BIN' })).status).toBe(201);
    expect((await waitForThumbnail(document.id)).thumbnailDownloadUri).toBeNull();
  });

  it('fails the thumbnail alone for hostile files: the upload is 201 and the server stays up', async () => {
    const hostile: Array<[string, Buffer, string]> = [
      ['truncated.stl', truncatedStl(), 'STL'],
      ['lying.stl', lyingCountStl(), 'STL'],
      ['bomb.pdf', pdfBomb(), 'PDF'],
      ['garbage.pdf', Buffer.from('%PDF-1.7 nothing else'), 'PDF'],
    ];
    for (const [name, bytes, type] of hostile) {
      const document = await createDocument(name, '/hostile');
      const response = await upload(document, bytes, { type, fileName: name });
      expect(response.status).toBe(201);
      await checkUpload(document.id, bytes);
      const current = await waitForThumbnail(document.id);
      expect(current.thumbnailDownloadUri).toBeNull();
      // The upload's answer carried a link (the type has previews); once the render failed it is a 404.
      expect((await fetch(response.body.thumbnailDownloadUri)).status).toBe(404);
      const versions = await t.api('GET', `/v1/patients/${PATIENT}/documents/${document.id}/versions`);
      expect(versions.body.versions[0].thumbnailStatus).toBe('failed');
    }
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  });
});


describe('resumable upload (tus 1.0)', () => {
  const tusHeaders = async (): Promise<Record<string, string>> => ({ authorization: `Bearer ${await t.token()}`, 'tus-resumable': '1.0.0' });

  /** Runs a tus-js-client upload until it succeeds, or until `stopAt` bytes were accepted. */
  function runTus(bytes: Buffer, options: { endpoint?: string; uploadUrl?: string; token: string; stopAt?: number; chunkSize: number }): Promise<{ url: string | null; firstOffset: number | undefined }> {
    return new Promise((resolve, reject) => {
      let firstOffset: number | undefined;
      const upload: tus.Upload = new tus.Upload(bytes, {
        ...(options.endpoint ? { endpoint: options.endpoint } : {}),
        ...(options.uploadUrl ? { uploadUrl: options.uploadUrl } : {}),
        headers: { authorization: `Bearer ${options.token}` },
        metadata: { filename: 'resumed.stl', filetype: 'STL' },
        chunkSize: options.chunkSize,
        retryDelays: [],
        onProgress: (sent) => {
          firstOffset ??= sent;
        },
        onChunkComplete: (_chunk, accepted) => {
          if (options.stopAt !== undefined && accepted >= options.stopAt) {
            void upload.abort().then(() => resolve({ url: upload.url, firstOffset }));
          }
        },
        onSuccess: () => resolve({ url: upload.url, firstOffset }),
        onError: reject,
      });
      upload.start();
    });
  }

  it('announces its capabilities', async () => {
    const document = await createDocument('options.stl', '/tus');
    const response = await fetch(`${document.storageUrl}/uploads`, { method: 'OPTIONS' });
    expect(response.status).toBe(204);
    expect(response.headers.get('tus-version')).toBe('1.0.0');
    expect(response.headers.get('tus-extension')).toBe('creation,expiration,termination,checksum');
    expect(response.headers.get('tus-checksum-algorithm')).toBe('sha256');
    expect(response.headers.get('tus-max-size')).toBe(String(MAX_UPLOAD_BYTES));
  });

  it('resumes a client interrupted at 60% from its offset and ends in the same commit and event', async () => {
    const document = await createDocument('resumed.stl', '/tus');
    const bytes = makeArchStl({ triangles: 40_000 });
    const chunkSize = Math.ceil(bytes.length / 10);
    const token = await t.token();
    const first = await runTus(bytes, { endpoint: `${document.storageUrl}/uploads`, token, stopAt: Math.floor(bytes.length * 0.6), chunkSize });
    expect(first.url).toMatch(new RegExp(`${document.storageUrl}/uploads/[0-9a-f-]{36}$`));
    const head = await fetch(first.url!, { method: 'HEAD', headers: await tusHeaders() });
    expect(head.status).toBe(200);
    const offset = Number(head.headers.get('upload-offset'));
    expect(offset).toBeGreaterThanOrEqual(bytes.length * 0.6);
    expect(offset).toBeLessThan(bytes.length);
    expect(head.headers.get('upload-length')).toBe(String(bytes.length));
    expect(Date.parse(head.headers.get('upload-expires')!)).toBeGreaterThan(Date.now());
    expect((await t.api('GET', `/v1/patients/${PATIENT}/documents/${document.id}`)).body.hasContent).toBe(false);

    const resumed = await runTus(bytes, { uploadUrl: first.url!, token, chunkSize });
    expect(resumed.firstOffset).toBeGreaterThanOrEqual(offset);
    await checkUpload(document.id, bytes);
    const events = await t.server.context.store.outbox.after(0, 10_000);
    const uploaded = events.filter((event) => event.eventType === 'document.uploaded' && (event.data.document as any).id === document.id);
    expect(uploaded).toHaveLength(1);
    expect(uploaded[0]!.data).toMatchObject({ sha256: sha256(bytes), fileSize: bytes.length });
    expect((await fetch(first.url!, { method: 'HEAD', headers: await tusHeaders() })).status).toBe(404);
  });

  it('keeps the bytes of a PATCH whose connection dropped, and checks Upload-Checksum per chunk', async () => {
    const document = await createDocument('raw.bin', '/tus');
    const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, index) => (index * 7) % 256));
    const created = await fetch(`${document.storageUrl}/uploads`, {
      method: 'POST',
      headers: { ...(await tusHeaders()), 'upload-length': String(bytes.length), 'upload-metadata': `filename ${Buffer.from('raw.bin').toString('base64')}` },
    });
    expect(created.status).toBe(201);
    const location = created.headers.get('location')!;
    const patch = (offset: number, body: Buffer, extra: Record<string, string> = {}) =>
      t.token().then((token) =>
        fetch(location, {
          method: 'PATCH',
          headers: { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0', 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream', ...extra },
          body: new Uint8Array(body),
        }),
      );
    // A dropped connection after 60%: send the head of the body, then cut the socket.
    const token = await t.token();
    await new Promise<void>((resolve) => {
      const request = http.request(location, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream', 'content-length': String(bytes.length) },
      });
      request.on('error', () => undefined);
      request.write(bytes.subarray(0, 180_000));
      setTimeout(() => {
        request.destroy();
        resolve();
      }, 300);
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const head = await fetch(location, { method: 'HEAD', headers: await tusHeaders() });
    const offset = Number(head.headers.get('upload-offset'));
    expect(offset).toBe(180_000);

    const wrongOffset = await patch(0, bytes.subarray(0, 10));
    expectProblem({ status: wrongOffset.status, body: await wrongOffset.json(), headers: wrongOffset.headers }, 409);
    const badSum = await patch(offset, bytes.subarray(offset, offset + 50_000), { 'upload-checksum': `sha256 ${createHash('sha256').update('other').digest('base64')}` });
    expect(badSum.status).toBe(460);
    expect((await badSum.json()).messageKey).toBe('CHECKSUM_MISMATCH');
    expect((await fetch(location, { method: 'HEAD', headers: await tusHeaders() })).headers.get('upload-offset')).toBe(String(offset));
    const rest = bytes.subarray(offset);
    const good = await patch(offset, rest, { 'upload-checksum': `sha256 ${createHash('sha256').update(rest).digest('base64')}` });
    expect(good.status).toBe(204);
    expect(good.headers.get('upload-offset')).toBe(String(bytes.length));
    expect(good.headers.get('tus-resumable')).toBe('1.0.0');
    await checkUpload(document.id, bytes);
  });

  it('refuses what the protocol forbids, terminates, and expires abandoned uploads', async () => {
    const document = await createDocument('terminated.bin', '/tus');
    const headers = await tusHeaders();
    const noVersion = await fetch(`${document.storageUrl}/uploads`, { method: 'POST', headers: { authorization: headers.authorization!, 'upload-length': '10' } });
    expect(noVersion.status).toBe(412);
    expect(noVersion.headers.get('tus-version')).toBe('1.0.0');
    const tooBig = await fetch(`${document.storageUrl}/uploads`, { method: 'POST', headers: { ...headers, 'upload-length': String(MAX_UPLOAD_BYTES + 1) } });
    expectProblem({ status: tooBig.status, body: await tooBig.json(), headers: tooBig.headers }, 413);
    const noLength = await fetch(`${document.storageUrl}/uploads`, { method: 'POST', headers });
    expectProblem({ status: noLength.status, body: await noLength.json(), headers: noLength.headers }, 400);
    const other = await fetch(`${document.storageUrl}/uploads`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${await t.token(OTHER_ORG_CLIENT)}`, 'upload-length': '10' } });
    expectProblem({ status: other.status, body: await other.json(), headers: other.headers }, 403);

    const created = await fetch(`${document.storageUrl}/uploads`, { method: 'POST', headers: { ...headers, 'upload-length': '10' } });
    const location = created.headers.get('location')!;
    const wrongType = await fetch(location, { method: 'PATCH', headers: { ...headers, 'upload-offset': '0', 'content-type': 'text/plain' }, body: 'abc' });
    expectProblem({ status: wrongType.status, body: await wrongType.json(), headers: wrongType.headers }, 415);
    const overLength = await fetch(location, { method: 'PATCH', headers: { ...headers, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: 'x'.repeat(11) });
    expectProblem({ status: overLength.status, body: await overLength.json(), headers: overLength.headers }, 413);
    expect((await fetch(location, { method: 'DELETE', headers })).status).toBe(204);
    expect((await fetch(location, { method: 'HEAD', headers })).status).toBe(404);

    const abandoned = await fetch(`${document.storageUrl}/uploads`, { method: 'POST', headers: { ...headers, 'upload-length': '10' } });
    const abandonedAt = abandoned.headers.get('location')!;
    expect((await storedIn(t, 'uploads')).length).toBeGreaterThan(0);
    const removed = await t.server.context.content.resumable.removeExpired(new Date(Date.now() + 25 * 3_600_000));
    expect(removed).toBeGreaterThanOrEqual(1);
    expect((await fetch(abandonedAt, { method: 'HEAD', headers })).status).toBe(404);
    expect(await storedIn(t, 'uploads')).toEqual([]);
  });

  it('needs If-Match at creation to replace content, like the one-shot upload', async () => {
    const document = await createDocument('tus-version.bin', '/tus');
    const first = Buffer.from('first content');
    expect((await upload(document, first, { type: 'BIN' })).status).toBe(201);
    const headers = { ...(await tusHeaders()), 'upload-length': '6' };
    const refused = await fetch(`${document.storageUrl}/uploads`, { method: 'POST', headers });
    expectProblem({ status: refused.status, body: await refused.json(), headers: refused.headers }, 409);
    const created = await fetch(`${document.storageUrl}/uploads`, { method: 'POST', headers: { ...headers, 'if-match': `"${sha256(first)}"` } });
    expect(created.status).toBe(201);
    const done = await fetch(created.headers.get('location')!, { method: 'PATCH', headers: { ...(await tusHeaders()), 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: 'second' });
    expect(done.status).toBe(204);
    const checked = await checkUpload(document.id, Buffer.from('second'));
    expect(checked.version).toBe(2);
  });
});
