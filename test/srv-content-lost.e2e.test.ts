/**
 * After `verify` found stored files missing (a disk fault, a partial restore), IT makes the record
 * honest with `verify --mark-lost`, beside the running server: the document stops claiming content
 * (search, GET, hasContent), keeps everything else, takes a new upload, and integrators hear
 * `document.lost`. A content folder that is not there is refused, not taken for lost scans. Each
 * version marked gets one `mark-lost` entry in the audit log (read with the CLI's `audit` and the
 * admin API), and a run that changes nothing records nothing.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { looksUnmounted } from '../server/domain/lost-content.js';
import { outboxEvents, runAdmin, type CliResult, startServerProcess, type ServerProcess, stderrBesidesBusyWait } from './helpers/processes.js';
import { PatientFiles } from './helpers/patient-files.js';
import { ADMIN_TOKEN, ORG, PATIENT } from './helpers/server.js';

let server: ServerProcess;
let api: PatientFiles;

beforeAll(async () => {
  server = await startServerProcess();
  api = await PatientFiles.connect(server.url, '/lost');
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

function admin(args: string[]): Promise<CliResult> {
  return runAdmin(server.dataDir, args);
}

/** The audit log's `mark-lost` entries as the admin CLI lists them (`audit --json`), newest first. */
async function markLostEntries(documentId?: string): Promise<Array<Record<string, any>>> {
  const listed = await admin(['audit', '--action', 'mark-lost', ...(documentId ? ['--document', documentId] : []), '--json']);
  expect(stderrBesidesBusyWait(listed.stderr)).toBe('');
  expect(listed.code).toBe(0);
  return listed.stdout.trim() === '' ? [] : listed.stdout.trim().split('\n').map((line) => JSON.parse(line));
}

