/**
 * The Store contract (types.ts), one suite for every implementation: the embedded SQLite file and
 * a real PostgreSQL (the worker's cluster, test/helpers/postgres.ts). Each test opens a
 * new database, and a second store on the same database stands for another process (the admin
 * CLI, another instance).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testPostgres } from '../../test/helpers/postgres.js';
import { PostgresStore } from './postgres/store.js';
import { SqliteStore } from './sqlite/store.js';
import { DuplicateError, IdentifierTakenError, NO_THUMBNAIL, type AuditEntryRecord, type DocumentQuery, type DocumentRecord, type DocumentVersionRecord, type OutboxEvent, type Store } from './types.js';

const folders: string[] = [];
const opened: Store[] = [];
afterAll(async () => {
  for (const store of opened) await store.close().catch(() => undefined);
  for (const folder of folders) fs.rmSync(folder, { recursive: true, force: true });
});

interface Backend {
  name: 'sqlite' | 'postgres';
  /** A new database without records (on PostgreSQL, with the schema copied in); `open` opens a store on it (again for a second process). */
  database(): Promise<{ open(): Promise<Store> }>;
}

const track = <T extends Store>(store: T): T => {
  opened.push(store);
  return store;
};

const BACKENDS: Backend[] = [
  {
    name: 'sqlite',
    async database() {
      const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-contract-'));
      folders.push(folder);
      return { open: async () => track(SqliteStore.open(path.join(folder, 'db.sqlite'))) };
    },
  },
  {
    name: 'postgres',
    async database() {
      const url = await (await testPostgres()).createMigratedDatabase();
      return { open: async () => track(await PostgresStore.open(url, { webhookLeaseMs: 60_000 })) };
    },
  },
];

const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const OTHER_ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a02';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const AT = '2026-11-21T09:00:00.000Z';

const minute = (n: number): string => new Date(Date.UTC(2026, 10, 21, 9, n)).toISOString();

function event(eventType: OutboxEvent['eventType'], patientId: string | null, data: Record<string, unknown> = {}): OutboxEvent {
  return { id: randomUUID(), eventType, patientId, organizationId: ORG, operationId: randomUUID(), occurredAt: AT, data };
}

function document(fileName: string, folder: string, at: number, overrides: Partial<DocumentRecord> = {}): DocumentRecord {
  return {
    id: randomUUID(),
    patientId: PATIENT,
    organizationId: ORG,
    fileName,
    fileType: 'STL',
    path: folder,
    createdAt: minute(at),
    lastModifiedAt: minute(at),
    hasContent: false,
    fileSize: null,
    sha256: null,
    version: 0,
    contentKey: null,
    contentType: null,
    thumbnailKey: null,
    createdBy: 'scanner-pc-1',
    scannedAt: null,
    ...overrides,
  };
}

function version(documentId: string, number: number, overrides: Partial<DocumentVersionRecord> = {}): DocumentVersionRecord {
  return {
    documentId,
    version: number,
    fileType: 'STL',
    originalFileName: 'scan.stl',
    fileSize: 5_000_000_000 + number,
    sha256: `${'ab'.repeat(31)}0${number}`,
    contentKey: `content/${documentId}/${number}`,
    contentType: 'model/stl',
    thumbnailKey: null,
    thumbnailStatus: 'pending',
    thumbnailError: null,
    uploadedAt: minute(30 + number),
    uploadedBy: 'scanner-pc-1',
    contentLostAt: null,
    scannedAt: null,
    ...overrides,
  };
}

const search = (overrides: Partial<DocumentQuery> = {}): DocumentQuery => ({ patientId: PATIENT, sortBy: 'lastModifiedAt', sortDirection: 'DESC', offset: 0, limit: 50, ...overrides });

/** A store with two organizations and a patient both may see (consent from ORG only). */
async function seeded(backend: Backend): Promise<{ store: Store; other: () => Promise<Store> }> {
  const database = await backend.database();
  const store = await database.open();
  await store.organizations.upsert({ id: ORG, name: 'Smile Clinic', createdAt: AT });
  await store.organizations.upsert({ id: OTHER_ORG, name: 'Other Clinic', createdAt: AT });
  await store.patients.create({ id: PATIENT, name: 'Jane Roe', organizations: [ORG, OTHER_ORG], consents: [ORG], identifiers: [], birthDate: null, createdAt: AT, updatedAt: AT }, []);
  return { store, other: () => database.open() };
}

