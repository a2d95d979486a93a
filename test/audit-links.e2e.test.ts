/**
 * Signed links carry no bearer token, so they carry the client and organization they were handed
 * to, under their signature (a real server, real socket, real SQLite): the audit log names who
 * downloaded; each client gets its own links, also from the per-minute caches; a link signed
 * before the update still works until it expires, recorded with an unknown client; an expired
 * link is refused and recorded with the client it was handed to.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Links } from '../server/domain/links.js';
import { ADMIN_TOKEN, CLIENT, expectProblem, ORG, PATIENT, READ_ONLY_CLIENT, startTestServer, type TestServer } from './helpers/server.js';

let t: TestServer;
let document: { id: string; storageUrl: string; version: number };
let linkKey: Buffer;
const bytes = Buffer.from('%PDF-1.4 a small report\n%%EOF\n');

beforeAll(async () => {
  t = await startTestServer();
  const created = await t.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: 'report.dcm', path: '/links' } });
  const form = new FormData();
  form.append('Id', created.body.id);
  form.append('Type', 'DCM');
  form.append('file', new Blob([new Uint8Array(bytes)]), 'report.dcm');
  const uploaded = await fetch(`${created.body.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${await t.token()}` }, body: form });
  expect(uploaded.status).toBe(201);
  document = { ...created.body, version: 1 };
  linkKey = Buffer.from((await t.server.context.store.meta.get('link-signing-key'))!, 'base64');
});

afterAll(async () => {
  await t?.close();
});

async function audit(query: Record<string, string>): Promise<any[]> {
  const response = await fetch(`${t.url}/admin/v1/audit?${new URLSearchParams(query)}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { entries: any[] }).entries;
}

describe('signed links and the audit log', () => {
  it('hands each client its own links, from the search cache too, and records the download as the client’s', async () => {
    const search = { body: { path: '/links' } };
    const mine = (await t.api('POST', `/v1/patients/${PATIENT}/documents/search`, search)).body.documents[0].storageDownloadUri as string;
    const readOnlyToken = await t.token(READ_ONLY_CLIENT);
    // The same query from another workstation, twice (the second from the page cache).
    for (let round = 0; round < 2; round += 1) {
      const theirs = (await t.api('POST', `/v1/patients/${PATIENT}/documents/search`, { ...search, token: readOnlyToken })).body.documents[0].storageDownloadUri as string;
      expect(new URL(theirs).searchParams.get('client')).toBe(READ_ONLY_CLIENT.id);
      expect(theirs).not.toBe(mine);
    }
    expect((await t.api('POST', `/v1/patients/${PATIENT}/documents/search`, search)).body.documents[0].storageDownloadUri).toBe(mine);
    expect(new URL(mine).searchParams.get('client')).toBe(CLIENT.id);

    // Through a reverse proxy: the address it names for the workstation is kept beside its own.
    const response = await fetch(mine, { headers: { 'x-forwarded-for': '192.168.10.23' } });
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    const [entry] = await audit({ action: 'download', documentId: document.id, limit: '1' });
    expect(entry).toMatchObject({
      outcome: 'allowed',
      status: 200,
      clientId: CLIENT.id,
      organizationId: ORG,
      patientId: PATIENT,
      version: 1,
      remoteAddress: '127.0.0.1',
      detail: { bytes: bytes.length, size: bytes.length, forwardedFor: '192.168.10.23' },
    });
  });

  it('still serves a link signed before the update until it expires, recorded with an unknown client', async () => {
    const links = new Links(t.server.context.config.publicUrl, linkKey);
    const expires = links.currentExpiry();
    // As the release before the audit log signed it: no client, no organization.
    const sig = createHmac('sha256', linkKey).update(`${document.id}\n1\ncontent\n${expires}`).digest('base64url');
    const legacy = `${t.url}/storage/v1/documents/${document.id}/content?v=1&expires=${expires}&sig=${sig}`;
    const response = await fetch(legacy);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const [entry] = await audit({ action: 'download', documentId: document.id, limit: '1' });
    expect(entry).toMatchObject({ outcome: 'allowed', clientId: null, organizationId: null, patientId: PATIENT, version: 1 });
    expect(entry.detail.link).toMatch(/signed before the audit log: client unknown/);

    // A current link with its holder removed is not a legacy link: the signature no longer matches.
    const current = new URL(links.signed(document.id, 1, 'content', { clientId: CLIENT.id, organizationId: ORG }));
    current.searchParams.delete('client');
    current.searchParams.delete('org');
    const stripped = await fetch(current);
    expect(expectProblem({ status: stripped.status, body: await stripped.json(), headers: stripped.headers }, 403).detail).toMatch(/not valid/);
  });

  it('refuses an expired link and records it with the client it was handed to', async () => {
    const past = new Links(t.server.context.config.publicUrl, linkKey, () => Date.now() - 17 * 60_000);
    const expired = await fetch(past.signed(document.id, 1, 'content', { clientId: READ_ONLY_CLIENT.id, organizationId: ORG }));
    expect(expired.status).toBe(403);
    await expired.arrayBuffer();
    const [entry] = await audit({ outcome: 'refused', action: 'download', limit: '1' });
    expect(entry).toMatchObject({ status: 403, clientId: READ_ONLY_CLIENT.id, organizationId: ORG, patientId: PATIENT, documentId: document.id, version: 1 });
    expect(entry.detail.reason).toMatch(/expired/);
  });
});
