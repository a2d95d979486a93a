/**
 * The way back from `verify --mark-lost`: IT restores the content folder from a backup, the file is
 * there again byte for byte, and `verify` says so (it always hashes files marked lost) and how to
 * put it back; `verify --mark-restored`, beside the running server, gives the document its content
 * again (GET, search, cached pages, download), writes `document.restored` and delivers it to a
 * subscriber over real HTTPS. A newer version uploaded meanwhile stays current; a file that came
 * back with other bytes is never restored; a second run changes nothing. Each version restored gets
 * one `mark-restored` entry in the audit log, and a run that changes nothing records nothing.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands, type AdminCommands, type AdminResult, outboxEvents, processStorageEnv, startServerProcess, type ServerProcess, stderrBesidesBusyWait } from './helpers/processes.js';
import { PatientFiles } from './helpers/patient-files.js';
import { ADMIN_TOKEN, ORG, PATIENT } from './helpers/server.js';
import { waitFor } from './helpers/sync.js';
import { makeTestCertificates, type TestCertificates } from './helpers/tls.js';

let server: ServerProcess;
let api: PatientFiles;
let tls: TestCertificates;
let receiver: https.Server;
/** One admin CLI process for the file's commands: what they print and return is under test, not its start. */
let commands: AdminCommands;
const received: Array<{ raw: Buffer; signature: string }> = [];
const HMAC = 'restored-webhook-hmac-0123456789';

