/**
 * Files marked lost that come back: verify (and backup) tell the intact ones from the others,
 * always by their sha256, and markContentRestored writes document.restored only for a document
 * that gets its content back. Real SQLite file, real content files.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { backupDataDir, verifyContent } from '../db/sqlite/backup.js';
import { SqliteStore } from '../db/sqlite/store.js';
import { LocalDiskStorage } from '../storage/local-disk.js';
import type { DocumentRecord } from '../db/types.js';
import { DocumentService } from './document-service.js';
import { Links } from './links.js';
import { markContentLost, markContentRestored } from './lost-content.js';

const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

async function setup() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-restored-'));
  dirs.push(dir);
  const databaseFile = path.join(dir, 'patient-docs.sqlite');
  const contentRoot = path.join(dir, 'content');
  const store = SqliteStore.open(databaseFile);
  store.db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run('org', 'Org', 'x');
  store.db.prepare('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(PATIENT, 'P', 'p', 'x', 'x');
  const documents = new DocumentService(store, new Links('http://server', Buffer.alloc(32, 7)));
  /** A document with one stored version; returns its record, key, file and bytes. */
  const stored = async (name: string) => {
    const at = '2026-11-22T09:00:00.000Z';
    const document: DocumentRecord = {
      id: randomUUID(), patientId: PATIENT, organizationId: 'org', fileName: name, fileType: 'STL', path: '/scans', createdAt: at, lastModifiedAt: at,
      hasContent: false, fileSize: null, sha256: null, version: 0, contentKey: null, contentType: null, thumbnailKey: null, createdBy: 'test',
    };
    await store.documents.create(document, []);
    const bytes = randomBytes(1000);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const key = `documents/${document.id}/v1-${sha256.slice(0, 8)}`;
    const file = path.join(contentRoot, 'objects', ...key.split('/'));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, bytes);
    await store.content.commitVersion(
      { documentId: document.id, version: 1, fileType: 'STL', originalFileName: name, fileSize: bytes.length, sha256, contentKey: key, contentType: 'model/stl', thumbnailKey: null, thumbnailStatus: 'none', thumbnailError: null, uploadedAt: at, uploadedBy: 'test', contentLostAt: null },
      0,
      [],
    );
    return { document, key, file, bytes, sha256 };
  };
  return { dir, databaseFile, contentRoot, store, documents, stored };
}

const events = (store: SqliteStore, type: string) => store.db.prepare('SELECT data FROM outbox_events WHERE event_type = ?').pluck().all(type).map((data) => JSON.parse(data as string));

