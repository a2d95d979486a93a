import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from './store.js';
import type { DocumentRecord, DocumentVersionRecord, OutboxEvent } from '../types.js';

const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';

async function storeWithDocument(): Promise<{ store: SqliteStore; document: DocumentRecord }> {
  const store = SqliteStore.open(':memory:');
  store.db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run('org', 'Org', 'x');
  store.db.prepare('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(PATIENT, 'P', 'p', 'x', 'x');
  const at = '2026-11-21T09:00:00.000Z';
  const document: DocumentRecord = {
    id: randomUUID(), patientId: PATIENT, organizationId: 'org', fileName: 'jaw.stl', fileType: 'STL', path: '/scans', createdAt: at, lastModifiedAt: at,
    hasContent: false, fileSize: null, sha256: null, version: 0, contentKey: null, contentType: null, thumbnailKey: null, createdBy: 'test',
  };
  await store.documents.create(document, []);
  return { store, document };
}

function version(documentId: string, number: number): DocumentVersionRecord {
  return {
    documentId, version: number, fileType: 'STL', originalFileName: null, fileSize: 100 + number, sha256: String(number).repeat(64), contentKey: `documents/${documentId}/v${number}-x`,
    contentType: 'model/stl', thumbnailKey: null, thumbnailStatus: 'none', thumbnailError: null, uploadedAt: `2026-11-21T09:0${number}:00.000Z`, uploadedBy: 'test',
  };
}

const lostEvent = (): OutboxEvent => ({ id: randomUUID(), eventType: 'document.lost', patientId: PATIENT, organizationId: 'org', operationId: 'op', occurredAt: 'x', data: {} });
const lostEvents = (store: SqliteStore) => store.db.prepare("SELECT COUNT(*) FROM outbox_events WHERE event_type = 'document.lost'").pluck().get();

describe('SqliteDocumentContent.markLost', () => {
  it('takes the content from the document in one step (counts, change counter, event) and changes nothing the second time', async () => {
    const { store, document } = await storeWithDocument();
    expect(await store.content.commitVersion(version(document.id, 1), 0, [])).toBe(true);
    const counter = await store.documents.changeCounter(PATIENT);
    const before = await store.documents.get(PATIENT, document.id);
    const lost = { documentId: document.id, version: 1, contentKey: version(document.id, 1).contentKey, at: 'now', reason: 'the file is missing' };

    expect(await store.content.markLost(lost, [lostEvent()])).toEqual({ version: true, current: true });
    expect(await store.documents.get(PATIENT, document.id)).toMatchObject({ hasContent: false, fileSize: null, sha256: null, contentKey: null, version: 1, fileName: 'jaw.stl', path: '/scans', lastModifiedAt: before!.lastModifiedAt });
    expect(await store.documents.changeCounter(PATIENT)).toBeGreaterThan(counter);
    expect((await store.documents.search({ patientId: PATIENT, hasContent: true, sortBy: 'lastModifiedAt', sortDirection: 'DESC', offset: 0, limit: 10 })).total).toBe(0);
    expect(lostEvents(store)).toBe(1);

    expect(await store.content.markLost(lost, [lostEvent()])).toEqual({ version: false, current: false });
    expect(lostEvents(store)).toBe(1);
    // The next upload is version 2, as if the document were a placeholder.
    expect(await store.content.commitVersion(version(document.id, 2), 1, [])).toBe(true);
    expect(await store.documents.get(PATIENT, document.id)).toMatchObject({ hasContent: true, version: 2 });
  });

  it('leaves a version uploaded meanwhile alone: only the version and key verify found are marked', async () => {
    const { store, document } = await storeWithDocument();
    await store.content.commitVersion(version(document.id, 1), 0, []);
    // verify saw version 1 missing; before the mark, the clinic uploaded version 2.
    await store.content.commitVersion(version(document.id, 2), 1, []);
    const changed = await store.content.markLost({ documentId: document.id, version: 1, contentKey: version(document.id, 1).contentKey, at: 'now', reason: 'the file is missing' }, [lostEvent()]);
    expect(changed).toEqual({ version: true, current: false });
    expect(await store.documents.get(PATIENT, document.id)).toMatchObject({ hasContent: true, version: 2 });
    expect(lostEvents(store)).toBe(0);
  });
});