beforeAll(async () => {
  tls = makeTestCertificates('restored');
  receiver = https.createServer({ key: tls.key, cert: tls.cert }, (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ raw: Buffer.concat(chunks), signature: String(request.headers.signature) });
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  server = await startServerProcess({ NODE_EXTRA_CA_CERTS: tls.caFile, PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true' });
  api = await PatientFiles.connect(server.url, '/restored');
  const { port } = receiver.address() as { port: number };
  const subscribed = await fetch(`${server.url}/v1/webhooks/subscribe`, {
    method: 'POST',
    headers: api.headers(),
    body: JSON.stringify({ events: ['document.restored'], callback: `https://127.0.0.1:${port}/hooks`, hmac: HMAC }),
  });
  expect(subscribed.status).toBe(201);
  commands = adminCommands({ PATIENT_DOCS_DATA_DIR: server.dataDir, ...(await processStorageEnv(server.dataDir)) });
}, 60_000);

afterAll(async () => {
  await commands?.close();
  await server?.stop();
  await new Promise((resolve) => receiver?.close(resolve));
  if (tls) fs.rmSync(tls.dir, { recursive: true, force: true });
});

async function downloadSha256(uri: string): Promise<string> {
  const response = await fetch(uri);
  expect(response.status).toBe(200);
  return createHash('sha256').update(Buffer.from(await response.arrayBuffer())).digest('hex');
}

function admin(args: string[]): Promise<AdminResult> {
  return commands.run(...args);
}

/** The audit log's entries of one action as the admin CLI lists them (`audit --json`), newest first. */
async function auditEntries(action: string, documentId?: string): Promise<Array<Record<string, any>>> {
  const listed = await admin(['audit', '--action', action, ...(documentId ? ['--document', documentId] : []), '--json']);
  expect(stderrBesidesBusyWait(listed.stderr)).toBe('');
  expect(listed.code).toBe(0);
  return listed.stdout.trim() === '' ? [] : listed.stdout.trim().split('\n').map((line) => JSON.parse(line));
}


/** The document's stored files, set aside as IT's backup holds them. */
function backUp(id: string): string {
  const folder = path.join(server.dataDir, 'content', 'objects', 'documents', id);
  const aside = `${folder}-backup`;
  fs.cpSync(folder, aside, { recursive: true });
  return aside;
}

function restoreFrom(aside: string, id: string): void {
  fs.cpSync(aside, path.join(server.dataDir, 'content', 'objects', 'documents', id), { recursive: true });
}


describe('verify --mark-restored', () => {
  it('a lost file copied back is reported, then restored: GET, search (not a stale cached page) and download show it, the event is written and delivered; a second run changes nothing', async () => {
    const bytes = [randomBytes(30_000), randomBytes(30_001), randomBytes(30_002)];
    const scans = [];
    for (const [index, scan] of bytes.entries()) scans.push(await api.uploaded(`scan-${index}.bin`, scan));
    const lost = scans[1]!;
    const aside = backUp(lost.id);
    fs.rmSync(path.join(server.dataDir, 'content', 'objects', 'documents', lost.id), { recursive: true });
    const marked = await admin(['verify', '--mark-lost']);
    expect(marked.code).toBe(0);
    expect(await api.get(lost.id)).toMatchObject({ hasContent: false });
    // Asked twice while lost, so the server caches the page (and its gzip): it must not be served after the restore.
    for (let i = 0; i < 2; i += 1) expect((await api.search({ path: '/restored', hasContent: true })).documents.map((document) => document.id)).not.toContain(lost.id);

    restoreFrom(aside, lost.id);
    // Without --hashes too: a file marked lost is always hashed before it is called intact.
    const reported = await admin(['verify']);
    expect(stderrBesidesBusyWait(reported.stderr)).toBe('');
    expect(reported.code).toBe(0);
    expect(reported.stdout).toMatch(/^all 2 stored files are in place .*\n1 file marked lost is back intact/);
    const key = fs.readdirSync(path.join(server.dataDir, 'content', 'objects', 'documents', lost.id))[0]!;
    expect(reported.stdout).toContain(
      `  document ${lost.id} version 1: marked lost, but its file is back intact (30001 bytes, its sha256 as recorded); run verify --mark-restored to count it as content again (documents/${lost.id}/${key})`,
    );
    expect(await api.get(lost.id)).toMatchObject({ hasContent: false });
    expect(outboxEvents(server.dataDir, 'document.restored')).toHaveLength(0);

    const restored = await admin(['verify', '--mark-restored']);
    expect(stderrBesidesBusyWait(restored.stderr)).toBe('');
    expect(restored.code).toBe(0);
    expect(restored.stdout).toMatch(/^restored 1 of 1 files marked lost that are back intact; 1 document has its content again/);
    expect(restored.stdout).toContain(`  document ${lost.id} version 1: restored: the document has this content again`);

    const withContent = await api.search({ path: '/restored', hasContent: true });
    expect(withContent.documents.map((document) => document.id).sort()).toEqual(scans.map((scan) => scan.id).sort());
    const byId = (await api.search({ id: [lost.id], hasContent: true })).documents[0];
    const document = await api.get(lost.id);
    for (const shown of [byId, document]) expect(shown).toMatchObject({ id: lost.id, fileName: 'scan-1.bin', hasContent: true, version: 1, fileSize: 30_001, sha256: lost.sha256 });
    expect(await downloadSha256(document.storageDownloadUri)).toBe(lost.sha256);
    expect(await api.versions(lost.id)).toMatchObject([{ version: 1, current: true, sha256: lost.sha256 }]);

    const events = outboxEvents(server.dataDir, 'document.restored');
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({ document: { id: lost.id, hasContent: true, sha256: lost.sha256, version: 1 }, version: 1, fileSize: 30_001, sha256: lost.sha256 });
    const delivered = await waitFor('document.restored to be delivered', () => received.find((message) => message.raw.includes(lost.id)));
    expect(delivered.signature).toBe(createHmac('sha512', HMAC).update(delivered.raw).digest('hex'));
    expect(JSON.parse(delivered.raw.toString('utf8'))).toMatchObject({ eventType: 'document.restored', patientId: PATIENT, data: { document: { id: lost.id, hasContent: true }, sha256: lost.sha256 } });
    // The audit log has the file declared lost, then back: one entry each, by the admin CLI, the run's id as request id.
    const [lostEntry] = await auditEntries('mark-lost', lost.id);
    const restoredEntries = await auditEntries('mark-restored');
    expect(restoredEntries).toEqual([
      {
        id: expect.any(Number), at: expect.stringMatching(/Z$/), action: 'mark-restored', outcome: 'allowed', status: 0,
        organizationId: ORG, clientId: null, patientId: PATIENT, documentId: lost.id, version: 1,
        requestId: expect.stringMatching(/^[0-9a-f-]{36}$/), remoteAddress: null,
        detail: { by: 'admin CLI', osUser: os.userInfo().username, fileSize: 30_001, sha256: lost.sha256, current: true },
      },
    ]);
    expect(lostEntry).toMatchObject({ action: 'mark-lost', documentId: lost.id, detail: { current: true } });
    expect(restoredEntries[0]!.requestId).not.toBe(lostEntry!.requestId);
    expect(Date.parse(restoredEntries[0]!.at)).toBeGreaterThanOrEqual(Date.parse(lostEntry!.at));
    const byApi = await fetch(`${server.url}/admin/v1/audit?${new URLSearchParams({ action: 'mark-restored', patientId: PATIENT })}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(byApi.status).toBe(200);
    expect(await byApi.json()).toMatchObject({ total: 1, entries: [{ id: restoredEntries[0]!.id, documentId: lost.id }] });

    const again = await admin(['verify', '--mark-restored']);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe('nothing to restore: no file marked lost is back intact\n');
    const plain = await admin(['verify', '--hashes']);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/^all 3 stored files are in place \(90003 bytes, each matching its sha256\); the audit log holds \d+ entries\n$/);
    expect(outboxEvents(server.dataDir, 'document.restored')).toHaveLength(1);
    expect(await auditEntries('mark-restored')).toEqual(restoredEntries);
    fs.rmSync(aside, { recursive: true, force: true });
  }, 90_000);

  it('a newer version uploaded meanwhile stays current: the restored one is an intact earlier version again, downloadable, and no event is sent', async () => {
    const first = randomBytes(30_003);
    const second = randomBytes(30_004);
    const v1 = await api.uploaded('newer.bin', first);
    const aside = backUp(v1.id);
    fs.rmSync(path.join(server.dataDir, 'content', 'objects', 'documents', v1.id), { recursive: true });
    expect((await admin(['verify', '--mark-lost'])).code).toBe(0);
    // The workstation that still had the scan sent a newer export as the next version.
    const v2 = await api.uploaded('newer.bin', second, { documentId: v1.id });
    expect(v2.version).toBe(2);
    restoreFrom(aside, v1.id);

    const restored = await admin(['verify', '--mark-restored']);
    expect(restored.code).toBe(0);
    expect(restored.stdout).toMatch(/^restored 1 of 1 files marked lost that are back intact; 0 documents have their content again/);
    expect(restored.stdout).toContain(`  document ${v1.id} version 1: restored as an intact earlier version: the document has a newer version (or was deleted) and is not changed`);
    expect(await api.get(v1.id)).toMatchObject({ hasContent: true, version: 2, sha256: v2.sha256 });
    const history = await api.versions(v1.id);
    expect(history).toMatchObject([
      { version: 2, current: true, sha256: v2.sha256 },
      { version: 1, current: false, sha256: v1.sha256, fileSize: 30_003 },
    ]);
    expect(await downloadSha256(history[1].storageDownloadUri)).toBe(v1.sha256);
    expect(outboxEvents(server.dataDir, 'document.restored')).toHaveLength(1);
    // Recorded as well: an earlier version back, the document itself unchanged.
    expect(await auditEntries('mark-restored', v1.id)).toMatchObject([{ version: 1, status: 0, clientId: null, detail: { sha256: v1.sha256, fileSize: 30_003, current: false } }]);
    const plain = await admin(['verify']);
    expect(plain.code).toBe(0);
    expect(plain.stdout).not.toContain('marked lost');
    fs.rmSync(aside, { recursive: true, force: true });
  }, 90_000);

  it('a file that came back with other bytes (same size) is named and not restored, even without --hashes', async () => {
    const stored = await api.uploaded('wrong-bytes.bin', randomBytes(30_005));
    const folder = path.join(server.dataDir, 'content', 'objects', 'documents', stored.id);
    const file = path.join(folder, fs.readdirSync(folder)[0]!);
    fs.rmSync(file);
    expect((await admin(['verify', '--mark-lost'])).code).toBe(0);
    fs.writeFileSync(file, randomBytes(30_005));

    const reported = await admin(['verify']);
    expect(reported.code).toBe(0);
    expect(reported.stdout).toContain(`  document ${stored.id} version 1: marked lost; a file is there again, but it does not match its sha256, so it is not restored`);
    expect(reported.stdout).not.toContain('back intact');
    // The summary does not call it "still not there": a file is there, with other bytes.
    expect(reported.stdout.split('\n')[0]).toMatch(/marked lost before and (is back, but not with its recorded bytes|are still missing or not with the recorded bytes) \(/);
    const refused = await admin(['verify', '--mark-restored']);
    expect(refused.code).toBe(0);
    expect(refused.stdout).toMatch(/^nothing to restore: no file marked lost is back intact\n {2}document .* version 1: marked lost; a file is there again, but it does not match its sha256, so it is not restored/);
    expect(await api.get(stored.id)).toMatchObject({ hasContent: false, storageDownloadUri: null });
    expect((await api.search({ id: [stored.id], hasContent: true })).documents[0]).toMatchObject({ hasContent: false, sha256: null });
    expect((await api.search({ path: '/restored', hasContent: true })).documents.map((document) => document.id)).not.toContain(stored.id);
    expect(outboxEvents(server.dataDir, 'document.restored')).toHaveLength(1);
    // Marked lost (once), never restored: nothing restored is recorded.
    expect(await auditEntries('mark-lost', stored.id)).toHaveLength(1);
    expect(await auditEntries('mark-restored', stored.id)).toEqual([]);
  }, 60_000);

  it('with new problems besides, restores what is back and still exits 1 naming the rest', async () => {
    const back = await api.uploaded('back.bin', randomBytes(30_006));
    const gone = await api.uploaded('gone.bin', randomBytes(30_007));
    const aside = backUp(back.id);
    fs.rmSync(path.join(server.dataDir, 'content', 'objects', 'documents', back.id), { recursive: true });
    expect((await admin(['verify', '--mark-lost'])).code).toBe(0);
    restoreFrom(aside, back.id);
    fs.rmSync(path.join(server.dataDir, 'content', 'objects', 'documents', gone.id), { recursive: true });

    const result = await admin(['verify', '--mark-restored']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^patient-docs-admin: restored 1 of 1 files marked lost that are back intact; 1 document has its content again/);
    expect(result.stderr).toContain(`document ${gone.id} version 1: the file is missing`);
    expect(await api.get(back.id)).toMatchObject({ hasContent: true });
    expect(await api.get(gone.id)).toMatchObject({ hasContent: true });
    expect((await admin(['verify', '--mark-restored', '--force'])).code).toBe(2);
    fs.rmSync(aside, { recursive: true, force: true });
  }, 60_000);
});