describe('files marked lost that come back', () => {
  it('verify calls one back with its bytes restorable (without --hashes too), one with other bytes or none still lost; backup says the same', async () => {
    const { dir, databaseFile, contentRoot, store, documents, stored } = await setup();
    const back = await stored('back.stl');
    const other = await stored('other.stl');
    const gone = await stored('gone.stl');
    const kept = await stored('kept.stl');
    for (const scan of [back, other, gone]) fs.rmSync(scan.file);
    const lost = await verifyContent(databaseFile, new LocalDiskStorage(contentRoot), { hashes: false });
    expect(lost.problems).toHaveLength(3);
    await markContentLost(store, documents, lost.problems);

    fs.writeFileSync(back.file, back.bytes);
    fs.writeFileSync(other.file, randomBytes(1000));
    for (const hashes of [false, true]) {
      const report = await verifyContent(databaseFile, new LocalDiskStorage(contentRoot), { hashes });
      expect(report.problems).toEqual([]);
      expect(report.restorable).toEqual([{ documentId: back.document.id, version: 1, key: back.key, sha256: back.sha256, fileSize: 1000 }]);
      expect(report.markedLost.map((problem) => [problem.documentId, problem.problem]).sort()).toEqual(
        [
          [other.document.id, 'the file does not match its sha256'],
          [gone.document.id, 'the file is missing'],
        ].sort(),
      );
    }
    const backup = await backupDataDir({ databaseFile, dataDir: dir, storage: new LocalDiskStorage(contentRoot), target: path.join(dir, 'backup') });
    expect(backup.restorable.map((file) => file.documentId)).toEqual([back.document.id]);
    expect(backup.problems).toEqual([]);
    // The one never lost is copied as any file: 4 versions, 2 of them (kept, back) copied intact.
    expect(backup.versions).toBe(4);
    expect(backup.bytes).toBe(2000);
    expect(fs.readFileSync(path.join(dir, 'backup', 'content', 'objects', ...kept.key.split('/')))).toEqual(kept.bytes);
    await store.close();
  });

  it('markContentRestored: document.restored for the document that has its content again, nothing for a second run', async () => {
    const { databaseFile, contentRoot, store, documents, stored } = await setup();
    const scan = await stored('jaw.stl');
    await stored('other.stl');
    fs.rmSync(scan.file);
    await markContentLost(store, documents, (await verifyContent(databaseFile, new LocalDiskStorage(contentRoot), { hashes: false })).problems);
    fs.writeFileSync(scan.file, scan.bytes);
    const { restorable } = await verifyContent(databaseFile, new LocalDiskStorage(contentRoot), { hashes: false });

    const first = await markContentRestored(store, documents, restorable, { now: () => new Date('2026-11-22T10:00:00.000Z') });
    expect(first).toMatchObject({ versions: 1, documents: 1, files: [{ documentId: scan.document.id, outcome: 'current' }] });
    expect(events(store, 'document.restored')).toEqual([
      {
        document: expect.objectContaining({ id: scan.document.id, hasContent: true, version: 1, sha256: scan.sha256, fileSize: 1000, fileName: 'jaw.stl', path: '/scans' }),
        version: 1,
        fileSize: 1000,
        sha256: scan.sha256,
      },
    ]);
    expect(await store.documents.get(PATIENT, scan.document.id)).toMatchObject({ hasContent: true, contentKey: scan.key, contentType: 'model/stl' });
    // The same list again (a second CLI started from the same verify): nothing changes, no second event.
    expect(await markContentRestored(store, documents, restorable)).toMatchObject({ versions: 0, documents: 0, files: [{ outcome: 'unchanged' }] });
    expect(events(store, 'document.restored')).toHaveLength(1);
    expect((await verifyContent(databaseFile, new LocalDiskStorage(contentRoot), { hashes: true })).restorable).toEqual([]);
    await store.close();
  });

  it('each version marked gets an audit entry naming the run (as its events do), who marked, and the file as recorded', async () => {
    const { databaseFile, contentRoot, store, documents, stored } = await setup();
    const gone = await stored('gone.stl');
    const changed = await stored('changed.stl');
    await stored('kept.stl');
    fs.rmSync(gone.file);
    fs.writeFileSync(changed.file, randomBytes(1000));
    const run = { id: randomUUID(), operator: { by: 'admin CLI', osUser: 'it-admin' }, now: () => new Date('2026-11-22T11:00:00.000Z') };
    await markContentLost(store, documents, (await verifyContent(databaseFile, new LocalDiskStorage(contentRoot), { hashes: true })).problems, run);
    const lost = (await store.audit.search({ action: 'mark-lost', offset: 0, limit: 10 })).rows;
    expect(lost.map((entry) => entry.documentId).sort()).toEqual([gone.document.id, changed.document.id].sort());
    const entryOf = (id: string) => lost.find((entry) => entry.documentId === id)!;
    expect(entryOf(gone.document.id)).toMatchObject({
      at: '2026-11-22T11:00:00.000Z', outcome: 'allowed', status: 0, clientId: null, patientId: PATIENT, organizationId: 'org', version: 1, requestId: run.id, remoteAddress: null,
      detail: { by: 'admin CLI', osUser: 'it-admin', fileSize: 1000, sha256: gone.sha256, found: 'missing', reason: 'the file is missing', current: true },
    });
    expect(entryOf(changed.document.id).detail).toMatchObject({ sha256: changed.sha256, found: 'other bytes', reason: 'the file does not match its sha256' });
    expect(store.db.prepare("SELECT DISTINCT operation_id FROM outbox_events WHERE event_type = 'document.lost'").pluck().all()).toEqual([run.id]);

    fs.writeFileSync(gone.file, gone.bytes);
    const { restorable } = await verifyContent(databaseFile, new LocalDiskStorage(contentRoot), { hashes: false });
    await markContentRestored(store, documents, restorable, run);
    expect((await store.audit.search({ action: 'mark-restored', offset: 0, limit: 10 })).rows).toMatchObject([
      { documentId: gone.document.id, version: 1, status: 0, clientId: null, patientId: PATIENT, requestId: run.id, detail: { by: 'admin CLI', osUser: 'it-admin', fileSize: 1000, sha256: gone.sha256, current: true } },
    ]);
    // Nothing changes the second time, and nothing more is recorded.
    await markContentLost(store, documents, (await verifyContent(databaseFile, new LocalDiskStorage(contentRoot), { hashes: true })).problems);
    await markContentRestored(store, documents, restorable);
    expect(await store.audit.count()).toBe(3);
    await store.close();
  });
});
