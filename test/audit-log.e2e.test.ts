/**
 * The audit log, as a clinic's data-protection officer reads it: a real `npm run server` process
 * (tsx, real socket, real SQLite) walks a scan through create → upload (one-shot and tus) → search →
 * read → download → thumbnail → delete, with refused attempts beside it (no consent, another
 * organization, a missing permission, a tampered link), then the log is read through the admin API
 * and the admin CLI. A SIGTERM right after an access loses nothing: the entry is there after a restart.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeArchStl } from './fixtures/scans.js';
import { ADMIN_CLI, freePort, ROOT, SERVER_MAIN, stderrBesidesBusyWait } from './helpers/processes.js';
import { ADMIN_TOKEN, CLIENT, OTHER_ORG, ORG, PATIENT, PATIENT_WITHOUT_CONSENT, READ_ONLY_CLIENT, SEED_FILE, tempDir } from './helpers/server.js';

const dataDir = tempDir('audit-e2e');

interface Server {
  url: string;
  /** SIGTERM, as a service manager stops it; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** `npm run server` as built (dist/, which `npm test` and `npx tsc -b` build), on the shared data directory. */
async function startServer(): Promise<Server> {
  const child = spawn(process.execPath, [SERVER_MAIN], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(await freePort()), PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: SEED_FILE, PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN, PATIENT_DOCS_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/[^\s;]+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => reject(new Error(`server exited (${code}):\n${output}`)));
  });
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

let server: Server;

beforeAll(async () => {
  server = await startServer();
}, 60_000);

afterAll(async () => {
  await server?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const tokens = new Map<string, string>();
async function token(client = CLIENT): Promise<string> {
  const cached = tokens.get(client.id);
  if (cached) return cached;
  const response = await fetch(`${server.url}/oauth2/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret }),
  });
  const { access_token: value } = (await response.json()) as { access_token: string };
  tokens.set(client.id, value);
  return value;
}

async function api(method: string, route: string, options: { body?: unknown; client?: typeof CLIENT; organization?: string } = {}): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${await token(options.client)}`, 'organization-id': options.organization ?? ORG };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${server.url}${route}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function upload(storageUrl: string, documentId: string, bytes: Buffer, type: string): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('Id', documentId);
  form.append('Type', type);
  form.append('file', new Blob([new Uint8Array(bytes)]), `scan.${type.toLowerCase()}`);
  const response = await fetch(`${storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${await token()}` }, body: form });
  return { status: response.status, body: await response.json() };
}

async function tusUpload(storageUrl: string, bytes: Buffer): Promise<void> {
  const headers = { authorization: `Bearer ${await token()}`, 'tus-resumable': '1.0.0' };
  const created = await fetch(`${storageUrl}/uploads`, { method: 'POST', headers: { ...headers, 'upload-length': String(bytes.length) } });
  expect(created.status).toBe(201);
  const location = created.headers.get('location')!;
  // Two chunks: only the completed upload is an entry, not each chunk.
  const half = Math.floor(bytes.length / 2);
  for (const [offset, chunk] of [
    [0, bytes.subarray(0, half)],
    [half, bytes.subarray(half)],
  ] as const) {
    const patched = await fetch(location, {
      method: 'PATCH',
      headers: { ...headers, 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) },
      body: new Uint8Array(chunk),
    });
    expect(patched.status).toBe(204);
  }
}

async function auditApi(query: Record<string, string>): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}/admin/v1/audit?${new URLSearchParams(query)}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return { status: response.status, body: await response.json() };
}

