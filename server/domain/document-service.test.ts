import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../db/sqlite/store.js';
import { DocumentService } from './document-service.js';
import { Links } from './links.js';

const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const actor = { clientId: 'test', organizationId: 'org', operationId: 'op' };
const holder = { clientId: 'test', organizationId: 'org' };

function setup() {
  const store = SqliteStore.open(':memory:');
  store.db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run('org', 'Org', 'x');
  store.db.prepare('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(PATIENT, 'P', 'p', 'x', 'x');
  // The actor's organization may write the patient's files (DocumentService.create checks it).
  store.db.prepare('INSERT INTO patient_organizations (patient_id, organization_id) VALUES (?, ?)').run(PATIENT, 'org');
  store.db.prepare('INSERT INTO patient_consents (patient_id, organization_id, granted_at) VALUES (?, ?, ?)').run(PATIENT, 'org', 'x');
  const clock = { now: Date.UTC(2026, 10, 21, 9, 0, 10) };
  const links = new Links('http://server', Buffer.alloc(32, 7), () => clock.now);
  return { store, clock, service: new DocumentService(store, links) };
}

describe('DocumentService.searchPage (cached search pages)', () => {
  it('answers a repeated search with the same bytes, and from the latest state after every change', async () => {
    const { store, service } = setup();
    await service.create(PATIENT, { fileName: 'first.stl', path: '/case' }, actor);
    const first = (await service.searchPage(PATIENT, { path: '/case' }, holder)).body;
    expect((await service.searchPage(PATIENT, { path: '/case' }, holder)).body).toBe(first);

    const created = await service.create(PATIENT, { fileName: 'second.pdf', path: '/case/reports' }, actor);
    const afterCreate = JSON.parse((await service.searchPage(PATIENT, { path: '/case', sortBy: 'fileName', sortDirection: 'ASC' }, holder)).body.toString());
    expect(afterCreate.total).toBe(2);
    expect(JSON.parse((await service.searchPage(PATIENT, { path: '/case' }, holder)).body.toString()).total).toBe(2);

    // Content arriving (a write the service did not make: another instance, the upload path) is seen too.
    store.db.prepare("UPDATE documents SET has_content = 1, version = 1, file_size = 5 WHERE id = ?").run(created.id);
    const withContent = JSON.parse((await service.searchPage(PATIENT, { id: [created.id] }, holder)).body.toString());
    expect(withContent.documents[0]).toMatchObject({ hasContent: true, fileSize: 5, version: 1 });
    expect(withContent.documents[0].storageDownloadUri).toMatch(/\/content\?v=1&expires=\d+&sig=/);
    await store.close();
  });

  it('gzips a page from its second send on, and never sends a gzipped copy of an older state', async () => {
    const { store, service } = setup();
    for (let index = 0; index < 20; index += 1) await service.create(PATIENT, { fileName: `scan-${index}.stl`, path: '/case' }, actor);
    const first = await service.searchPage(PATIENT, { path: '/case' }, holder, { acceptsGzip: true });
    expect(first.gzip).toBe(false);
    const second = await service.searchPage(PATIENT, { path: '/case' }, holder, { acceptsGzip: true });
    expect(second.gzip).toBe(true);
    expect(gunzipSync(second.body).equals(first.body)).toBe(true);
    expect((await service.searchPage(PATIENT, { path: '/case' }, holder)).gzip).toBe(false);

    await service.create(PATIENT, { fileName: 'late.stl', path: '/case' }, actor);
    const changed = await service.searchPage(PATIENT, { path: '/case' }, holder, { acceptsGzip: true });
    expect(changed.gzip).toBe(false);
    expect(JSON.parse(changed.body.toString()).total).toBe(21);
    const again = await service.searchPage(PATIENT, { path: '/case' }, holder, { acceptsGzip: true });
    expect(again.gzip).toBe(true);
    expect(JSON.parse(gunzipSync(again.body).toString()).total).toBe(21);
    await store.close();
  });

  it('re-signs the links of a cached page when the expiry step moves on', async () => {
    const { store, clock, service } = setup();
    const created = await service.create(PATIENT, { fileName: 'scan.stl', path: '/' }, actor);
    store.db.prepare('UPDATE documents SET has_content = 1, version = 1 WHERE id = ?').run(created.id);
    const before = JSON.parse((await service.searchPage(PATIENT, {}, holder)).body.toString()).documents[0].storageDownloadUri as string;
    clock.now += 20_000;
    expect(JSON.parse((await service.searchPage(PATIENT, {}, holder)).body.toString()).documents[0].storageDownloadUri).toBe(before);
    clock.now += 60_000;
    const after = JSON.parse((await service.searchPage(PATIENT, {}, holder)).body.toString()).documents[0].storageDownloadUri as string;
    expect(after).not.toBe(before);
    expect(Number(new URL(after).searchParams.get('expires'))).toBe(Number(new URL(before).searchParams.get('expires')) + 60);
    await store.close();
  });
});
