/**
 * Monday after the Friday update: today's server and sync CLI on a data directory and a sync home
 * written by an old release (test/fixtures/upgrade/e59c18e, made by make-fixture.sh beside it
 * with commit e59c18e, the first where the server and the sync CLI ran end to end: every later
 * server and journal migration runs here). Every document is served with the bytes it had, the
 * keys of the rotation stay published, and the sync engine resumes where the old one stopped:
 * nothing uploaded again (the folders' files come back from git with new mtimes, as after a
 * restore), the failed file still failed with its reason, settings and the client secret kept.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from './helpers/processes.js';
import { PATIENT, PATIENT_WITHOUT_CONSENT, startTestServer, tempDir, type TestServer } from './helpers/server.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const FIXTURE = path.join(ROOT, 'test/fixtures/upgrade/e59c18e');
const MADE_BY = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'made-by.json'), 'utf8')) as { home: string; folders: string[]; serverUrl: string };

let work: string;
let server: TestServer;
let oldDocuments: Array<{ id: string; file_name: string; path: string; sha256: string; version: number }>;
let oldKids: string[];

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The sync CLI on the old home, resumable uploads from 100 kB as the old run had them. */
function cli(args: string[]): Promise<CliResult> {
  return runCli(path.join(work, 'sync'), args, { PATIENT_DOCS_SYNC_RESUMABLE_THRESHOLD: '100000' });
}

beforeAll(async () => {
  work = tempDir('upgrade');
  // git keeps no mtimes: the copied folders' files look changed to the journal, as after a restore.
  fs.cpSync(FIXTURE, work, { recursive: true });
  const old = new Database(path.join(work, 'data/patient-docs.sqlite'), { readonly: true });
  oldDocuments = old.prepare('SELECT id, file_name, path, sha256, version FROM documents WHERE deleted_at IS NULL ORDER BY id').all() as typeof oldDocuments;
  oldKids = old.prepare('SELECT kid FROM signing_keys ORDER BY kid').pluck().all() as string[];
  old.close();
  server = await startTestServer({ PATIENT_DOCS_DATA_DIR: path.join(work, 'data') });
  // The home names its folders and server as the old version saw them; this copy has them elsewhere.
  const settingsFile = path.join(work, 'sync/settings.json');
  let text = fs.readFileSync(settingsFile, 'utf8');
  text = text.replaceAll(MADE_BY.folders[0]!, path.join(work, 'f1')).replaceAll(MADE_BY.folders[1]!, path.join(work, 'f2')).replaceAll(MADE_BY.serverUrl, server.url);
  fs.writeFileSync(settingsFile, text);
}, 60_000);

afterAll(async () => {
  await server?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe('the new server on an old data directory', () => {
  it('serves every document with the bytes and sha256 it had, and its thumbnail', async () => {
    expect(oldDocuments).toHaveLength(4);
    const search = await server.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: {} });
    expect(search.status).toBe(200);
    const served = (search.body.documents as Array<{ id: string; fileName: string; sha256: string; version: number; storageDownloadUri: string; thumbnailDownloadUri: string | null }>).sort((a, b) =>
      a.id.localeCompare(b.id),
    );
    expect(served.map((document) => [document.id, document.fileName, document.sha256, document.version])).toEqual(
      oldDocuments.map((document) => [document.id, document.file_name, document.sha256, document.version]),
    );
    for (const document of served) {
      const content = await fetch(document.storageDownloadUri);
      expect(content.status).toBe(200);
      expect(sha256(Buffer.from(await content.arrayBuffer()))).toBe(document.sha256);
    }
    const crown = served.find((document) => document.fileName === 'crown.stl')!;
    const thumbnail = await fetch(crown.thumbnailDownloadUri!);
    expect(thumbnail.status).toBe(200);
    expect(thumbnail.headers.get('content-type')).toBe('image/png');
  });

  it('keeps publishing the rotated-out key beside the new one (tokens it signed verify during the overlap)', async () => {
    expect(oldKids).toHaveLength(2);
    const jwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string }> };
    expect(jwks.keys.map((key) => key.kid).sort()).toEqual(expect.arrayContaining(oldKids));
  });
});

describe('the new sync engine on an old sync home', () => {
  it('resumes: nothing uploaded again, the failed file still failed with its reason, settings and secret kept', async () => {
    const run = await cli(['run', '--once', '--timeout', '20']);
    // Exit 2: one file is not synced (the patient without consent), as before the update.
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toContain('noconsent.stl  [failed]  The patient has not given consent to this clinic.');
    expect(run.stdout).toContain('1 file(s) not synced');

    const search = await server.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: {} });
    expect((search.body.documents as Array<{ id: string; version: number }>).map((document) => [document.id, document.version]).sort()).toEqual(
      oldDocuments.map((document) => [document.id, document.version]).sort(),
    );
    const other = await server.api('POST', `/v1/patients/${PATIENT_WITHOUT_CONSENT}/documents/search`, { body: {} });
    expect(other.status).toBe(403);

    const status = await cli(['status', '--json']);
    expect(status.code, status.stderr).toBe(0);
    const view = JSON.parse(status.stdout) as { server: string; pairs: Array<{ pair: { folder: string }; files: Array<{ relativePath: string; state: string; documentId?: string | null }> }> };
    expect(view.server).toBe(server.url);
    const byFolder = new Map(view.pairs.map((entry) => [path.basename(entry.pair.folder), entry.files]));
    expect(byFolder.get('f1')!.map((file) => [file.relativePath, file.state]).sort()).toEqual([
      ['cbct/big.ply', 'synced'],
      ['cbct/slice1.dcm', 'synced'],
      ['crown.stl', 'synced'],
      ['report.pdf', 'synced'],
    ]);
    expect(byFolder.get('f2')!.map((file) => [file.relativePath, file.state])).toEqual([['noconsent.stl', 'failed']]);

    const config = await cli(['config']);
    expect(config.code, config.stderr).toBe(0);
    expect(JSON.parse(config.stdout)).toMatchObject({ settleMs: 300, maskedSecret: '••••••••6789' });
  }, 60_000);
});
