/**
 * The versions API says which versions' stored files are marked lost (`verify --mark-lost`) and
 * since when, and hands them no download link; once IT restores the file (`verify
 * --mark-restored`) the version is as it was, and its link downloads its very bytes. A real server
 * process, the admin CLI beside it, real files: on the local disk, and again in an S3-compatible
 * store (the `s3` project), the files taken away and put back through the server's own storage.
 */
import { createHash, randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storageAndUploads } from '../server/storage/index.js';
import type { ContentStorage } from '../server/storage/types.js';
import { processStorageEnv, runAdmin, startServerProcess, type CliResult, type ServerProcess, stderrBesidesBusyWait } from './helpers/processes.js';
import { PatientFiles } from './helpers/patient-files.js';
import { PATIENT } from './helpers/server.js';

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let server: ServerProcess;
let api: PatientFiles;

beforeAll(async () => {
  server = await startServerProcess();
  api = await PatientFiles.connect(server.url, '/versions');
  const env = await processStorageEnv(server.dataDir);
  ({ storage } = await storageAndUploads({ dataDir: server.dataDir, storageUrl: env.PATIENT_DOCS_STORAGE_URL, s3Endpoint: env.PATIENT_DOCS_S3_ENDPOINT }, undefined));
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

interface Version {
  version: number;
  current: boolean;
  sha256: string;
  fileSize: number;
  storageDownloadUri: string | null;
  contentLostAt: string | null;
}

async function versions(id: string): Promise<Version[]> {
  return (await api.versions(id)) as Version[];
}

async function download(uri: string): Promise<{ status: number; sha256: string; body: Buffer }> {
  const response = await fetch(uri);
  const body = Buffer.from(await response.arrayBuffer());
  return { status: response.status, sha256: createHash('sha256').update(body).digest('hex'), body };
}

function admin(args: string[]): Promise<CliResult> {
  return runAdmin(server.dataDir, args);
}

/** The server's content storage, disk or bucket, opened beside it as the admin CLI opens it. */
let storage: ContentStorage;

/** The keys of a document's stored files (every version's content and thumbnail), from its records. */
function storedFilesOf(id: string): string[] {
  const db = new Database(path.join(server.dataDir, 'patient-docs.sqlite'), { readonly: true });
  try {
    const rows = db.prepare('SELECT content_key, thumbnail_key FROM document_versions WHERE document_id = ?').all(id) as Array<{ content_key: string; thumbnail_key: string | null }>;
    return rows.flatMap((row) => [row.content_key, ...(row.thumbnail_key ? [row.thumbnail_key] : [])]);
  } finally {
    db.close();
  }
}

/** Takes a document's stored files away, keeping a copy as IT's backup would; returns the copy. */
async function loseFiles(id: string): Promise<Map<string, Buffer>> {
  const aside = new Map<string, Buffer>();
  for (const key of storedFilesOf(id)) {
    const chunks: Buffer[] = [];
    for await (const chunk of storage.read(key)) chunks.push(chunk as Buffer);
    aside.set(key, Buffer.concat(chunks));
    await storage.remove(key);
  }
  return aside;
}

async function restoreFiles(aside: Map<string, Buffer>): Promise<void> {
  for (const [key, bytes] of aside) await storage.put(key, bytes);
}

describe('GET …/documents/{id}/versions and files marked lost', () => {
  it('says when a version was marked lost and gives it no link; restored, its link downloads its bytes again', async () => {
    const bytes = randomBytes(25_001);
    const scan = await api.uploaded('lost-and-back.bin', bytes);
    // Two more scans, so the lost one is not "most of the store" (verify would refuse).
    await api.uploaded('bystander-1.bin', randomBytes(25_002));
    await api.uploaded('bystander-2.bin', randomBytes(25_003));

    const before = await versions(scan.id);
    expect(before).toMatchObject([{ version: 1, current: true, sha256: scan.sha256, fileSize: 25_001, contentLostAt: null }]);
    expect(before[0]!.storageDownloadUri).toMatch(/^http:\/\/.*\/storage\/v1\/documents\/.*[?&]sig=/);
    const early = before[0]!.storageDownloadUri!;
    expect((await download(early)).body.equals(bytes)).toBe(true);

    const aside = await loseFiles(scan.id);
    const from = Date.now();
    const marked = await admin(['verify', '--mark-lost']);
    expect(stderrBesidesBusyWait(marked.stderr)).toBe('');
    expect(marked.code).toBe(0);
    const lost = await versions(scan.id);
    expect(lost).toEqual([expect.objectContaining({ version: 1, current: false, sha256: scan.sha256, fileSize: 25_001, storageDownloadUri: null, contentLostAt: expect.stringMatching(ISO_UTC) })]);
    const lostAt = Date.parse(lost[0]!.contentLostAt!);
    expect(lostAt).toBeGreaterThanOrEqual(from - 1000);
    expect(lostAt).toBeLessThanOrEqual(Date.now());
    // A link handed out before the mark says why it no longer serves the file.
    const refused = await fetch(early);
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/version 1 was marked lost on the server \(\d{4}-.*Z\); the server administrator must restore it from a backup, or the file must be uploaded again/);

    await restoreFiles(aside);
    // Marked lost, back in the storage, not yet marked restored: still listed as lost, still no link.
    expect((await versions(scan.id))[0]).toMatchObject({ storageDownloadUri: null, contentLostAt: lost[0]!.contentLostAt });
    const restored = await admin(['verify', '--mark-restored']);
    expect(stderrBesidesBusyWait(restored.stderr)).toBe('');
    expect(restored.code).toBe(0);
    const after = await versions(scan.id);
    expect(after).toMatchObject([{ version: 1, current: true, sha256: scan.sha256, contentLostAt: null }]);
    const again = await download(after[0]!.storageDownloadUri!);
    expect(again.status).toBe(200);
    expect(again.body.equals(bytes)).toBe(true);
  }, 90_000);

  it('a version uploaded after the loss is current and downloadable; the lost one stays marked until it is restored, then downloads as the earlier version', async () => {
    const first = randomBytes(25_004);
    const second = randomBytes(25_005);
    const v1 = await api.uploaded('replaced.bin', first);
    const aside = await loseFiles(v1.id);
    expect((await admin(['verify', '--mark-lost'])).code).toBe(0);
    const lostAt = (await versions(v1.id))[0]!.contentLostAt;
    expect(lostAt).toMatch(ISO_UTC);
    // The workstation that still had the scan uploads it again (no If-Match: there is no current content).
    const v2 = await api.uploaded('replaced.bin', second, { documentId: v1.id });
    expect(v2.version).toBe(2);

    const history = await versions(v1.id);
    expect(history).toEqual([
      expect.objectContaining({ version: 2, current: true, sha256: v2.sha256, contentLostAt: null, storageDownloadUri: expect.any(String) }),
      expect.objectContaining({ version: 1, current: false, sha256: v1.sha256, contentLostAt: lostAt, storageDownloadUri: null }),
    ]);
    expect((await download(history[0]!.storageDownloadUri!)).sha256).toBe(v2.sha256);

    // A third version (If-Match of the second) leaves the mark on the first where it was.
    const third = randomBytes(25_006);
    const v3 = await api.uploaded('replaced.bin', third, { documentId: v1.id, ifMatch: v2.sha256 });
    expect((await versions(v1.id)).map((version) => [version.version, version.current, version.contentLostAt])).toEqual([
      [3, true, null],
      [2, false, null],
      [1, false, lostAt],
    ]);

    await restoreFiles(aside);
    expect((await admin(['verify', '--mark-restored'])).code).toBe(0);
    const restored = await versions(v1.id);
    expect(restored.map((version) => [version.version, version.current, version.contentLostAt])).toEqual([
      [3, true, null],
      [2, false, null],
      [1, false, null],
    ]);
    expect((await download(restored[2]!.storageDownloadUri!)).body.equals(first)).toBe(true);
    expect((await download(restored[0]!.storageDownloadUri!)).sha256).toBe(v3.sha256);
  }, 90_000);

  it('the OpenAPI document describes both fields as the answers carry them; bad ids are refused, never a 500', async () => {
    type Schema = { $ref?: string; required?: string[]; properties?: Record<string, Schema>; items?: Schema; type?: unknown; format?: string };
    const openapi = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, any>; components?: { schemas?: Record<string, Schema> } };
    const resolve = (schema: Schema): Schema => (schema.$ref ? resolve(openapi.components!.schemas![schema.$ref.split('/').pop()!]!) : schema);
    const answer = resolve(openapi.paths['/v1/patients/{patientId}/documents/{documentId}/versions'].get.responses['200'].content['application/json'].schema as Schema);
    const schema = resolve(resolve(answer.properties!.versions!).items!) as Required<Pick<Schema, 'required' | 'properties'>>;
    expect(schema.required).toEqual(expect.arrayContaining(['storageDownloadUri', 'contentLostAt']));
    expect(schema.properties.storageDownloadUri!.type).toEqual(['string', 'null']);
    expect(schema.properties.contentLostAt).toMatchObject({ type: ['string', 'null'], format: 'date-time' });

    for (const [url, status] of [
      [`/v1/patients/${PATIENT}/documents/not-a-uuid/versions`, 400],
      [`/v1/patients/not-a-uuid/documents/${PATIENT}/versions`, 400],
      [`/v1/patients/${PATIENT}/documents/0190c3f0-0000-7000-8000-000000000000/versions`, 404],
    ] as const) {
      const response = await fetch(`${server.url}${url}`, { headers: api.headers() });
      expect(response.status, url).toBe(status);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
  }, 30_000);
});
