/**
 * Who may write what (docs/security.md): every write route × the three organizations that can
 * meet on one patient — the document's own, another with access and consent, another with access
 * but no consent. Each refused case is checked for its status and for leaving nothing changed, as
 * the document's own organization sees it.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, tempDir, type TestServer } from './helpers/server.js';

const OWN = '7a000000-0000-4000-8000-00000000000a';
const WITH_CONSENT = '7a000000-0000-4000-8000-00000000000b';
const WITHOUT_CONSENT = '7a000000-0000-4000-8000-00000000000c';
const SHARED_PATIENT = '7a000000-0000-4000-8000-0000000000f1';
const WRITE_SCOPES = ['Patient.File.Read', 'Patient.File.Write', 'Patient.Read'];

type Actor = 'own organization' | 'other organization with access and consent' | 'other organization without consent';
const ACTORS: Record<Actor, { organizationId: string; client: { id: string; secret: string } }> = {
  'own organization': { organizationId: OWN, client: { id: 'owner-pc', secret: 'owner-pc-secret-0123456789' } },
  'other organization with access and consent': { organizationId: WITH_CONSENT, client: { id: 'partner-pc', secret: 'partner-pc-secret-0123456789' } },
  'other organization without consent': { organizationId: WITHOUT_CONSENT, client: { id: 'stranger-pc', secret: 'stranger-pc-secret-0123456789' } },
};

let server: TestServer;
let seedDir: string;

beforeAll(async () => {
  seedDir = tempDir('write-authorization-seed');
  const seed = {
    organizations: [
      { id: OWN, name: 'Owner Clinic' },
      { id: WITH_CONSENT, name: 'Partner Lab' },
      { id: WITHOUT_CONSENT, name: 'Lab Without Consent' },
    ],
    patients: [{ id: SHARED_PATIENT, name: 'Shared Patient', organizations: [OWN, WITH_CONSENT, WITHOUT_CONSENT], consents: [OWN, WITH_CONSENT] }],
    clients: Object.values(ACTORS).map(({ organizationId, client }) => ({ clientId: client.id, clientSecret: client.secret, name: client.id, scopes: WRITE_SCOPES, organizations: [organizationId] })),
  };
  fs.writeFileSync(path.join(seedDir, 'seed.json'), JSON.stringify(seed));
  server = await startTestServer({ PATIENT_DOCS_SEED: path.join(seedDir, 'seed.json') });
});
afterAll(async () => {
  await server.close();
  fs.rmSync(seedDir, { recursive: true, force: true });
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const bearer = async (actor: Actor) => `Bearer ${await server.token(ACTORS[actor].client)}`;
const storageUrl = (documentId: string) => `${server.url}/storage/v1/documents/${documentId}`;
let counter = 0;

async function createAs(actor: Actor): Promise<{ status: number; id: string | undefined }> {
  const answer = await server.api('POST', `/v1/patients/${SHARED_PATIENT}/documents`, {
    token: await server.token(ACTORS[actor].client),
    organization: ACTORS[actor].organizationId,
    body: { fileName: `scan ${++counter}.stl`, path: '/matrix' },
  });
  return { status: answer.status, id: answer.body?.id };
}

async function uploadAs(actor: Actor, documentId: string, bytes: Buffer, ifMatch?: string): Promise<number> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), 'scan.stl');
  const headers: Record<string, string> = { authorization: await bearer(actor) };
  if (ifMatch) headers['if-match'] = `"${ifMatch}"`;
  const response = await fetch(`${storageUrl(documentId)}/file`, { method: 'POST', headers, body: form });
  await response.arrayBuffer();
  return response.status;
}

async function tus(actor: Actor, method: string, url: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Response> {
  const response = await fetch(url, { method, headers: { authorization: await bearer(actor), 'tus-resumable': '1.0.0', ...headers }, ...(body ? { body: new Uint8Array(body) } : {}) });
  await response.arrayBuffer();
  return response;
}

async function startTus(actor: Actor, documentId: string, length: number): Promise<Response> {
  return tus(actor, 'POST', `${storageUrl(documentId)}/uploads`, { 'upload-length': String(length) });
}

/** A document of the owner, with content when asked. */
async function ownersDocument(content?: Buffer): Promise<string> {
  const { id } = await createAs('own organization');
  if (content) expect(await uploadAs('own organization', id!, content)).toBe(201);
  return id!;
}

/** The document as its own organization reads it (404 once deleted). */
async function ownersView(documentId: string): Promise<unknown> {
  const answer = await server.api('GET', `/v1/patients/${SHARED_PATIENT}/documents/${documentId}`, { token: await server.token(ACTORS['own organization'].client), organization: OWN });
  if (answer.status !== 200) return { status: answer.status };
  const { id, fileName, path: folder, hasContent, version, sha256: hash, fileSize, lastModifiedAt } = answer.body;
  return { status: answer.status, id, fileName, folder, hasContent, version, hash, fileSize, lastModifiedAt };
}

