/**
 * Scan times over real HTTP (docs/api.md "Scan times"): the document's scannedAt on create, on a
 * one-shot or resumable upload and on each version; the search's scannedFrom/scannedTo range; and
 * the 400 problems a wrong time or range gets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, PATIENT, startTestServer, type TestServer } from './helpers/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t.close());

const documentsRoute = `/v1/patients/${PATIENT}/documents`;
const searchRoute = `${documentsRoute}/search`;

async function create(fileName: string, extra: Record<string, unknown> = {}): Promise<{ id: string; storageUrl: string }> {
  const response = await t.api('POST', documentsRoute, { body: { fileName, path: '/scan-times', ...extra } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function upload(document: { storageUrl: string }, fields: Array<[string, string]>, ifMatch?: string) {
  const form = new FormData();
  for (const [name, value] of fields) form.append(name, value);
  form.append('file', new Blob([new Uint8Array(Buffer.from(`solid ${fields.length} ${ifMatch ?? ''}`))]), 'scan.stl');
  const headers: Record<string, string> = { authorization: `Bearer ${await t.token()}` };
  if (ifMatch) headers['if-match'] = `"${ifMatch}"`;
  const response = await fetch(`${document.storageUrl}/file`, { method: 'POST', headers, body: form });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

const read = async (id: string) => (await t.api('GET', `${documentsRoute}/${id}`)).body;
const found = async (body: Record<string, unknown>) => {
  const response = await t.api('POST', searchRoute, { body: { path: '/scan-times', sortBy: 'scannedAt', sortDirection: 'ASC', ...body } });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return (response.body.documents as Array<{ fileName: string }>).map((document) => document.fileName);
};

describe('scan times', () => {
  it('are taken on create in any zone and given back as UTC in the document and its search; a document no client dated has null', async () => {
    const dated = await create('80021_20180115_0934_Pearson_0.stl', { scannedAt: '2026-11-20T17:45:00+01:00' });
    expect((await read(dated.id)).scannedAt).toBe('2026-11-20T16:45:00.000Z');
    const undated = await create('referral.pdf');
    expect((await read(undated.id)).scannedAt).toBeNull();
    const search = await t.api('POST', searchRoute, { body: { id: [dated.id, undated.id] } });
    expect(Object.fromEntries((search.body.documents as Array<{ id: string; scannedAt: string | null }>).map((document) => [document.id, document.scannedAt]))).toEqual({
      [dated.id]: '2026-11-20T16:45:00.000Z',
      [undated.id]: null,
    });
  });

  it('are taken from an upload (ScannedAt), kept by an upload that does not say, and kept on each version', async () => {
    const document = await create('76391186_shell_occlusion_u.stl', { scannedAt: '2026-11-19T08:00:00Z' });
    const first = await upload(document, [['FileName', 'u.stl'], ['ScannedAt', '2026-11-20T09:15:30.250Z']]);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.scannedAt).toBe('2026-11-20T09:15:30.250Z');
    const second = await upload(document, [['FileName', 'u.stl']], first.body.sha256);
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    expect((await read(document.id)).scannedAt).toBe('2026-11-20T09:15:30.250Z');
    const versions = await t.api('GET', `${documentsRoute}/${document.id}/versions`);
    expect((versions.body.versions as Array<{ version: number; scannedAt: string | null }>).map((version) => [version.version, version.scannedAt])).toEqual([
      [2, '2026-11-20T09:15:30.250Z'],
      [1, '2026-11-20T09:15:30.250Z'],
    ]);
  });

  it('find documents by a scan date range, counting a document without one by its upload, and sort by it', async () => {
    const yesterday = await create('yesterday.stl', { scannedAt: '2026-11-20T23:30:00Z' });
    await upload(yesterday, []);
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const day = (date: string) => ({ scannedFrom: `${date}T00:00:00Z`, scannedTo: `${date === today ? tomorrow : '2026-11-21'}T00:00:00Z` });
    expect(await found(day('2026-11-20'))).toEqual(['76391186_shell_occlusion_u.stl', '80021_20180115_0934_Pearson_0.stl', 'yesterday.stl']);
    // The undated placeholder counts by its creation today; the dated ones do not.
    expect(await found(day(today))).toEqual(['referral.pdf']);
    expect(await found({ scannedFrom: '2026-11-20T12:00:00Z', hasContent: true })).toEqual(['yesterday.stl']);
    expect(await found({ scannedTo: '2026-11-20T12:00:00Z' })).toEqual(['76391186_shell_occlusion_u.stl']);
  });

  it.each([
    ['a date without a time', '2026-11-20'],
    ['a time without a zone', '2026-11-20T16:45:00'],
    ['a day that does not exist', '2026-02-30T10:00:00Z'],
    ['words', 'yesterday'],
  ])('refuses %s as scannedAt on create, ScannedAt on upload and a search bound, with a 400 naming the field', async (_label, value) => {
    const created = expectProblem(await t.api('POST', documentsRoute, { body: { fileName: `bad-${value}.stl`, scannedAt: value } }), 400);
    expect(created.detail).toMatch(/scannedAt/);
    expect(created.messageKey).toBe('VALIDATION_ERROR');
    const document = await create(`form-${value}.stl`);
    const uploaded = await upload(document, [['ScannedAt', value]]);
    expect(expectProblem(uploaded, 400).detail).toMatch(/ScannedAt must be an ISO 8601 date and time with a time zone/);
    expect((await read(document.id)).hasContent).toBe(false);
    expect(expectProblem(await t.api('POST', searchRoute, { body: { scannedFrom: value } }), 400).detail).toMatch(/scannedFrom/);
    expect(expectProblem(await t.api('POST', searchRoute, { body: { scannedTo: value } }), 400).detail).toMatch(/scannedTo/);
  });

  it('refuses a range whose start is not before its end, and a resumable upload whose ScannedAt is not a time, before any byte', async () => {
    const range = expectProblem(await t.api('POST', searchRoute, { body: { scannedFrom: '2026-11-21T00:00:00Z', scannedTo: '2026-11-21T01:00:00+01:00' } }), 400);
    expect(range.detail).toMatch(/scannedFrom must be before body\/scannedTo/);
    const document = await create('resumable.stl');
    const metadata = (value: string) => `filename ${Buffer.from('resumable.stl').toString('base64')},ScannedAt ${Buffer.from(value).toString('base64')}`;
    const post = (value: string) =>
      t.api('POST', new URL(`${document.storageUrl}/uploads`).pathname, {
        organization: null,
        headers: { 'tus-resumable': '1.0.0', 'upload-length': '10', 'upload-metadata': metadata(value) },
      });
    expect(expectProblem(await post('2026-11-20 noon'), 400).detail).toMatch(/Upload-Metadata ScannedAt/);
    const accepted = await post('2026-11-20T12:00:00Z');
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    const location = accepted.headers.get('location')!;
    const patched = await fetch(location, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${await t.token()}`, 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: Buffer.from('solid tus\n'),
    });
    expect(patched.status).toBe(204);
    expect((await read(document.id)).scannedAt).toBe('2026-11-20T12:00:00.000Z');
  });
});