function adminCli(args: string[], directory = dataDir): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [ADMIN_CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, PATIENT_DOCS_DATA_DIR: directory },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('the audit log of a patient’s files', () => {
  const secrets: string[] = [];
  let scan: { id: string; storageUrl: string };
  let pdf: { id: string; storageUrl: string };
  let resumable: { id: string; storageUrl: string };
  let downloadUri = '';

  it('records a scan’s whole life and every refusal, and the DPO reads it through the admin API', async () => {
    const stl = makeArchStl({ triangles: 2000 });
    scan = (await api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: 'upper-jaw.stl', path: '/scans/2026-11-21' } })).body;
    expect((await upload(scan.storageUrl, scan.id, stl, 'STL')).status).toBe(201);
    pdf = (await api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: 'series.dcm', path: '/cbct' } })).body;
    const big = Buffer.alloc(24 * 1024 * 1024, 32);
    expect((await upload(pdf.storageUrl, pdf.id, big, 'DCM')).status).toBe(201);
    resumable = (await api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: 'cbct.dcm', path: '/scans/2026-11-21' } })).body;
    await tusUpload(resumable.storageUrl, Buffer.alloc(200_000, 9));

    const search = await api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { path: '/scans', fileName: 'jaw' } });
    expect(search.body.total).toBe(1);
    const document = (await api('GET', `/v1/patients/${PATIENT}/documents/${scan.id}`)).body;
    downloadUri = document.storageDownloadUri;
    const link = new URL(downloadUri);
    expect(link.searchParams.get('client')).toBe(CLIENT.id);
    expect(link.searchParams.get('org')).toBe(ORG);
    secrets.push(link.searchParams.get('sig')!, await token(), CLIENT.secret);
    const downloaded = Buffer.from(await (await fetch(downloadUri)).arrayBuffer());
    expect(downloaded.equals(stl)).toBe(true);
    const thumbnail = await fetch(document.thumbnailDownloadUri);
    expect(thumbnail.status).toBe(200);
    await thumbnail.arrayBuffer();

    // A download cut off after its first bytes (the viewer closed).
    const big1 = (await api('GET', `/v1/patients/${PATIENT}/documents/${pdf.id}`)).body;
    const abort = new AbortController();
    const partial = await fetch(big1.storageDownloadUri, { signal: abort.signal });
    const reader = partial.body!.getReader();
    await reader.read();
    abort.abort();
    await reader.cancel().catch(() => undefined);

    // Refused: no consent, another organization, no permission, a link passed off as another client's.
    expect((await api('POST', `/v1/patients/${PATIENT_WITHOUT_CONSENT}/documents/search`, { body: {} })).status).toBe(403);
    expect((await api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: {}, organization: OTHER_ORG })).status).toBe(403);
    expect((await api('DELETE', `/v1/patients/${PATIENT}/documents/${scan.id}`, { client: READ_ONLY_CLIENT })).status).toBe(403);
    const tampered = new URL(downloadUri);
    tampered.searchParams.set('client', 'scanner-pc-2');
    expect((await fetch(tampered)).status).toBe(403);
    expect((await api('DELETE', `/v1/patients/${PATIENT}/documents/${scan.id}`)).status).toBe(204);

    const log = await auditApi({ patientId: PATIENT, limit: '50' });
    expect(log.status).toBe(200);
    const entries = log.body.entries as any[];
    // Newest first: the delete, then the refusals in reverse order.
    expect(entries.map((entry) => `${entry.action} ${entry.outcome} ${entry.status}`).slice(0, 4)).toEqual(['delete allowed 204', 'download refused 403', 'delete refused 403', 'search refused 403']);
    const [deleted, forged, notPermitted, otherOrganization] = entries;
    expect(deleted).toMatchObject({ clientId: CLIENT.id, organizationId: ORG, patientId: PATIENT, documentId: scan.id, version: 1, detail: { path: '/scans/2026-11-21', fileName: 'upper-jaw.stl' } });
    expect(deleted.remoteAddress).toBe('127.0.0.1');
    expect(forged).toMatchObject({ clientId: null, patientId: PATIENT, documentId: scan.id, version: 1, detail: { claimedClient: 'scanner-pc-2', claimedOrganization: ORG } });
    expect(forged.detail.reason).toMatch(/not valid/);
    expect(notPermitted).toMatchObject({ clientId: READ_ONLY_CLIENT.id, documentId: scan.id });
    expect(notPermitted.detail.reason).toMatch(/lacks the scope Patient.File.Write/);
    expect(otherOrganization).toMatchObject({ clientId: CLIENT.id, organizationId: OTHER_ORG, patientId: PATIENT });
    expect(otherOrganization.detail.reason).toMatch(/no access to organization/);

    const byAction = (action: string, documentId?: string) => entries.filter((entry) => entry.action === action && entry.outcome === 'allowed' && (!documentId || entry.documentId === documentId));
    expect(byAction('download', scan.id)).toHaveLength(1);
    expect(byAction('download', scan.id)[0]).toMatchObject({ clientId: CLIENT.id, organizationId: ORG, version: 1, status: 200, detail: { bytes: stl.length, size: stl.length } });
    const cut = byAction('download', pdf.id)[0];
    expect(cut.detail.finished).toBe(false);
    expect(cut.detail.bytes).toBeLessThan(big.length);
    expect(byAction('thumbnail', scan.id)[0]).toMatchObject({ clientId: CLIENT.id, version: 1 });
    expect(byAction('read', scan.id)[0]).toMatchObject({ clientId: CLIENT.id, version: 1 });
    expect(byAction('search')[0].detail).toEqual({ path: '/scans', fileName: 'jaw', results: 1, total: 1 });
    expect(byAction('upload', scan.id)[0]).toMatchObject({ version: 1, status: 201, detail: { bytes: stl.length } });
    // The resumable upload: one entry when it completed (not one per chunk or for its creation).
    expect(entries.filter((entry) => entry.documentId === resumable.id).map((entry) => entry.action)).toEqual(['upload', 'create']);
    expect(byAction('upload', resumable.id)[0]).toMatchObject({ version: 1, status: 204, detail: { bytes: 200_000, resumable: true } });
    expect(byAction('create', scan.id)[0]).toMatchObject({ clientId: CLIENT.id, status: 201, detail: { fileName: 'upper-jaw.stl' } });

    const noConsent = await auditApi({ patientId: PATIENT_WITHOUT_CONSENT, outcome: 'refused' });
    expect(noConsent.body.total).toBe(1);
    expect(noConsent.body.entries[0]).toMatchObject({ action: 'search', status: 403, clientId: CLIENT.id, organizationId: ORG });
    expect(noConsent.body.entries[0].detail.reason).toMatch(/has not given consent/);

    // No tokens, signatures or secrets in the log.
    const everything = JSON.stringify((await auditApi({ limit: '1000' })).body);
    for (const secret of secrets) expect(everything).not.toContain(secret);
  }, 60_000);

  it('filters, pages and refuses bad filters with problem details', async () => {
    const page = await auditApi({ patientId: PATIENT, action: 'download', limit: '1' });
    expect(page.body.total).toBe(3);
    expect(page.body.entries).toHaveLength(1);
    const byDocument = await auditApi({ documentId: scan.id, clientId: READ_ONLY_CLIENT.id });
    expect(byDocument.body.total).toBe(1);
    expect((await auditApi({ patientId: PATIENT, since: '2000-01-01', until: '2000-12-31' })).body.total).toBe(0);
    for (const [query, detail] of [
      [{ patient: PATIENT }, /must not have the key "patient"/],
      [{ since: 'yesterday' }, /since "yesterday" must be a date/],
      [{ since: '2026-02-30' }, /not a day of the calendar/],
      [{ limit: '5000' }, /limit/],
      [{ outcome: 'denied' }, /outcome/],
    ] as const) {
      const refused = await auditApi(query as Record<string, string>);
      expect(refused.status).toBe(400);
      expect(refused.body.detail).toMatch(detail);
    }
    const unauthenticated = await fetch(`${server.url}/admin/v1/audit`);
    expect(unauthenticated.status).toBe(401);
    const openapi = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { security?: unknown }>> };
    expect(openapi.paths['/admin/v1/audit']?.get?.security).toEqual([{ admin: [] }]);
  });

  it('the admin CLI prints one line per entry, or JSON lines', async () => {
    const lines = await adminCli(['audit', '--patient', PATIENT, '--client-id', CLIENT.id, '--action', 'download', '--limit', '5']);
    expect(stderrBesidesBusyWait(lines.stderr)).toBe('');
    expect(lines.code).toBe(0);
    const [header, ...rows] = lines.stdout.trim().split('\n');
    expect(header).toMatch(/^2 of 2 audit entries, newest first:$/);
    expect(rows[0]).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  ALLOWED 200  download  client scanner-pc-1  org ${ORG}  patient ${PATIENT}  document ${pdf.id} v1  from 127\\.0\\.0\\.1  request [0-9a-f-]+  — .*finished: false`));
    const json = await adminCli(['audit', '--patient', PATIENT_WITHOUT_CONSENT, '--json']);
    const entries = json.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ outcome: 'refused', status: 403 });
    const bad = await adminCli(['audit', '--patient', 'jane']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--patient "jane" must be/);
  }, 30_000);

  it('a backup taken while the server runs carries the audit log', async () => {
    const total = (await auditApi({ limit: '1' })).body.total as number;
    const target = path.join(tempDir('audit-backup'), 'monday');
    const backup = await adminCli(['backup', '--to', target]);
    expect(backup.stdout).toMatch(new RegExp(`the audit log's ${total} entries are in the database copy`));
    const verify = await adminCli(['verify'], target);
    expect(verify.stdout).toMatch(new RegExp(`the audit log holds ${total} entries`));
    fs.rmSync(path.dirname(target), { recursive: true, force: true });
  }, 30_000);

  it('keeps an access answered just before a SIGTERM: the entry is there after a restart', async () => {
    const read = await api('GET', `/v1/patients/${PATIENT}/documents/${pdf.id}`, { client: READ_ONLY_CLIENT });
    expect(read.status).toBe(200);
    expect(await server.stop()).toBe(0);
    server = await startServer();
    tokens.clear();
    const log = await auditApi({ clientId: READ_ONLY_CLIENT.id, action: 'read' });
    expect(log.body.total).toBe(1);
    expect(log.body.entries[0]).toMatchObject({ documentId: pdf.id, outcome: 'allowed', version: 1, patientId: PATIENT });
  }, 60_000);

  it('audit prune removes entries before a date and says how many', async () => {
    const future = await adminCli(['audit', 'prune', '--before', '2999-01-01']);
    expect(future.code).toBe(2);
    expect(future.stderr).toMatch(/in the future/);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const all = await adminCli(['audit', 'prune', '--before', new Date().toISOString()]);
    expect(all.stdout.trim()).toMatch(/^removed \d+ audit entries recorded before .*; 0 remain$/);
  }, 30_000);
});