/** The owner's view of every document of the patient (names, versions, content). */
async function patientsDocuments(): Promise<unknown> {
  const answer = await server.api('POST', `/v1/patients/${SHARED_PATIENT}/documents/search`, { token: await server.token(ACTORS['own organization'].client), organization: OWN, body: { limit: 1000 } });
  expect(answer.status).toBe(200);
  return answer.body.documents.map((document: { id: string; version: number; sha256: string | null }) => `${document.id}:${document.version}:${document.sha256}`).sort();
}

/** Where a resumable upload stands, as its document's organization sees it. */
async function uploadOffset(uploadUrl: string): Promise<string | null> {
  const head = await tus('own organization', 'HEAD', uploadUrl);
  return head.status === 200 ? head.headers.get('upload-offset') : `gone (${head.status})`;
}

interface WriteRoute {
  /** Sets up what the write acts on (as the owner) and returns a way to attempt it and to observe its target. */
  prepare(): Promise<{ attempt(actor: Actor): Promise<number>; observe(): Promise<unknown> }>;
  expected: Record<Actor, number>;
  /** False where the owner's own write leaves what observe() reads as it was (a tus upload only begins). */
  ownWriteObservable?: false;
}

const bytes = Buffer.from('solid matrix\nendsolid matrix\n');
const newer = Buffer.from('solid matrix v2\nendsolid matrix v2\n');

const ROUTES: Record<string, WriteRoute> = {
  'create (POST /v1/patients/{p}/documents)': {
    async prepare() {
      return { attempt: async (actor) => (await createAs(actor)).status, observe: patientsDocuments };
    },
    expected: { 'own organization': 201, 'other organization with access and consent': 201, 'other organization without consent': 403 },
  },
  'one-shot upload (POST {storageUrl}/file)': {
    async prepare() {
      const id = await ownersDocument();
      return { attempt: (actor) => uploadAs(actor, id, bytes), observe: () => ownersView(id) };
    },
    expected: { 'own organization': 201, 'other organization with access and consent': 403, 'other organization without consent': 403 },
  },
  'new version (POST {storageUrl}/file with If-Match)': {
    async prepare() {
      const id = await ownersDocument(bytes);
      return { attempt: (actor) => uploadAs(actor, id, newer, sha256(bytes)), observe: () => ownersView(id) };
    },
    expected: { 'own organization': 201, 'other organization with access and consent': 403, 'other organization without consent': 403 },
  },
  'tus create (POST {storageUrl}/uploads)': {
    async prepare() {
      const id = await ownersDocument();
      return {
        attempt: async (actor) => {
          const response = await startTus(actor, id, bytes.length);
          if (response.status !== 201) expect(response.headers.get('location')).toBeNull();
          return response.status;
        },
        observe: () => ownersView(id),
      };
    },
    expected: { 'own organization': 201, 'other organization with access and consent': 403, 'other organization without consent': 403 },
    ownWriteObservable: false,
  },
  'tus PATCH (append to an upload)': {
    async prepare() {
      const id = await ownersDocument();
      const location = (await startTus('own organization', id, bytes.length)).headers.get('location')!;
      return {
        attempt: async (actor) => (await tus(actor, 'PATCH', location, { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, bytes)).status,
        observe: async () => ({ document: await ownersView(id), offset: await uploadOffset(location) }),
      };
    },
    expected: { 'own organization': 204, 'other organization with access and consent': 403, 'other organization without consent': 403 },
  },
  'tus DELETE (abandon an upload)': {
    async prepare() {
      const id = await ownersDocument();
      const location = (await startTus('own organization', id, bytes.length * 2)).headers.get('location')!;
      expect((await tus('own organization', 'PATCH', location, { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, bytes)).status).toBe(204);
      return {
        attempt: async (actor) => (await tus(actor, 'DELETE', location)).status,
        observe: async () => ({ document: await ownersView(id), offset: await uploadOffset(location) }),
      };
    },
    expected: { 'own organization': 204, 'other organization with access and consent': 403, 'other organization without consent': 403 },
  },
  'delete (DELETE /v1/patients/{p}/documents/{id})': {
    async prepare() {
      const id = await ownersDocument(bytes);
      return {
        attempt: async (actor) =>
          (await server.api('DELETE', `/v1/patients/${SHARED_PATIENT}/documents/${id}`, { token: await server.token(ACTORS[actor].client), organization: ACTORS[actor].organizationId })).status,
        observe: async () => ({ document: await ownersView(id), all: await patientsDocuments() }),
      };
    },
    expected: { 'own organization': 204, 'other organization with access and consent': 403, 'other organization without consent': 403 },
  },
};

const CASES = Object.entries(ROUTES).flatMap(([route, spec]) => (Object.keys(ACTORS) as Actor[]).map((actor) => [route, actor, spec.expected[actor]] as const));

describe('who may write what', () => {
  it.each(CASES)('%s by the %s answers %i', async (route, actor, status) => {
    const target = await ROUTES[route]!.prepare();
    const before = await target.observe();
    expect(await target.attempt(actor)).toBe(status);
    const after = await target.observe();
    if (status >= 400) expect(after).toEqual(before);
    else if (actor === 'own organization' && ROUTES[route]!.ownWriteObservable !== false) expect(after).not.toEqual(before);
  });
});
