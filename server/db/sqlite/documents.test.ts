import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from './store.js';
import type { DocumentQuery, DocumentRecord } from '../types.js';

const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';

function storeWithPatient(): SqliteStore {
  const store = SqliteStore.open(':memory:');
  store.db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run('org', 'Org', 'x');
  store.db.prepare('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(PATIENT, 'P', 'p', 'x', 'x');
  return store;
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
});