/** Byte order of UTF-8, as the stores compare folded names and paths. */
const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe.each(BACKENDS)('Store contract on $name', (backend) => {
  it('organizations: created, updated, unchanged; listed by name in byte order', async () => {
    const store = await (await backend.database()).open();
    expect(await store.organizations.upsert({ id: ORG, name: 'école', createdAt: AT })).toBe('created');
    expect(await store.organizations.upsert({ id: ORG, name: 'école', createdAt: AT })).toBe('unchanged');
    expect(await store.organizations.upsert({ id: OTHER_ORG, name: 'fichier', createdAt: AT })).toBe('created');
    expect(await store.organizations.get(ORG)).toEqual({ id: ORG, name: 'école', createdAt: AT });
    expect((await store.organizations.list()).map((organization) => organization.name)).toEqual(['fichier', 'école']);
    expect(await store.organizations.upsert({ id: ORG, name: 'Zahn', createdAt: AT })).toBe('updated');
    expect((await store.organizations.list()).map((organization) => organization.name)).toEqual(['Zahn', 'fichier']);
    expect(await store.organizations.get('missing')).toBeUndefined();
  });

  it('patients: memberships, access with the change counter, events, and folded name search with totals', async () => {
    const { store } = await seeded(backend);
    expect(await store.patients.get(PATIENT)).toMatchObject({ name: 'Jane Roe', organizations: [ORG, OTHER_ORG].sort(), consents: [ORG] });
    expect(await store.patients.access(PATIENT, ORG)).toEqual({ exists: true, access: true, consent: true, documentChanges: 0 });
    expect(await store.patients.access(PATIENT, OTHER_ORG)).toMatchObject({ exists: true, access: true, consent: false });
    expect(await store.patients.access('missing', ORG)).toMatchObject({ exists: false, access: false, consent: false });
    const created = event('patient.created', 'p2');
    await store.patients.create({ id: 'p2', name: 'Émile Zola', organizations: [ORG], consents: [ORG], identifiers: [], birthDate: null, createdAt: AT, updatedAt: AT }, [created]);
    await store.patients.create({ id: 'p3', name: 'Fanny Ardant', organizations: [OTHER_ORG], consents: [OTHER_ORG], identifiers: [], birthDate: null, createdAt: AT, updatedAt: AT }, []);
    // Folded names in byte order: 'fanny…' < 'jane…' < 'émile…'.
    expect((await store.patients.list({}, 0, 10)).rows.map((patient) => patient.id)).toEqual(['p3', PATIENT, 'p2']);
    expect(await store.patients.list({}, 1, 1)).toMatchObject({ total: 3, rows: [{ id: PATIENT }] });
    expect(await store.patients.list({ name: 'ÉMILE' }, 0, 10)).toMatchObject({ total: 1, rows: [{ id: 'p2', name: 'Émile Zola', organizations: [ORG] }] });
    expect(await store.patients.list({ name: 'zola, EMILE' }, 0, 10)).toMatchObject({ total: 1, rows: [{ id: 'p2' }] });
    expect(await store.patients.list({ name: 'nobody' }, 0, 10)).toEqual({ rows: [], total: 0 });
    expect(await store.patients.list({ name: 'ja\u0000ne' }, 0, 10)).toEqual({ rows: [], total: 0 });
    expect(await store.patients.access('\u0000', ORG)).toMatchObject({ exists: false, access: false, consent: false });
    expect((await store.patients.listVisible(ORG, {}, 0, 10)).rows.map((patient) => patient.id)).toEqual([PATIENT, 'p2']);
    expect((await store.patients.listVisible(OTHER_ORG, {}, 0, 10)).rows.map((patient) => patient.id)).toEqual(['p3']);
    const updated = event('patient.updated', PATIENT);
    await store.patients.update({ id: PATIENT, name: 'Jane Doe', organizations: [ORG], consents: [], identifiers: [], birthDate: null, createdAt: AT, updatedAt: minute(5) }, [updated]);
    expect(await store.patients.get(PATIENT)).toMatchObject({ name: 'Jane Doe', organizations: [ORG], consents: [], updatedAt: minute(5) });
    expect(await store.patients.access(PATIENT, ORG)).toMatchObject({ access: true, consent: false });
    expect((await store.outbox.after(0, 10)).map((stored) => stored.id)).toEqual([created.id, updated.id]);
  });

  it('patients: identifiers and birth dates round-trip, filter with the name, and are unique per organization and system', async () => {
    const { store, other } = await seeded(backend);
    const chart = (value: string) => ({ system: 'chart', value });
    const patient = (id: string, name: string, organizations: string[], identifiers: { system: string; value: string }[], birthDate: string | null) =>
      ({ id, name, organizations, consents: organizations, identifiers, birthDate, createdAt: AT, updatedAt: AT });
    await store.patients.create(patient('john', 'Smith, John', [ORG], [chart('10231'), { system: 'itero', value: 'A|7' }], '1984-03-02'), []);
    await store.patients.create(patient('jon', 'Smith, Jon', [ORG], [chart('10232')], '1984-03-02'), []);
    // Another organization's patient may carry the same chart number: its chart is its own.
    await store.patients.create(patient('elsewhere', 'Smith, John', [OTHER_ORG], [chart('10231')], '1990-12-31'), []);
    expect(await store.patients.get('john')).toMatchObject({ identifiers: [chart('10231'), { system: 'itero', value: 'A|7' }], birthDate: '1984-03-02' });
    expect(await store.patients.get(PATIENT)).toMatchObject({ identifiers: [], birthDate: null });

    const ids = async (page: Promise<{ rows: { id: string }[]; total: number }>) => {
      const { rows, total } = await page;
      expect(total).toBe(rows.length);
      return rows.map((row) => row.id);
    };
    expect(await ids(store.patients.listVisible(ORG, { identifier: chart('10231') }, 0, 10))).toEqual(['john']);
    expect(await ids(store.patients.listVisible(OTHER_ORG, { identifier: chart('10231') }, 0, 10))).toEqual(['elsewhere']);
    expect(await ids(store.patients.listVisible(ORG, { identifier: { system: 'itero', value: 'A|7' } }, 0, 10))).toEqual(['john']);
    expect(await ids(store.patients.listVisible(ORG, { identifier: chart('1023') }, 0, 10))).toEqual([]);
    expect(await ids(store.patients.listVisible(ORG, { identifier: { system: 'CHART', value: '10231' } }, 0, 10))).toEqual([]);
    expect(await ids(store.patients.listVisible(ORG, { birthDate: '1984-03-02' }, 0, 10))).toEqual(['john', 'jon']);
    expect(await store.patients.listVisible(ORG, { birthDate: '1984-03-02' }, 1, 1)).toMatchObject({ total: 2, rows: [{ id: 'jon' }] });
    expect(await ids(store.patients.listVisible(ORG, { name: 'jon smith', birthDate: '1984-03-02' }, 0, 10))).toEqual(['jon']);
    expect(await ids(store.patients.listVisible(ORG, { name: 'smith', identifier: chart('10232'), birthDate: '1984-03-02' }, 0, 10))).toEqual(['jon']);
    expect(await ids(store.patients.listVisible(ORG, { name: 'smith', identifier: chart('10232'), birthDate: '1984-03-03' }, 0, 10))).toEqual([]);
    expect(await ids(store.patients.list({ identifier: chart('10231') }, 0, 10))).toEqual(['elsewhere', 'john']);
    expect(await ids(store.patients.list({ name: 'john', identifier: chart('10231'), birthDate: '1990-12-31' }, 0, 10))).toEqual(['elsewhere']);

    // Unique per organization and system, whoever writes: a second process sees the same rule.
    const second = await other();
    await expect(second.patients.create(patient('clash', 'Smith, Joan', [ORG], [chart('10231')], null), [event('patient.created', 'clash')])).rejects.toThrow(IdentifierTakenError);
    expect(await second.patients.get('clash')).toBeUndefined();
    await expect(store.patients.update(patient('jon', 'Smith, Jon', [ORG], [chart('10231')], '1984-03-02'), [])).rejects.toThrow(IdentifierTakenError);
    // Joining an organization where another patient holds the identifier clashes too.
    await expect(store.patients.update(patient('elsewhere', 'Smith, John', [OTHER_ORG, ORG], [chart('10231')], '1990-12-31'), [])).rejects.toThrow(IdentifierTakenError);
    expect(await store.patients.get('jon')).toMatchObject({ identifiers: [chart('10232')] });
    expect((await store.outbox.after(0, 10)).length).toBe(0);
    expect(await store.patients.identifierOwners('jon', [ORG, OTHER_ORG], [chart('10231'), chart('10232')])).toEqual([
      { organizationId: ORG, identifier: chart('10231'), patientId: 'john' },
      { organizationId: OTHER_ORG, identifier: chart('10231'), patientId: 'elsewhere' },
    ]);

    // Freed by a change of the list (or of the organizations), the identifier can be given again.
    await store.patients.update(patient('john', 'Smith, John', [ORG], [chart('99999')], null), []);
    await second.patients.update(patient('jon', 'Smith, Jon', [ORG], [chart('10231')], '1984-03-02'), []);
    expect(await ids(store.patients.listVisible(ORG, { identifier: chart('10231') }, 0, 10))).toEqual(['jon']);
    expect(await store.patients.get('john')).toMatchObject({ identifiers: [chart('99999')], birthDate: null });
  });

  it('clients: scopes and organizations round-trip, disabled and listed', async () => {
    const { store } = await seeded(backend);
    const client = { clientId: 'scanner-pc-1', name: 'Scanner', secretHash: 'hash', scopes: ['Patient.File.Read', 'Patient.File.Write'], organizations: [OTHER_ORG, ORG], createdAt: AT, disabledAt: null };
    await store.clients.create(client);
    expect(await store.clients.get('scanner-pc-1')).toEqual({ ...client, organizations: [ORG, OTHER_ORG].sort() });
    await store.clients.update({ ...client, scopes: ['Patient.Read'], organizations: [ORG], disabledAt: minute(3), secretHash: 'new' });
    expect(await store.clients.get('scanner-pc-1')).toMatchObject({ scopes: ['Patient.Read'], organizations: [ORG], disabledAt: minute(3), secretHash: 'new' });
    await store.clients.create({ ...client, clientId: 'a-first', organizations: [] });
    expect((await store.clients.list()).map((listed) => [listed.clientId, listed.organizations])).toEqual([
      ['a-first', []],
      ['scanner-pc-1', [ORG]],
    ]);
    expect(await store.clients.get('missing')).toBeUndefined();
  });

  it('orders, signing keys and meta', async () => {
    const { store } = await seeded(backend);
    const order = { id: 'order-1', patientId: PATIENT, organizationId: ORG, status: 'new', createdAt: AT, updatedAt: AT };
    await store.orders.create(order, [event('order.created', PATIENT)]);
    await store.orders.update({ ...order, status: 'done', updatedAt: minute(1) }, [event('order.updated', PATIENT)]);
    expect(await store.orders.get('order-1')).toEqual({ ...order, status: 'done', updatedAt: minute(1) });
    expect((await store.outbox.after(0, 10)).map((stored) => stored.eventType)).toEqual(['order.created', 'order.updated']);

    await store.signingKeys.add({ kid: 'k2', privateJwk: '{"d":2}', publicJwk: '{"n":2}', createdAt: minute(2), retiredAt: null });
    await store.signingKeys.add({ kid: 'k1', privateJwk: '{"d":1}', publicJwk: '{"n":1}', createdAt: minute(1), retiredAt: null });
    await store.signingKeys.retire('k1', minute(3));
    await store.signingKeys.retire('k1', minute(4));
    expect(await store.signingKeys.list()).toEqual([
      { kid: 'k1', privateJwk: '{"d":1}', publicJwk: '{"n":1}', createdAt: minute(1), retiredAt: minute(3) },
      { kid: 'k2', privateJwk: '{"d":2}', publicJwk: '{"n":2}', createdAt: minute(2), retiredAt: null },
    ]);
    await store.signingKeys.replacePrivateJwk('k2', '{"wrapped":2}');
    expect((await store.signingKeys.list()).find((key) => key.kid === 'k2')?.privateJwk).toBe('{"wrapped":2}');
    await store.signingKeys.remove('k1');
    expect((await store.signingKeys.list()).map((key) => key.kid)).toEqual(['k2']);

    expect(await store.meta.get('tenant-id')).toBeUndefined();
    expect(await store.meta.setIfAbsent('tenant-id', 'first')).toBe('first');
    expect(await store.meta.setIfAbsent('tenant-id', 'second')).toBe('first');
    await store.meta.set('tenant-id', 'third');
    expect(await store.meta.get('tenant-id')).toBe('third');
  });

  it('documents: a case-insensitive duplicate is refused with no event, ids are found in any case, and the change counter moves', async () => {
    const { store } = await seeded(backend);
    const first = document('Scan.STL', '/Upper/Jaw', 1);
    await store.documents.create(first, [event('document.created', PATIENT, { id: first.id })]);
    await expect(store.documents.create(document('scan.stl', '/upper/jaw', 2), [event('document.created', PATIENT)])).rejects.toBeInstanceOf(DuplicateError);
    expect(await store.outbox.after(0, 10)).toHaveLength(1);
    expect(await store.documents.get(PATIENT, first.id.toUpperCase())).toEqual(first);
    expect(await store.documents.get('other-patient', first.id)).toBeUndefined();
    expect(await store.content.find(first.id.toUpperCase())).toEqual(first);
    expect(await store.documents.changeCounter(PATIENT)).toBeGreaterThan(0);
    expect((await store.patients.access(PATIENT, ORG)).documentChanges).toBe(await store.documents.changeCounter(PATIENT));
  });

  it('documents: a create only if allowed writes nothing for an unknown patient or an organization without access or consent, and says which', async () => {
    const { store } = await seeded(backend);
    const counter = await store.documents.changeCounter(PATIENT);
    const refused = [
      [document('a.stl', '/', 1, { organizationId: OTHER_ORG }), { exists: true, access: true, consent: false }],
      [document('b.stl', '/', 2, { organizationId: '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a03' }), { exists: true, access: false, consent: false }],
      [document('c.stl', '/', 3, { patientId: '5f0e8a3c-1d2b-4c3d-8e9f-000000000009' }), { exists: false, access: false, consent: false }],
    ] as const;
    for (const [doc, answer] of refused) expect(await store.documents.createIfAllowed(doc, [event('document.created', doc.patientId)])).toEqual(answer);
    expect(await store.outbox.after(0, 10)).toEqual([]);
    expect((await store.documents.search(search())).total).toBe(0);
    expect(await store.documents.changeCounter(PATIENT)).toBe(counter);

    const allowed = document('a.stl', '/', 4);
    expect(await store.documents.createIfAllowed(allowed, [event('document.created', PATIENT, { id: allowed.id })])).toEqual({ exists: true, access: true, consent: true });
    expect(await store.documents.get(PATIENT, allowed.id)).toEqual(allowed);
    expect((await store.outbox.after(0, 10)).map((stored) => stored.data)).toEqual([{ id: allowed.id }]);
    await expect(store.documents.createIfAllowed(document('A.STL', '/', 5), [event('document.created', PATIENT)])).rejects.toBeInstanceOf(DuplicateError);
    expect(await store.outbox.after(0, 10)).toHaveLength(1);
  });

  it('documents: of creates of one name at once from two processes, one is stored with its event and the rest are duplicates', async () => {
    const { store, other } = await seeded(backend);
    const second = await other();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 6 }, (_, index) => (index % 2 === 0 ? store : second).documents.create(document(index % 2 === 0 ? 'Same.stl' : 'SAME.STL', '/jaw', index), [event('document.created', PATIENT)])),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    for (const outcome of outcomes) if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(DuplicateError);
    expect(await store.outbox.after(0, 10)).toHaveLength(1);
    expect((await second.documents.search(search())).total).toBe(1);
  });

  it('search: a folder and its descendants, not siblings sharing the prefix; filters; ids replace every filter', async () => {
    const { store } = await seeded(backend);
    const docs = [
      document('a.stl', '/a', 1),
      document('b.ply', '/a/b', 2, { fileType: 'PLY' }),
      document('sibling.stl', '/a-b', 3),
      document('dot.stl', '/a.b', 4),
      document('école.stl', '/A/é', 5),
      document('root.pdf', '/', 6, { fileType: 'PDF' }),
    ];
    for (const doc of docs) await store.documents.create(doc, []);
    const names = async (query: Partial<DocumentQuery>) => {
      const page = await store.documents.search(search({ sortBy: 'fileName', sortDirection: 'ASC', ...query }));
      expect(page.total).toBe(page.rows.length);
      return page.rows.map((row) => row.fileName);
    };
    expect(await names({ pathKey: '/a' })).toEqual(['a.stl', 'b.ply', 'école.stl']);
    expect(await names({ pathKey: '/a/b' })).toEqual(['b.ply']);
    expect(await names({ pathKey: '/' })).toHaveLength(6);
    expect(await names({ fileType: 'ply' })).toEqual(['b.ply']);
    expect(await names({ nameContains: 'ÉCO' })).toEqual(['école.stl']);
    expect(await names({ hasContent: true })).toEqual([]);
    expect(await names({ hasContent: false, pathKey: '/a' })).toEqual(['a.stl', 'b.ply', 'école.stl']);
    expect(await names({ ids: [docs[2]!.id.toUpperCase(), docs[5]!.id], pathKey: '/a', fileType: 'PLY' })).toEqual(['root.pdf', 'sibling.stl']);
    expect(await store.documents.search(search({ offset: 10 }))).toEqual({ rows: [], total: 6 });
  });

  it('search: every sort, both directions, pages exactly as one byte-order sort of all matches (nulls first ascending)', async () => {
    const { store } = await seeded(backend);
    const names = ['école', 'fichier', 'Zahn', 'zahn-2', 'a_b', 'ab', 'A1', 'ü', 'u', '10', '9'];
    const docs = names.map((name, index) =>
      document(`${name}.stl`, ['/x', '/X/é', '/x-y', '/é', '/'][index % 5]!, index % 3, {
        fileType: ['STL', 'PLY', 'OBJ'][index % 3]!,
        fileSize: index % 4 === 0 ? null : (index * 7) % 5,
        // Some scanned before, some after others' uploads, some not dated (they sort by their upload).
        scannedAt: index % 3 === 0 ? null : minute((index * 5) % 4),
      }),
    );
    for (const doc of docs) await store.documents.create(doc, []);
    const keyOf: Record<DocumentQuery['sortBy'], (doc: DocumentRecord) => string | number | null> = {
      lastModifiedAt: (doc) => doc.lastModifiedAt,
      fileName: (doc) => doc.fileName.toLowerCase(),
      fileSize: (doc) => doc.fileSize,
      fileType: (doc) => doc.fileType,
      path: (doc) => doc.path.toLowerCase(),
      scannedAt: (doc) => doc.scannedAt ?? doc.lastModifiedAt,
    };
    for (const sortBy of Object.keys(keyOf) as Array<DocumentQuery['sortBy']>) {
      for (const sortDirection of ['ASC', 'DESC'] as const) {
        const compare = (a: DocumentRecord, b: DocumentRecord): number => {
          const [x, y] = [keyOf[sortBy](a), keyOf[sortBy](b)];
          const order = x === y ? 0 : x === null ? -1 : y === null ? 1 : typeof x === 'number' ? x - (y as number) : byteOrder(x, y as string);
          return order !== 0 ? order : byteOrder(a.id, b.id);
        };
        const expected = [...docs].sort((a, b) => (sortDirection === 'ASC' ? compare(a, b) : compare(b, a))).map((doc) => doc.id);
        const paged: string[] = [];
        for (let offset = 0; offset < docs.length; offset += 4) {
          const page = await store.documents.search(search({ sortBy, sortDirection, offset, limit: 4 }));
          expect(page.total).toBe(docs.length);
          paged.push(...page.rows.map((row) => row.id));
        }
        expect(paged, `${sortBy} ${sortDirection}`).toEqual(expected);
      }
    }
  });

  it('content: one of two uploads racing from the same version wins; versions, thumbnails, deletion and key references', async () => {
    const { store, other } = await seeded(backend);
    const second = await other();
    const doc = document('scan.stl', '/', 1);
    await store.documents.create(doc, []);
    const before = await store.documents.changeCounter(PATIENT);
    // Either may win (on PostgreSQL they are two pools): only the winner's event is kept.
    const race = await Promise.all([
      store.content.commitVersion(version(doc.id, 1), 0, [event('document.uploaded', PATIENT)]),
      second.content.commitVersion(version(doc.id, 1, { sha256: 'f'.repeat(64) }), 0, [event('document.uploaded', PATIENT)]),
    ]);
    expect(race.filter(Boolean)).toHaveLength(1);
    expect(await store.content.commitVersion(version(doc.id, 2), 1, [])).toBe(true);
    expect(await store.content.commitVersion(version(doc.id, 3), 1, [])).toBe(false);
    expect(await store.documents.changeCounter(PATIENT)).toBeGreaterThan(before);
    expect(await store.content.find(doc.id)).toMatchObject({ hasContent: true, version: 2, fileSize: 5_000_000_002, contentKey: `content/${doc.id}/2`, thumbnailKey: null, lastModifiedAt: minute(32) });
    expect((await store.content.versions(doc.id.toUpperCase())).map((stored) => stored.version)).toEqual([2, 1]);
    expect(await store.content.version(doc.id, 2)).toEqual(version(doc.id, 2));
    expect((await store.content.pendingThumbnails(10)).map((pending) => pending.version)).toEqual([1, 2]);
    await store.content.setThumbnail(doc.id, 1, { status: 'ready', key: 'thumb/1', error: null });
    expect((await store.content.find(doc.id))?.thumbnailKey).toBeNull();
    await store.content.setThumbnail(doc.id, 2, { status: 'failed', key: null, error: 'not a mesh' });
    expect((await store.content.find(doc.id))?.thumbnailKey).toBe(NO_THUMBNAIL);
    expect(await store.content.version(doc.id, 2)).toMatchObject({ thumbnailStatus: 'failed', thumbnailError: 'not a mesh' });
    expect(await store.content.pendingThumbnails(10)).toEqual([]);
    expect(await store.content.isKeyReferenced('thumb/1')).toBe(true);
    expect(await store.content.isKeyReferenced(`content/${doc.id}/2`)).toBe(true);
    expect(await store.content.isKeyReferenced('nothing')).toBe(false);
    expect((await store.documents.search(search({ hasContent: true }))).total).toBe(1);
    expect(await store.content.remove(PATIENT, doc.id.toUpperCase(), { at: minute(40), by: 'scanner-pc-1' }, [event('document.deleted', PATIENT)])).toBe(true);
    expect(await store.content.remove(PATIENT, doc.id, { at: minute(41), by: 'scanner-pc-1' }, [])).toBe(false);
    expect(await store.content.find(doc.id)).toBeUndefined();
    expect(await store.documents.search(search())).toEqual({ rows: [], total: 0 });
    expect(await store.content.versions(doc.id)).toHaveLength(2);
    expect((await store.outbox.after(0, 10)).map((stored) => stored.eventType)).toEqual(['document.uploaded', 'document.deleted']);
  });

  it('content: thumbnail renders are counted per process that starts one, only while pending, and setting the thumbnail clears the count', async () => {
    const { store, other } = await seeded(backend);
    const second = await other();
    const doc = document('render.stl', '/', 1);
    await store.documents.create(doc, []);
    expect(await store.content.commitVersion(version(doc.id, 1), 0, [])).toBe(true);
    expect(await store.content.startThumbnailRender(doc.id, 1, 'process-a')).toBe(1);
    // Started again by the same process (after a full disk): still one.
    expect(await store.content.startThumbnailRender(doc.id, 1, 'process-a')).toBe(1);
    expect(await second.content.startThumbnailRender(doc.id, 1, 'process-b')).toBe(2);
    expect(await store.content.startThumbnailRender(doc.id, 1, 'process-c')).toBe(3);
    expect(await store.content.version(doc.id, 1)).toMatchObject({ thumbnailStatus: 'pending' });
    // Set back to pending (a thumbnail lost from the disk): counted from none again.
    await store.content.setThumbnail(doc.id, 1, { status: 'pending', key: null, error: null });
    expect(await store.content.startThumbnailRender(doc.id, 1, 'process-c')).toBe(1);
    await store.content.setThumbnail(doc.id, 1, { status: 'ready', key: 'thumb/1', error: null });
    expect(await store.content.startThumbnailRender(doc.id, 1, 'process-d')).toBeUndefined();
    expect(await store.content.startThumbnailRender(doc.id, 2, 'process-d')).toBeUndefined();
  });

  it('scan times: kept on create and on each version (and back with a restored version), found and sorted by a range that counts undated documents by their upload', async () => {
    const { store } = await seeded(backend);
    const scanned = document('80021_Pearson_0.stl', '/scans', 1, { scannedAt: '2026-11-20T16:45:00.000Z' });
    const undated = document('referral.pdf', '/scans', 2);
    await store.documents.create(scanned, []);
    await store.documents.create(undated, []);
    expect(await store.documents.get(PATIENT, scanned.id)).toEqual(scanned);
    expect((await store.documents.get(PATIENT, undated.id))?.scannedAt).toBeNull();
    await store.content.commitVersion(version(scanned.id, 1, { scannedAt: '2026-11-20T16:45:00.000Z' }), 0, []);
    await store.content.commitVersion(version(scanned.id, 2, { scannedAt: '2026-11-20T16:50:00.000Z' }), 1, []);
    await store.content.commitVersion(version(undated.id, 1), 0, []);
    expect(await store.content.find(scanned.id)).toMatchObject({ version: 2, scannedAt: '2026-11-20T16:50:00.000Z', lastModifiedAt: minute(32) });
    expect((await store.content.versions(scanned.id)).map((stored) => [stored.version, stored.scannedAt])).toEqual([
      [2, '2026-11-20T16:50:00.000Z'],
      [1, '2026-11-20T16:45:00.000Z'],
    ]);
    expect(await store.content.version(undated.id, 1)).toEqual(version(undated.id, 1));
    const found = async (range: Partial<DocumentQuery>) => (await store.documents.search(search({ ...range, sortBy: 'scannedAt', sortDirection: 'ASC' }))).rows.map((row) => row.fileName);
    // The day before the uploads finds the scan; the uploads' day finds the undated file by its upload.
    expect(await found({ scannedFrom: '2026-11-20T00:00:00.000Z', scannedTo: '2026-11-21T00:00:00.000Z' })).toEqual(['80021_Pearson_0.stl']);
    expect(await found({ scannedFrom: '2026-11-21T00:00:00.000Z', scannedTo: '2026-11-22T00:00:00.000Z' })).toEqual(['referral.pdf']);
    expect(await found({ scannedFrom: '2026-11-20T16:50:00.000Z' })).toEqual(['80021_Pearson_0.stl', 'referral.pdf']);
    expect(await found({ scannedTo: '2026-11-20T16:50:00.000Z' })).toEqual([]);
    expect((await store.documents.search(search({ scannedFrom: '2026-11-20T00:00:00.000Z', scannedTo: '2026-11-21T00:00:00.000Z', hasContent: true }))).total).toBe(1);
    expect(await found({ scannedFrom: '2026-11-20T00:00:00.000Z', scannedTo: '2026-11-21T00:00:00.000Z', pathKey: '/scans', fileType: 'STL' })).toEqual(['80021_Pearson_0.stl']);
    // A lost version restored brings its scan time back with its content.
    const lost = { documentId: scanned.id, version: 2, contentKey: `content/${scanned.id}/2`, at: minute(50), reason: 'the file is missing' };
    const mark = { at: minute(50), requestId: 'run-1', detail: {} };
    await store.content.markLost(lost, [], mark);
    await store.content.markRestored({ ...lost, sha256: version(scanned.id, 2).sha256 }, [], mark);
    expect((await store.content.find(scanned.id))?.scannedAt).toBe('2026-11-20T16:50:00.000Z');
  });

  it('content: lost and restored marks change the document once, with their audit entry and event in the same transaction', async () => {
    const { store } = await seeded(backend);
    const doc = document('scan.stl', '/', 1);
    await store.documents.create(doc, []);
    await store.content.commitVersion(version(doc.id, 1), 0, []);
    await store.content.setThumbnail(doc.id, 1, { status: 'ready', key: 'thumb/1', error: null });
    const lost = { documentId: doc.id, version: 1, contentKey: `content/${doc.id}/1`, at: minute(50), reason: 'the file is missing' };
    const mark = { at: minute(50), requestId: 'run-1', detail: { by: 'admin CLI' } };
    expect(await store.content.markLost(lost, [event('document.lost', PATIENT)], mark)).toEqual({ version: true, current: true });
    expect(await store.content.markLost(lost, [event('document.lost', PATIENT)], mark)).toEqual({ version: false, current: false });
    expect(await store.content.find(doc.id)).toMatchObject({ hasContent: false, contentKey: null, fileSize: null, version: 1 });
    expect(await store.content.version(doc.id, 1)).toMatchObject({ contentLostAt: minute(50) });
    expect((await store.documents.search(search({ hasContent: false }))).total).toBe(1);
    const restored = { documentId: doc.id, version: 1, contentKey: `content/${doc.id}/1`, sha256: version(doc.id, 1).sha256 };
    expect(await store.content.markRestored({ ...restored, sha256: '0'.repeat(64) }, [], mark)).toEqual({ version: false, current: false });
    expect(await store.content.markRestored(restored, [event('document.restored', PATIENT)], { ...mark, requestId: 'run-2' })).toEqual({ version: true, current: true });
    expect(await store.content.find(doc.id)).toMatchObject({ hasContent: true, contentKey: `content/${doc.id}/1`, thumbnailKey: 'thumb/1', fileSize: 5_000_000_001 });
    expect((await store.outbox.after(0, 10)).map((stored) => stored.eventType)).toEqual(['document.lost', 'document.restored']);
    const entries = await store.audit.search({ documentId: doc.id, offset: 0, limit: 10 });
    expect(entries.rows.map((entry) => [entry.action, entry.requestId, entry.patientId, entry.organizationId, entry.status, entry.detail])).toEqual([
      ['mark-restored', 'run-2', PATIENT, ORG, 0, { by: 'admin CLI', current: true }],
      ['mark-lost', 'run-1', PATIENT, ORG, 0, { by: 'admin CLI', current: true }],
    ]);
  });

  it('documents: totals and change counters stay exact under concurrent writers from two processes', async () => {
    const { store, other } = await seeded(backend);
    const second = await other();
    const docs = Array.from({ length: 40 }, (_, index) => document(`doc-${index}.stl`, `/f${index % 4}`, index));
    await Promise.all(docs.map((doc, index) => (index % 2 === 0 ? store : second).documents.create(doc, [event('document.created', PATIENT)])));
    const counterAfterCreates = await store.documents.changeCounter(PATIENT);
    await Promise.all(
      docs.slice(0, 20).map((doc, index) => (index % 2 === 0 ? second : store).content.commitVersion(version(doc.id, 1), 0, [event('document.uploaded', PATIENT)])),
    );
    await Promise.all(docs.slice(30).map((doc, index) => (index % 2 === 0 ? store : second).content.remove(PATIENT, doc.id, { at: minute(59), by: 'x' }, [event('document.deleted', PATIENT)])));
    for (const reader of [store, second]) {
      expect((await reader.documents.search(search())).total).toBe(30);
      expect((await reader.documents.search(search({ hasContent: true }))).total).toBe(20);
      expect((await reader.documents.search(search({ hasContent: false }))).total).toBe(10);
      expect((await reader.documents.search(search({ pathKey: '/f0' }))).total).toBe(8);
    }
    // Every write moved the counter at least once (SQLite also counts a document's delete and its insert as two).
    expect(await store.documents.changeCounter(PATIENT)).toBeGreaterThanOrEqual(counterAfterCreates + 30);
    const events = await store.outbox.after(0, 1000);
    expect(events).toHaveLength(70);
    expect(events.map((stored) => stored.sequence)).toEqual([...events.map((stored) => stored.sequence)].sort((a, b) => a - b));
  });

  it('outbox: heads and whole events in commit order after a sequence, and this process hears of its appends', async () => {
    const { store } = await seeded(backend);
    let heard = 0;
    const stop = store.outbox.onAppended(() => (heard += 1));
    const events = [event('patient.updated', PATIENT, { n: 1 }), event('order.created', null, { n: 2 })];
    await store.orders.create({ id: 'o1', patientId: PATIENT, organizationId: ORG, status: 'new', createdAt: AT, updatedAt: AT }, events);
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard).toBeGreaterThan(0);
    stop();
    const all = await store.outbox.after(0, 10);
    expect(all.map(({ sequence: _sequence, ...rest }) => rest)).toEqual(events);
    const heads = await store.outbox.headsAfter(all[0]!.sequence, 10);
    expect(heads).toEqual([{ sequence: all[1]!.sequence, id: events[1]!.id, eventType: 'order.created', patientId: null, organizationId: ORG }]);
  });

  it('webhooks: queue, claim (held claims skipped), retry, dead letter, redelivery, counts', async () => {
    const { store, other } = await seeded(backend);
    const second = await other();
    await store.orders.create({ id: 'o1', patientId: PATIENT, organizationId: ORG, status: 'new', createdAt: AT, updatedAt: AT }, [event('order.created', PATIENT)]);
    const subscription = await store.webhooks.createSubscription({
      id: 'sub-1', organizationId: ORG, clientId: 'scanner-pc-1', events: ['order.all'], callback: 'https://example.test/hook', sealedSecret: 'sealed', status: 'active', disabledReason: null, createdAt: AT,
    });
    expect(subscription.fromSequence).toBe((await store.outbox.after(0, 10))[0]!.sequence);
    expect((await store.webhooks.activeSubscriptions()).map((active) => active.id)).toEqual(['sub-1']);
    expect(await second.webhooks.getSubscription('sub-1')).toEqual(subscription);
    const orderEvent = event('order.updated', PATIENT, { status: 'done' });
    await store.orders.update({ id: 'o1', patientId: PATIENT, organizationId: ORG, status: 'done', createdAt: AT, updatedAt: AT }, [orderEvent]);
    const [head] = await store.outbox.headsAfter(subscription.fromSequence, 10);
    const message = { id: 'msg-1', subscriptionId: 'sub-1', eventId: orderEvent.id, eventType: orderEvent.eventType, patientId: PATIENT, nextAttemptAt: 1000, createdAt: AT };
    await store.webhooks.enqueue([message], head!.sequence);
    expect(await store.webhooks.cursor()).toBe(head!.sequence);
    expect(await store.webhooks.counts()).toMatchObject({ queued: 1 });
    expect(await store.webhooks.dueSubscriptions(999, 10)).toEqual([]);
    expect(await store.webhooks.dueSubscriptions(1000, 10)).toEqual([{ subscriptionId: 'sub-1', due: 1 }]);
    const [claimed] = await store.webhooks.claimDue([{ subscriptionId: 'sub-1', limit: 10, skip: new Set() }], 1000);
    expect(claimed).toMatchObject({ id: 'msg-1', state: 'pending', attempts: 0, body: null, event: { occurredAt: AT, operationId: orderEvent.operationId, dataJson: '{"status":"done"}' } });
    expect(await store.webhooks.claimDue([{ subscriptionId: 'sub-1', limit: 10, skip: new Set(['msg-1']) }], 1000)).toEqual([]);
    const attempt = (n: number, outcome: 'retry' | 'dead' | 'delivered') => ({ messageId: 'msg-1', subscriptionId: 'sub-1', attempt: n, attemptedAt: minute(n), statusCode: outcome === 'delivered' ? 200 : 500, latencyMs: 3, error: outcome === 'delivered' ? null : 'HTTP 500', outcome });
    await store.webhooks.recordAttempts([{ attempt: attempt(1, 'retry'), state: 'pending', nextAttemptAt: 5000 }]);
    expect(await store.webhooks.dueSubscriptions(4999, 10)).toEqual([]);
    const [again] = await second.webhooks.claimDue([{ subscriptionId: 'sub-1', limit: 10, skip: new Set() }], 5000);
    expect(again).toMatchObject({ id: 'msg-1', attempts: 1, lastStatus: 500, lastError: 'HTTP 500' });
    await second.webhooks.recordAttempts([{ attempt: attempt(2, 'dead'), state: 'dead', nextAttemptAt: 6000 }]);
    expect(await store.webhooks.deadLetters('sub-1', 0, 10)).toMatchObject({ total: 1, rows: [{ id: 'msg-1', state: 'dead', attempts: 2, event: null }] });
    expect(await store.webhooks.counts(ORG)).toEqual({ queued: 0, delivered: 0, dead: 1, cancelled: 0, failed: 2 });
    expect(await store.webhooks.counts(OTHER_ORG)).toEqual({ queued: 0, delivered: 0, dead: 0, cancelled: 0, failed: 0 });
    expect(await store.webhooks.redeliver('sub-1', 'msg-1', 7000, minute(7))).toBe(true);
    expect(await store.webhooks.redeliver('sub-1', 'msg-1', 7000, minute(7))).toBe(false);
    const [third] = await store.webhooks.claimDue([{ subscriptionId: 'sub-1', limit: 10, skip: new Set() }], 7000);
    expect(third).toMatchObject({ id: 'msg-1', attempts: 0 });
    await store.webhooks.recordAttempts([{ attempt: attempt(1, 'delivered'), state: 'delivered', nextAttemptAt: 7001 }]);
    expect(await store.webhooks.counts()).toEqual({ queued: 0, delivered: 1, dead: 0, cancelled: 0, failed: 2 });
    const log = await store.webhooks.attempts('sub-1', 0, 2);
    expect(log.total).toBe(3);
    expect(log.rows.map((row) => [row.attempt, row.outcome])).toEqual([
      [1, 'delivered'],
      [2, 'dead'],
    ]);
  });

  it('webhooks: a deleted or 410-disabled subscription cancels its queue; a message in flight stays cancelled unless it was delivered', async () => {
    const { store } = await seeded(backend);
    const make = (id: string) =>
      store.webhooks.createSubscription({ id, organizationId: ORG, clientId: 'c', events: ['patient.all'], callback: `https://example.test/${id}`, sealedSecret: 's', status: 'active', disabledReason: null, createdAt: AT });
    await make('gone');
    await make('deleted');
    const messages = ['a', 'b', 'c'].flatMap((name) => [
      { id: `gone-${name}`, subscriptionId: 'gone', eventId: `e-${name}`, eventType: 'patient.updated' as const, patientId: PATIENT, nextAttemptAt: 0, createdAt: AT },
      { id: `deleted-${name}`, subscriptionId: 'deleted', eventId: `e-${name}`, eventType: 'patient.updated' as const, patientId: PATIENT, nextAttemptAt: 0, createdAt: AT },
    ]);
    await store.webhooks.enqueue(messages, 0);
    await store.webhooks.claimDue([{ subscriptionId: 'gone', limit: 3, skip: new Set() }, { subscriptionId: 'deleted', limit: 3, skip: new Set() }], 1);
    expect(await store.webhooks.deleteSubscription('deleted', minute(1))).toBe(true);
    expect(await store.webhooks.deleteSubscription('deleted', minute(1))).toBe(false);
    expect(await store.webhooks.getSubscription('deleted')).toBeUndefined();
    expect(await store.webhooks.subscriptionStatus('deleted')).toBeUndefined();
    const result = (messageId: string, subscriptionId: string, state: 'delivered' | 'pending' | 'cancelled', statusCode: number, disable?: string) => ({
      attempt: { messageId, subscriptionId, attempt: 1, attemptedAt: minute(2), statusCode, latencyMs: 1, error: statusCode < 300 ? null : `HTTP ${statusCode}`, outcome: (statusCode === 410 ? 'gone' : statusCode < 300 ? 'delivered' : 'retry') as 'gone' | 'delivered' | 'retry' },
      state,
      nextAttemptAt: 10,
      ...(disable ? { disableSubscription: disable } : {}),
    });
    await store.webhooks.recordAttempts([result('deleted-a', 'deleted', 'delivered', 200), result('deleted-b', 'deleted', 'pending', 500), result('gone-a', 'gone', 'cancelled', 410, 'the callback answered 410 Gone')]);
    await store.webhooks.cancel('gone', 'gone-c', 'consent revoked', minute(3));
    expect(await store.webhooks.subscriptionStatus('gone')).toBe('disabled');
    expect(await store.webhooks.getSubscription('gone')).toMatchObject({ status: 'disabled', disabledReason: 'the callback answered 410 Gone' });
    expect(await store.webhooks.activeSubscriptions()).toEqual([]);
    expect(await store.webhooks.counts()).toMatchObject({ queued: 0, delivered: 1, cancelled: 5 });
    expect(await store.webhooks.redeliver('gone', 'gone-b', 0, minute(4))).toBe(false);
    expect(await store.webhooks.recoverInterrupted()).toBe(0);
    expect(await store.webhooks.dueSubscriptions(1e15, 10)).toEqual([]);
    expect((await store.webhooks.listSubscriptions(ORG)).map((listed) => listed.id)).toEqual(['gone']);
  });

  it('webhooks prune: ended messages and their attempts go, queued, in-flight and (unless asked) dead ones stay, with the events they are made of', async () => {
    const { store } = await seeded(backend);
    await store.webhooks.createSubscription({ id: 'sub-1', organizationId: ORG, clientId: 'c', events: ['order.all'], callback: 'https://example.test/hook', sealedSecret: 's', status: 'active', disabledReason: null, createdAt: AT });
    const names = ['delivered', 'dead', 'retrying', 'in-flight', 'cancelled', 'recent'] as const;
    const events = Object.fromEntries(names.map((name) => [name, { ...event('order.updated', PATIENT, { name }), occurredAt: name === 'recent' ? minute(40) : AT }])) as Record<(typeof names)[number], OutboxEvent>;
    await store.orders.create({ id: 'o1', patientId: PATIENT, organizationId: ORG, status: 'new', createdAt: AT, updatedAt: AT }, Object.values(events));
    const heads = await store.outbox.headsAfter(0, 10);
    await store.webhooks.enqueue(
      names.map((name) => ({ id: `m-${name}`, subscriptionId: 'sub-1', eventId: events[name].id, eventType: 'order.updated' as const, patientId: PATIENT, nextAttemptAt: 0, createdAt: AT })),
      heads.at(-1)!.sequence,
    );
    // Not fanned out yet: the outbox still needs it, however old.
    const waiting = event('order.updated', PATIENT, { name: 'waiting' });
    await store.orders.update({ id: 'o1', patientId: PATIENT, organizationId: ORG, status: 'later', createdAt: AT, updatedAt: AT }, [waiting]);
    expect(await store.webhooks.claimDue([{ subscriptionId: 'sub-1', limit: 10, skip: new Set() }], 1)).toHaveLength(6);
    const attempt = (name: string, n: number, at: string, outcome: 'retry' | 'dead' | 'delivered', state: 'pending' | 'dead' | 'delivered', nextAttemptAt = 10) => ({
      attempt: { messageId: `m-${name}`, subscriptionId: 'sub-1', attempt: n, attemptedAt: at, statusCode: outcome === 'delivered' ? 200 : 500, latencyMs: 1, error: outcome === 'delivered' ? null : 'HTTP 500', outcome },
      state,
      nextAttemptAt,
    });
    await store.webhooks.recordAttempts([
      attempt('delivered', 1, minute(1), 'delivered', 'delivered'),
      attempt('dead', 1, minute(1), 'retry', 'pending'),
      attempt('retrying', 1, minute(2), 'retry', 'pending', 2000),
      attempt('recent', 1, minute(50), 'delivered', 'delivered'),
    ]);
    await store.webhooks.claimDue([{ subscriptionId: 'sub-1', limit: 1, skip: new Set(['m-in-flight']) }], 1e12);
    await store.webhooks.recordAttempts([attempt('dead', 2, minute(3), 'dead', 'dead')]);
    await store.webhooks.cancel('sub-1', 'm-cancelled', 'consent revoked', minute(4));
    expect(await store.webhooks.counts()).toEqual({ queued: 2, delivered: 2, dead: 1, cancelled: 1, failed: 3 });

    expect(await store.webhooks.prune({ before: minute(30), dead: false, batch: 2 })).toEqual({ delivered: 1, cancelled: 1, dead: 0, attempts: 1, events: 2 });
    expect(await store.webhooks.counts()).toEqual({ queued: 2, delivered: 1, dead: 1, cancelled: 0, failed: 3 });
    expect((await store.webhooks.deadLetters('sub-1', 0, 10)).rows.map((row) => row.id)).toEqual(['m-dead']);
    const kept = (await store.outbox.after(0, 10)).map((stored) => stored.data.name);
    expect(kept).toEqual(['dead', 'retrying', 'in-flight', 'recent', 'waiting']);
    // The message in flight finishes, the retrying one is still sent with its event.
    await store.webhooks.recordAttempts([attempt('in-flight', 1, minute(5), 'delivered', 'delivered')]);
    const [retry] = await store.webhooks.claimDue([{ subscriptionId: 'sub-1', limit: 10, skip: new Set() }], 2000);
    expect(retry).toMatchObject({ id: 'm-retrying', event: { dataJson: JSON.stringify({ name: 'retrying' }) } });
    expect(await store.webhooks.prune({ before: minute(30), dead: false })).toEqual({ delivered: 1, cancelled: 0, dead: 0, attempts: 1, events: 1 });

    expect(await store.webhooks.prune({ before: minute(30), dead: true })).toEqual({ delivered: 0, cancelled: 0, dead: 1, attempts: 2, events: 1 });
    expect(await store.webhooks.counts()).toEqual({ queued: 1, delivered: 1, dead: 0, cancelled: 0, failed: 1 });
    expect((await store.outbox.after(0, 10)).map((stored) => stored.data.name)).toEqual(['retrying', 'recent', 'waiting']);
    expect((await store.webhooks.attempts('sub-1', 0, 10)).rows.map((row) => row.messageId)).toEqual(['m-recent', 'm-retrying']);
    expect(await store.webhooks.prune({ before: minute(30), dead: true })).toEqual({ delivered: 0, cancelled: 0, dead: 0, attempts: 0, events: 0 });
  });

  it('webhooks prune: prunes at once, in two processes and in one, remove each row once, keep what the queue needs, and none fails', async () => {
    const { store, other } = await seeded(backend);
    const second = await other();
    await store.webhooks.createSubscription({ id: 'sub-1', organizationId: ORG, clientId: 'c', events: ['order.all'], callback: 'https://example.test/hook', sealedSecret: 's', status: 'active', disabledReason: null, createdAt: AT });
    const events = Array.from({ length: 240 }, (_, n) => event('order.updated', PATIENT, { n }));
    await store.orders.create({ id: 'o1', patientId: PATIENT, organizationId: ORG, status: 'new', createdAt: AT, updatedAt: AT }, events);
    const heads = await store.outbox.headsAfter(0, 1000);
    await store.webhooks.enqueue(
      events.map((sent, n) => ({ id: `m-${n}`, subscriptionId: 'sub-1', eventId: sent.id, eventType: 'order.updated' as const, patientId: PATIENT, nextAttemptAt: 0, createdAt: AT })),
      heads.at(-1)!.sequence,
    );
    const claimed = await store.webhooks.claimDue([{ subscriptionId: 'sub-1', limit: 1000, skip: new Set() }], 1);
    // Every tenth message waits for a retry: its event stays.
    await store.webhooks.recordAttempts(
      claimed.map((message) => {
        const retry = Number(message.id.slice(2)) % 10 === 0;
        return {
          attempt: { messageId: message.id, subscriptionId: 'sub-1', attempt: 1, attemptedAt: minute(1), statusCode: retry ? 500 : 200, latencyMs: 1, error: retry ? 'HTTP 500' : null, outcome: retry ? ('retry' as const) : ('delivered' as const) },
          state: retry ? ('pending' as const) : ('delivered' as const),
          nextAttemptAt: 1e12,
        };
      }),
    );
    const reports = await Promise.all([store, store, second].map((pruner) => pruner.webhooks.prune({ before: minute(30), dead: true, batch: 16 })));
    const total = (key: 'delivered' | 'attempts' | 'events') => reports.reduce((sum, report) => sum + report[key], 0);
    expect([total('delivered'), total('attempts'), total('events')]).toEqual([216, 216, 216]);
    expect(await store.webhooks.counts()).toEqual({ queued: 24, delivered: 0, dead: 0, cancelled: 0, failed: 24 });
    expect((await store.outbox.after(0, 1000)).map((stored) => stored.data.n)).toEqual(Array.from({ length: 24 }, (_, n) => n * 10));
  });

  it('webhooks prune: one cut short (its signal aborted) reports what it removed, and the next one finishes it, attempts included', async () => {
    const { store } = await seeded(backend);
    await store.webhooks.createSubscription({ id: 'sub-1', organizationId: ORG, clientId: 'c', events: ['order.all'], callback: 'https://example.test/hook', sealedSecret: 's', status: 'active', disabledReason: null, createdAt: AT });
    const events = Array.from({ length: 100 }, (_, n) => event('order.updated', PATIENT, { n }));
    await store.orders.create({ id: 'o1', patientId: PATIENT, organizationId: ORG, status: 'new', createdAt: AT, updatedAt: AT }, events);
    await store.webhooks.enqueue(
      events.map((sent, n) => ({ id: `m-${n}`, subscriptionId: 'sub-1', eventId: sent.id, eventType: 'order.updated' as const, patientId: PATIENT, nextAttemptAt: 0, createdAt: AT })),
      (await store.outbox.headsAfter(0, 1000)).at(-1)!.sequence,
    );
    const claimed = await store.webhooks.claimDue([{ subscriptionId: 'sub-1', limit: 1000, skip: new Set() }], 1);
    await store.webhooks.recordAttempts(
      claimed.map((message) => ({
        attempt: { messageId: message.id, subscriptionId: 'sub-1', attempt: 1, attemptedAt: minute(1), statusCode: 200, latencyMs: 1, error: null, outcome: 'delivered' as const },
        state: 'delivered' as const,
        nextAttemptAt: 10,
      })),
    );
    const stop = new AbortController();
    const cut = store.webhooks.prune({ before: minute(30), dead: false, batch: 5, signal: stop.signal });
    setImmediate(() => stop.abort());
    const first = await cut;
    expect(first.delivered).toBeLessThan(100);
    expect((await store.webhooks.counts()).delivered).toBe(100 - first.delivered);
    const rest = await store.webhooks.prune({ before: minute(30), dead: false });
    expect(first.delivered + rest.delivered).toBe(100);
    expect(first.events + rest.events).toBe(100);
    expect(await store.webhooks.attempts('sub-1', 0, 10)).toEqual({ rows: [], total: 0 });
  });

  it('audit: appended all or none, newest first with filters and totals, pruned by age', async () => {
    const { store } = await seeded(backend);
    const entry = (at: number, overrides: Partial<AuditEntryRecord> = {}): AuditEntryRecord => ({
      at: minute(at), action: 'search', outcome: 'allowed', status: 200, organizationId: ORG, clientId: 'scanner-pc-1', patientId: PATIENT, documentId: null, version: null, requestId: `req-${at}`, remoteAddress: '127.0.0.1', detail: { results: at }, ...overrides,
    });
    await store.audit.append([entry(1), entry(3, { action: 'download', documentId: 'd1', version: 2 }), entry(2, { outcome: 'refused', status: 403, detail: null, clientId: 'other' })]);
    await expect(store.audit.append([entry(4), { ...entry(5), requestId: null as unknown as string }])).rejects.toThrow();
    expect(await store.audit.count()).toBe(3);
    const all = await store.audit.search({ offset: 0, limit: 10 });
    expect(all.total).toBe(3);
    expect(all.rows.map((row) => row.requestId)).toEqual(['req-3', 'req-2', 'req-1']);
    expect(all.rows[0]).toMatchObject({ action: 'download', documentId: 'd1', version: 2, detail: { results: 3 }, remoteAddress: '127.0.0.1' });
    expect(typeof all.rows[0]!.id).toBe('number');
    expect(await store.audit.search({ clientId: 'other', offset: 0, limit: 10 })).toMatchObject({ total: 1, rows: [{ outcome: 'refused', status: 403, detail: null }] });
    expect((await store.audit.search({ patientId: PATIENT, since: minute(2), until: minute(3), offset: 0, limit: 10 })).rows.map((row) => row.requestId)).toEqual(['req-2']);
    expect(await store.audit.search({ action: 'search', outcome: 'allowed', organizationId: ORG, offset: 0, limit: 10 })).toMatchObject({ total: 1 });
    expect(await store.audit.search({ offset: 1, limit: 1 })).toMatchObject({ total: 3, rows: [{ requestId: 'req-2' }] });
    expect(await store.audit.prune(minute(3))).toBe(2);
    expect(await store.audit.count()).toBe(1);
  });
});