/** The same through the admin API, which a data-protection officer's tool reads. */
async function auditApi(query: Record<string, string>): Promise<{ entries: Array<Record<string, any>>; total: number }> {
  const response = await fetch(`${server.url}/admin/v1/audit?${new URLSearchParams(query)}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(response.status).toBe(200);
  return (await response.json()) as { entries: Array<Record<string, any>>; total: number };
}


describe('verify --mark-lost', () => {
  it('a lost current version stops counting as content (search, GET, cached pages), keeps the document, takes a new upload, and runs again without change', async () => {
    const bytes = [randomBytes(20_000), randomBytes(20_001), randomBytes(20_002)];
    const scans = [];
    for (const [index, scan] of bytes.entries()) {
      const stored = await api.upload(`scan-${index}.bin`, scan);
      expect(stored.status).toBe(201);
      scans.push(stored.body as { id: string; sha256: string; path: string; fileName: string });
    }
    const lost = scans[1]!;
    // The page is asked for twice, so the server caches it (and its gzip): it must not be served again.
    for (let i = 0; i < 2; i += 1) expect((await api.search({ path: '/lost', hasContent: true })).documents.map((document) => document.id)).toContain(lost.id);
    fs.rmSync(path.join(server.dataDir, 'content', 'objects', 'documents', lost.id), { recursive: true });

    const marked = await admin(['verify', '--mark-lost']);
    expect(stderrBesidesBusyWait(marked.stderr)).toBe('');
    expect(marked.code).toBe(0);
    expect(marked.stdout).toMatch(/^marked 1 of 3 stored files lost; 1 document no longer counts as having content and waits for a new upload/);
    expect(marked.stdout).toContain(`document ${lost.id} version 1: the file is missing`);

    const withContent = await api.search({ path: '/lost', hasContent: true });
    expect(withContent.documents.map((document) => document.id).sort()).toEqual([scans[0]!.id, scans[2]!.id].sort());
    expect(withContent.total).toBe(2);
    const byId = (await api.search({ id: [lost.id], hasContent: true })).documents[0];
    const document = await api.get(lost.id);
    for (const shown of [byId, document]) {
      expect(shown).toMatchObject({ id: lost.id, path: '/lost', fileName: 'scan-1.bin', hasContent: false, fileSize: null, sha256: null, storageDownloadUri: null, thumbnailDownloadUri: null, version: 1 });
    }
    const versions = { versions: await api.versions(lost.id) };
    expect(versions.versions).toMatchObject([{ version: 1, current: false, sha256: lost.sha256 }]);
    const events = outboxEvents(server.dataDir, 'document.lost');
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({ document: { id: lost.id, hasContent: false }, version: 1, sha256: lost.sha256, fileSize: 20_001, reason: 'the file is missing' });
    // The audit log says who declared the patient's file lost, and when: one entry, no client, no HTTP status.
    const entries = await markLostEntries();
    expect(entries).toEqual([
      {
        id: expect.any(Number), at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T.*Z$/), action: 'mark-lost', outcome: 'allowed', status: 0,
        organizationId: ORG, clientId: null, patientId: PATIENT, documentId: lost.id, version: 1,
        requestId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/), remoteAddress: null,
        detail: { by: 'admin CLI', osUser: os.userInfo().username, fileSize: 20_001, sha256: lost.sha256, found: 'missing', reason: 'the file is missing', current: true },
      },
    ]);
    const byApi = await auditApi({ action: 'mark-lost', patientId: PATIENT, documentId: lost.id });
    expect(byApi.total).toBe(1);
    expect(byApi.entries[0]).toEqual(entries[0]);
    const line = await admin(['audit', '--action', 'mark-lost', '--patient', PATIENT]);
    expect(line.stdout).toMatch(new RegExp(`^1 of 1 audit entries, newest first:\n\\S+ {2}ALLOWED {2}mark-lost {2}no client {2}org ${ORG} {2}patient ${PATIENT} {2}document ${lost.id} v1 {2}from - {2}request ${entries[0]!.requestId} {2}— by: admin CLI; `));

    // Idempotent, and verify now tells known losses from new ones (exit 0: nothing new is wrong).
    const again = await admin(['verify', '--mark-lost']);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^nothing to mark: all 2 stored files are in place .*; 1 file was marked lost before and is still not there \(its document waits for a new upload\)/);
    expect((await admin(['verify'])).code).toBe(0);
    expect(outboxEvents(server.dataDir, 'document.lost')).toHaveLength(1);
    expect(await markLostEntries()).toEqual(entries);
    // The nightly backup no longer fails for a loss that is known.
    const target = path.join(server.dataDir, '..', `${path.basename(server.dataDir)}-backup`);
    try {
      const backup = await admin(['backup', '--to', target]);
      expect(backup.code).toBe(0);
      expect(backup.stdout).toMatch(/^backup written to .*: the database and 2 stored files \(\d+ bytes\), each checked against its sha256; 1 file was marked lost before/);
    } finally {
      fs.rmSync(target, { recursive: true, force: true });
    }

    // The scan goes up again as the next version; an If-Match naming the lost content is refused plainly.
    const stale = await api.upload('scan-1.bin', bytes[1]!, { documentId: lost.id, ifMatch: lost.sha256 });
    expect(stale.status).toBe(409);
    expect(stale.body.detail).toMatch(/has no content on the server: its stored file was lost; upload the file again without If-Match/);
    const again2 = await api.upload('scan-1.bin', bytes[1]!, { documentId: lost.id });
    expect(again2.status).toBe(201);
    expect(again2.body).toMatchObject({ id: lost.id, version: 2, sha256: lost.sha256 });
    const found = (await api.search({ id: [lost.id], hasContent: true })).documents[0];
    expect(found).toMatchObject({ hasContent: true, version: 2, fileSize: 20_001 });
    const download = Buffer.from(await (await fetch(found.storageDownloadUri)).arrayBuffer());
    expect(createHash('sha256').update(download).digest('hex')).toBe(lost.sha256);
    expect((await api.search({ path: '/lost', hasContent: true })).total).toBe(3);
  }, 60_000);

  it('an earlier version lost: marked, the document keeps its current content; the current one lost: the earlier version record stays', async () => {
    const first = randomBytes(20_003);
    const second = randomBytes(20_004);
    const v1 = (await api.upload('two-versions.bin', first)).body as { id: string; sha256: string };
    const v2 = await api.upload('two-versions.bin', second, { documentId: v1.id, ifMatch: v1.sha256 });
    expect(v2.status).toBe(201);
    const folder = path.join(server.dataDir, 'content', 'objects', 'documents', v1.id);
    const [v1File, v2File] = fs.readdirSync(folder).sort();
    expect(v1File).toMatch(/^v1-/);
    fs.rmSync(path.join(folder, v1File!));

    const earlier = await admin(['verify', '--mark-lost']);
    expect(earlier.code).toBe(0);
    expect(earlier.stdout).toMatch(/^marked 1 of \d+ stored files lost; 0 documents no longer count as having content/);
    expect(await api.get(v1.id)).toMatchObject({ hasContent: true, version: 2, sha256: v2.body.sha256 });
    expect(outboxEvents(server.dataDir, 'document.lost')).toHaveLength(1);
    // An earlier version marked is recorded too: the document itself did not change (current false).
    expect(await markLostEntries(v1.id)).toMatchObject([{ version: 1, patientId: PATIENT, detail: { sha256: v1.sha256, fileSize: 20_003, found: 'missing', current: false } }]);

    fs.rmSync(path.join(folder, v2File!));
    expect((await admin(['verify', '--mark-lost'])).code).toBe(0);
    expect(await api.get(v1.id)).toMatchObject({ hasContent: false, version: 2, sha256: null, storageDownloadUri: null });
    const versions = { versions: await api.versions(v1.id) };
    expect(versions.versions).toMatchObject([
      { version: 2, current: false, sha256: v2.body.sha256, fileSize: 20_004 },
      { version: 1, current: false, sha256: v1.sha256, fileSize: 20_003 },
    ]);
    expect(outboxEvents(server.dataDir, 'document.lost')).toHaveLength(2);
    const both = await markLostEntries(v1.id);
    expect(both).toMatchObject([
      { version: 2, detail: { sha256: v2.body.sha256, current: true } },
      { version: 1, detail: { current: false } },
    ]);
    // Two runs, two request ids: each run's entries are grouped by its own.
    expect(both[0]!.requestId).not.toBe(both[1]!.requestId);
  }, 60_000);

  it('a file changed in place (same size) is found with --hashes and marked lost with them', async () => {
    const stored = (await api.upload('bit-rot.bin', randomBytes(20_005))).body as { id: string; sha256: string };
    const folder = path.join(server.dataDir, 'content', 'objects', 'documents', stored.id);
    const file = path.join(folder, fs.readdirSync(folder)[0]!);
    const bytes = fs.readFileSync(file);
    bytes[100]! ^= 0xff;
    fs.writeFileSync(file, bytes);

    const bySize = await admin(['verify', '--mark-lost']);
    expect(bySize.code).toBe(0);
    expect(bySize.stdout).toMatch(/^nothing to mark: /);
    expect(await api.get(stored.id)).toMatchObject({ hasContent: true });
    const byHash = await admin(['verify', '--hashes', '--mark-lost']);
    expect(byHash.code).toBe(0);
    expect(byHash.stdout).toContain(`document ${stored.id} version 1: the file does not match its sha256`);
    expect(await api.get(stored.id)).toMatchObject({ hasContent: false, storageDownloadUri: null });
    expect(await markLostEntries(stored.id)).toMatchObject([{ detail: { sha256: stored.sha256, fileSize: 20_005, found: 'other bytes', reason: 'the file does not match its sha256', current: true } }]);
  }, 60_000);

  it('refuses when the content folder is missing (a disk not mounted), in one line, and changes nothing', async () => {
    const objects = path.join(server.dataDir, 'content', 'objects');
    const aside = `${objects}-unmounted`;
    const before = await api.search({ hasContent: true });
    const recorded = (await markLostEntries()).length;
    fs.renameSync(objects, aside);
    try {
      const refused = await admin(['verify', '--mark-lost']);
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toMatch(/the content folder .*objects is missing or empty: is its disk mounted.*Nothing was marked lost; if every file really is gone, run again with --force/);
    } finally {
      fs.renameSync(aside, objects);
    }
    expect((await api.search({ hasContent: true })).total).toBe(before.total);
    expect(outboxEvents(server.dataDir, 'document.lost')).toHaveLength(3);
    expect(await markLostEntries()).toHaveLength(recorded);
  }, 30_000);

  it('the audit filter of the admin API, as its OpenAPI document describes it, takes both marks', async () => {
    const openapi = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, any> };
    const action = (openapi.paths['/admin/v1/audit'].get.parameters as Array<{ name: string; schema: unknown }>).find((parameter) => parameter.name === 'action');
    expect(JSON.stringify(action?.schema)).toContain('"mark-lost"');
    expect(JSON.stringify(action?.schema)).toContain('"mark-restored"');
    expect((await auditApi({ action: 'mark-restored' })).total).toBe(0);
  });

  it('takes more than half of the files gone for a folder only partly there', () => {
    const folder = '/srv/data/content/objects';
    expect(looksUnmounted({ versions: 10, problems: 1, folderHasFiles: true, folder })).toBeNull();
    expect(looksUnmounted({ versions: 1, problems: 1, folderHasFiles: true, folder })).toBeNull();
    expect(looksUnmounted({ versions: 10, problems: 6, folderHasFiles: true, folder })).toMatch(/6 of 10 stored files are missing or damaged, more than half/);
    expect(looksUnmounted({ versions: 10, problems: 1, folderHasFiles: false, folder })).toMatch(/missing or empty/);
  });
});
