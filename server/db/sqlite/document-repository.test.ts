import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqlite } from './database.js';
import { buildFilter } from './document-repository.js';
import { SQLITE_MIGRATIONS, SqliteStore } from './store.js';
import type { DocumentQuery, DocumentRecord, OutboxEvent } from '../types.js';

const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';

function storeWithPatient(): SqliteStore {
  const store = SqliteStore.open(':memory:');
  store.db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run('org', 'Org', 'x');
  store.db.prepare('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(PATIENT, 'P', 'p', 'x', 'x');
  return store;
}

function eventFor(document: DocumentRecord): OutboxEvent {
  return { id: randomUUID(), eventType: 'document.created', patientId: document.patientId, organizationId: 'org', operationId: 'op', occurredAt: document.createdAt, data: { documentId: document.id } };
}

function record(fileName: string, path: string, minute: number): DocumentRecord {
  const at = new Date(Date.UTC(2026, 10, 21, 9, minute)).toISOString();
  return {
    id: randomUUID(),
    patientId: PATIENT,
    organizationId: 'org',
    fileName,
    fileType: 'STL',
    path,
    createdAt: at,
    lastModifiedAt: at,
    hasContent: false,
    fileSize: null,
    sha256: null,
    version: 0,
    contentKey: null,
    contentType: null,
    thumbnailKey: null,
    createdBy: 'test',
  };
}

const query = (overrides: Partial<DocumentQuery> = {}): DocumentQuery => ({
  patientId: PATIENT,
  sortBy: 'lastModifiedAt',
  sortDirection: 'DESC',
  offset: 0,
  limit: 50,
  ...overrides,
});

describe('SqliteDocuments.search', () => {
  it('keeps whole-patient totals right through uploads and deletions (trigger-maintained counts)', async () => {
    const store = storeWithPatient();
    const documents = [record('a.stl', '/a', 1), record('b.stl', '/a/b', 2), record('c.stl', '/c', 3)];
    for (const document of documents) await store.documents.create(document, []);
    expect((await store.documents.search(query())).total).toBe(3);
    store.db.prepare('UPDATE documents SET has_content = 1 WHERE id = ?').run(documents[0]!.id);
    expect((await store.documents.search(query({ hasContent: true }))).total).toBe(1);
    expect((await store.documents.search(query({ hasContent: false }))).total).toBe(2);
    store.db.prepare("UPDATE documents SET deleted_at = 'now' WHERE id = ?").run(documents[1]!.id);
    expect((await store.documents.search(query())).total).toBe(2);
    expect((await store.documents.search(query())).rows.map((row) => row.fileName)).toEqual(['c.stl', 'a.stl']);
    await store.close();
  });

  it('matches a folder and its descendants but not siblings that share the prefix', async () => {
    const store = storeWithPatient();
    const names: Array<[string, string]> = [['/a', 'in.stl'], ['/a/b', 'below.stl'], ['/a-b', 'dash.stl'], ['/a.b', 'dot.stl'], ['/ab', 'ab.stl'], ['/a b', 'space.stl']];
    for (const [index, [path, fileName]] of names.entries()) await store.documents.create(record(fileName, path, index), []);
    const found = await store.documents.search(query({ pathKey: '/a', sortBy: 'fileName', sortDirection: 'ASC' }));
    expect(found.rows.map((row) => row.fileName)).toEqual(['below.stl', 'in.stl']);
    expect(found.total).toBe(2);
    await store.close();
  });

  it('walks a large folder in time order and a small one through the path index, with the same result', async () => {
    const store = storeWithPatient();
    for (let index = 0; index < 2100; index += 1) await store.documents.create(record(`big-${index}.stl`, '/big', index % 60), []);
    for (let index = 0; index < 30; index += 1) await store.documents.create(record(`small-${index}.stl`, '/small', index), []);
    const big = await store.documents.search(query({ pathKey: '/big', limit: 5 }));
    expect(big.total).toBe(2100);
    const times = big.rows.map((row) => row.lastModifiedAt);
    expect(times).toEqual([...times].sort().reverse());
    const small = await store.documents.search(query({ pathKey: '/small', limit: 100 }));
    expect(small.total).toBe(30);
    expect(small.rows[0]!.fileName).toBe('small-29.stl');
    await store.close();
  });
});

describe('SqliteDocuments.create', () => {
  it('commits concurrent creates together, and a duplicate among them fails alone', async () => {
    const store = storeWithPatient();
    const documents = Array.from({ length: 20 }, (_, index) => record(`doc-${index}.stl`, '/batch', index));
    const duplicate = { ...record('DOC-3.STL', '/BATCH', 30) };
    const outcomes = await Promise.allSettled([...documents, duplicate].map((document) => store.documents.create(document, [])));
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(20);
    const rejected = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    expect(rejected).toHaveLength(1);
    expect((rejected[0]!.reason as Error).name).toBe('DuplicateError');
    expect((await store.documents.search(query({ pathKey: '/batch', limit: 100 }))).total).toBe(20);
    await store.close();
  });

  it('records an event for each stored create and none for the refused duplicate', async () => {
    const store = storeWithPatient();
    const first = record('scan.stl', '/a', 1);
    const again = record('SCAN.stl', '/A', 2);
    const other = record('other.stl', '/a', 3);
    const outcomes = await Promise.allSettled([first, again, other].map((document) => store.documents.create(document, [eventFor(document)])));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const events = await store.outbox.after(0, 10);
    expect(events.map((event) => event.data.documentId)).toEqual([first.id, other.id]);
    await store.close();
  });

  it('keeps a create that fails for another reason (an unknown patient) from failing the others in its batch', async () => {
    const store = storeWithPatient();
    const good = [record('a.stl', '/x', 1), record('b.stl', '/x', 2)];
    const orphan = { ...record('c.stl', '/x', 3), patientId: randomUUID() };
    const outcomes = await Promise.allSettled([good[0]!, orphan, good[1]!].map((document) => store.documents.create(document, [eventFor(document)])));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(((outcomes[1] as PromiseRejectedResult).reason as { code?: string }).code).toBe('SQLITE_CONSTRAINT_FOREIGNKEY');
    expect((await store.documents.search(query({ pathKey: '/x', limit: 10 }))).rows.map((row) => row.fileName).sort()).toEqual(['a.stl', 'b.stl']);
    expect((await store.outbox.after(0, 10)).map((event) => event.data.documentId)).toEqual([good[0]!.id, good[1]!.id]);
    await store.close();
  });
});

describe('005-documents-by-folder', () => {
  it('keeps every document, deleted ones and uploaded versions, and the counters go on counting', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-migration-'));
    const file = path.join(dir, 'db.sqlite');
    const before = new SqliteStore(openSqlite(file, SQLITE_MIGRATIONS.filter((migration) => migration.name !== '005-documents-by-folder')));
    before.db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run('org', 'Org', 'x');
    before.db.prepare('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(PATIENT, 'P', 'p', 'x', 'x');
    const kept = [record('a.stl', '/a', 1), record('b.stl', '/a/b', 2), record('c.pdf', '/c', 3)];
    const deleted = record('gone.stl', '/a', 4);
    for (const document of [...kept, deleted]) await before.documents.create(document, []);
    await before.content.remove(PATIENT, deleted.id, { at: 'now', by: 'test' }, []);
    before.db
      .prepare(
        `INSERT INTO document_versions (document_id, version, file_type, file_size, sha256, content_key, content_type, thumbnail_status, uploaded_at, uploaded_by)
         VALUES (?, 1, 'STL', 3, 'abc', 'key-1', 'model/stl', 'none', 'x', 'test')`,
      )
      .run(kept[0]!.id);
    const pageBefore = await before.documents.search(query());
    // Migrations run in order: an installation that had not reached 005 had none of the later
    // columns either. The store's statements need them, so they are taken out again here and added
    // back after 005 by their own migration.
    before.db.exec("ALTER TABLE documents DROP COLUMN scanned_at; ALTER TABLE document_versions DROP COLUMN scanned_at; DELETE FROM schema_migrations WHERE name = '011-scanned-at'");
    await before.close();

    const store = SqliteStore.open(file);
    expect(await store.documents.search(query())).toEqual(pageBefore);
    expect(pageBefore.total).toBe(3);
    expect(store.db.prepare('SELECT COUNT(*) FROM documents').pluck().get()).toBe(4);
    expect(await store.content.versions(kept[0]!.id)).toHaveLength(1);
    expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
    // The parent key of document_versions is still enforced.
    expect(() => store.db.prepare(`INSERT INTO document_versions (document_id, version, file_type, file_size, sha256, content_key, content_type, thumbnail_status, uploaded_at, uploaded_by)
      VALUES ('no-such-document', 1, 'STL', 3, 'abc', 'key-2', 'model/stl', 'none', 'x', 'test')`).run()).toThrow(/FOREIGN KEY/);
    const counter = await store.documents.changeCounter(PATIENT);
    await store.documents.create(record('d.stl', '/a', 5), []);
    expect(await store.documents.changeCounter(PATIENT)).toBeGreaterThan(counter);
    expect((await store.documents.search(query())).total).toBe(4);
    expect((await store.documents.search(query({ pathKey: '/a' }))).rows.map((row) => row.fileName)).toEqual(['d.stl', 'b.stl', 'a.stl']);
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('pages every sort, both directions, small folders, large folders and the whole patient exactly as a plain sort of all matches would', async () => {
    const store = storeWithPatient();
    const types = ['STL', 'PLY', 'PDF', 'DCM'];
    const documents: DocumentRecord[] = [];
    for (let index = 0; index < 2300; index += 1) {
      // Folders of 1, 120 and 2,100 documents (below and above LARGE_RESULT), sizes with NULLs and
      // ties, times with ties: the page must still be the same slice of one total order.
      const folder = index < 2100 ? '/big/scans' : index < 2220 ? `/small/${index % 3 === 0 ? 'deep/er' : 'one'}` : '/smallest';
      const document = { ...record(`Scan-${String((index * 7919) % 2300).padStart(4, '0')}.stl`, folder, index % 37), fileType: types[index % 4]!, fileSize: index % 5 === 0 ? null : (index * 13) % 97 };
      documents.push(document);
      await store.documents.create(document, []);
    }
    const compareKey = (document: DocumentRecord, sortBy: DocumentQuery['sortBy']): string | number | null =>
      sortBy === 'lastModifiedAt' ? document.lastModifiedAt : sortBy === 'fileName' ? document.fileName.toLowerCase() : sortBy === 'fileSize' ? document.fileSize : sortBy === 'fileType' ? document.fileType : document.path.toLowerCase();
    const ascending = (sortBy: DocumentQuery['sortBy']) => (a: DocumentRecord, b: DocumentRecord): number => {
      const x = compareKey(a, sortBy);
      const y = compareKey(b, sortBy);
      if (x !== y) return x === null ? -1 : y === null ? 1 : x < y ? -1 : 1;
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    };
    for (const pathKey of [undefined, '/big', '/small', '/smallest']) {
      const matches = documents.filter((document) => pathKey === undefined || document.path === pathKey || document.path.startsWith(`${pathKey}/`));
      for (const sortBy of ['lastModifiedAt', 'fileName', 'fileSize', 'fileType', 'path'] as const) {
        for (const sortDirection of ['ASC', 'DESC'] as const) {
          const expected = [...matches].sort(ascending(sortBy));
          if (sortDirection === 'DESC') expected.reverse();
          for (const offset of [0, 50, Math.max(0, matches.length - 30)]) {
            const found = await store.documents.search(query({ pathKey, sortBy, sortDirection, offset, limit: 50 }));
            expect(found.total).toBe(matches.length);
            expect(found.rows.map((row) => row.id), `${pathKey ?? '/'} ${sortBy} ${sortDirection} from ${offset}`).toEqual(expected.slice(offset, offset + 50).map((document) => document.id));
          }
        }
      }
    }
    const byIds = await store.documents.search(query({ ids: [documents[5]!.id, documents[2250]!.id], sortBy: 'fileSize', sortDirection: 'ASC' }));
    expect(byIds.rows.map((row) => row.id)).toEqual([documents[5]!, documents[2250]!].sort(ascending('fileSize')).map((document) => document.id));
    await store.close();
  });

  it('counts a folder from the covering index alone, and pages a small folder from one range of the table', () => {
    const store = storeWithPatient();
    const { where } = buildFilter(query({ pathKey: '/a', hasContent: true, fileType: 'STL', nameContains: 'scan' }));
    const plan = (sql: string) =>
      (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({ patientId: PATIENT, pathKey: '/a', pathHigh: '/a0', pathLength: 2, hasContent: 1, fileType: 'STL', nameContains: 'scan' }) as Array<{ detail: string }>)
        .map((row) => row.detail)
        .join('; ');
    expect(plan(`SELECT COUNT(*) FROM documents INDEXED BY documents_by_path WHERE ${where}`)).toMatch(/USING COVERING INDEX documents_by_path/);
    expect(plan(`SELECT id FROM documents INDEXED BY documents_by_modified WHERE ${where} ORDER BY last_modified_at DESC, id DESC`)).toMatch(/USING COVERING INDEX documents_by_modified/);
    expect(plan(`SELECT * FROM documents NOT INDEXED WHERE ${where}`)).toMatch(/USING PRIMARY KEY \(patient_id=\? AND path_key>\? AND path_key<\?\)/);
  });

  it('compares no column with a bare parameter (with sqlite_stat4, binding one makes every run prepare the statement again)', () => {
    const filters = [
      query({ pathKey: '/a', hasContent: true, fileType: 'STL', nameContains: 'scan', scannedFrom: '2026-01-01T00:00:00.000Z', scannedTo: '2026-02-01T00:00:00.000Z' }),
      query({ ids: [randomUUID(), randomUUID()] }),
    ];
    // A comparison (=, <, >=, an IN list) with `@name` rather than `+@name`; a function's argument is no comparison.
    for (const filter of filters) expect(buildFilter(filter).where).not.toMatch(/(?:[=<>]|\bIN \(|,)\s*@(?!nameContains|pathLength)/);
  });
});

describe('006-case-folded-keys', () => {
  it('folds the keys of existing names again (final sigma, long s), keeps a pair that now clashes, and refuses a new clash', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-migration-'));
    const file = path.join(dir, 'db.sqlite');
    const before = new SqliteStore(openSqlite(file, SQLITE_MIGRATIONS.filter((migration) => migration.name !== '006-case-folded-keys')));
    before.db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run('org', 'Org', 'x');
    before.db.prepare('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(PATIENT, 'ΝΙΚΟΣ', 'νικος', 'x', 'x');
    const greek = record('ΟΔΟΣ.pdf', '/Σπίτι', 1);
    const longS = record('ſcan.stl', '/a', 2);
    const plain = record('scan.stl', '/a', 3);
    // Stored under another name first: today's keys would already refuse it next to scan.stl.
    for (const document of [greek, { ...longS, fileName: 'placeholder.stl' }, plain]) await before.documents.create(document, []);
    before.db.prepare('UPDATE documents SET file_name = ? WHERE id = ?').run(longS.fileName, longS.id);
    // The keys as the previous foldKey (NFC, then toLowerCase) stored them.
    const oldKey = (value: string) => value.normalize('NFC').toLowerCase();
    for (const document of [greek, longS, plain]) {
      before.db.prepare('UPDATE documents SET name_key = ?, path_key = ? WHERE id = ?').run(oldKey(document.fileName), oldKey(document.path), document.id);
    }
    await before.close();

    const store = SqliteStore.open(file);
    const keys = (id: string) => store.db.prepare('SELECT name_key, path_key FROM documents WHERE id = ?').raw().get(id);
    expect(keys(greek.id)).toEqual(['οδοσ.pdf', '/σπίτι']);
    expect(keys(plain.id)).toEqual(['scan.stl', '/a']);
    expect(keys(longS.id)).toEqual(['ſcan.stl', '/a']);
    expect(store.db.prepare('SELECT name_key FROM patients WHERE id = ?').pluck().get(PATIENT)).toBe('νικοσ');
    await expect(store.documents.create(record('οδοσ.pdf', '/ΣΠΊΤΙ', 4), [])).rejects.toThrow(/already exists/);
    expect((await store.documents.search(query({ pathKey: '/σπίτι' }))).rows.map((row) => row.fileName)).toEqual(['ΟΔΟΣ.pdf']);
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('folds the keys of stored look-alike names again; a pair that now clashes both stays reachable and a new clash is refused', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-migration-'));
    const file = path.join(dir, 'db.sqlite');
    const before = new SqliteStore(openSqlite(file, SQLITE_MIGRATIONS.filter((migration) => migration.name !== '009-look-alike-keys')));
    before.db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run('org', 'Org', 'x');
    before.db.prepare('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(PATIENT, '\uFF2A\uFF41\uFF4E\uFF45 Roe', '\uFF4A\uFF41\uFF4E\uFF45 roe', 'x', 'x');
    const plain = record('scan.stl', '/a', 1);
    const hidden = record('scan\u200B.stl', '/a', 2);
    const fullwidth = record('\uFF53\uFF43\uFF41\uFF4E2.stl', '/a', 3);
    const sharp = record('Straße.pdf', '/a', 4);
    const capitals = record('STRASSE.pdf', '/a', 5);
    const dotted = record('report.pdf.', '/b.', 6);
    const all = [plain, hidden, fullwidth, sharp, capitals, dotted];
    // Stored as an older server stored them: its names rules let these through, its keys kept them apart.
    const oldKey = (value: string) => value.normalize('NFC').toLowerCase();
    for (const document of all) await before.documents.create({ ...document, fileName: `placeholder ${document.id}.stl` }, []);
    for (const document of all) {
      before.db.prepare('UPDATE documents SET file_name = ?, name_key = ?, path_key = ? WHERE id = ?').run(document.fileName, oldKey(document.fileName), oldKey(document.path), document.id);
    }
    await before.close();

    const store = SqliteStore.open(file);
    const keys = (id: string) => store.db.prepare('SELECT name_key, path_key FROM documents WHERE id = ?').raw().get(id);
    expect(keys(plain.id)).toEqual(['scan.stl', '/a']);
    expect(keys(fullwidth.id)).toEqual(['scan2.stl', '/a']);
    expect(keys(capitals.id)).toEqual(['strasse.pdf', '/a']);
    expect(keys(dotted.id)).toEqual(['report.pdf', '/b']);
    // The look-alike of a name whose key did not change keeps its old key: both documents stay.
    expect(keys(hidden.id)).toEqual(['scan\u200b.stl', '/a']);
    expect(keys(sharp.id)).toEqual(['straße.pdf', '/a']);
    expect(store.db.prepare('SELECT name_key FROM patients WHERE id = ?').pluck().get(PATIENT)).toBe('jane roe');
    for (const document of all) expect((await store.documents.get(PATIENT, document.id))?.fileName).toBe(document.fileName);
    expect((await store.documents.search(query({ pathKey: '/a', limit: 50 }))).rows.map((row) => row.fileName).sort()).toEqual([plain, hidden, fullwidth, sharp, capitals].map((document) => document.fileName).sort());
    for (const [fileName, folder] of [['SCAN.stl', '/a'], ['scan2.STL', '/A'], ['strasse.PDF', '/a'], ['report.pdf', '/b']] as const) {
      await expect(store.documents.create(record(fileName, folder, 7), [])).rejects.toThrow(/already exists/);
    }
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
