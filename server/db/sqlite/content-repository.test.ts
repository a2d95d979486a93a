import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from './store.js';
import { NO_THUMBNAIL, type DocumentRecord, type DocumentVersionRecord, type OutboxEvent } from '../types.js';

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
    contentType: 'model/stl', thumbnailKey: null, thumbnailStatus: 'none', thumbnailError: null, uploadedAt: `2026-11-21T09:0${number}:00.000Z`, uploadedBy: 'test', contentLostAt: null,
  };
}

/** The audit entry's part the domain gives (lost-content.ts); the repository adds the rest. */
const mark = { at: '2026-11-22T10:00:00.000Z', requestId: 'run-1', detail: { by: 'test' } };
const lostEvent = (): OutboxEvent => ({ id: randomUUID(), eventType: 'document.lost', patientId: PATIENT, organizationId: 'org', operationId: 'op', occurredAt: 'x', data: {} });
const lostEvents = (store: SqliteStore) => store.db.prepare("SELECT COUNT(*) FROM outbox_events WHERE event_type = 'document.lost'").pluck().get();

describe('SqliteDocumentContent.markLost', () => {
  it('takes the content from the document in one step (counts, change counter, event) and changes nothing the second time', async () => {
    const { store, document } = await storeWithDocument();
    expect(await store.content.commitVersion(version(document.id, 1), 0, [])).toBe(true);
    const counter = await store.documents.changeCounter(PATIENT);
    const before = await store.documents.get(PATIENT, document.id);
    const lost = { documentId: document.id, version: 1, contentKey: version(document.id, 1).contentKey, at: 'now', reason: 'the file is missing' };

    expect(await store.content.markLost(lost, [lostEvent()], mark)).toEqual({ version: true, current: true });
    expect(await store.documents.get(PATIENT, document.id)).toMatchObject({ hasContent: false, fileSize: null, sha256: null, contentKey: null, version: 1, fileName: 'jaw.stl', path: '/scans', lastModifiedAt: before!.lastModifiedAt });
    expect(await store.documents.changeCounter(PATIENT)).toBeGreaterThan(counter);
    expect((await store.documents.search({ patientId: PATIENT, hasContent: true, sortBy: 'lastModifiedAt', sortDirection: 'DESC', offset: 0, limit: 10 })).total).toBe(0);
    expect(lostEvents(store)).toBe(1);

    expect(await store.content.markLost(lost, [lostEvent()], mark)).toEqual({ version: false, current: false });
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
    const changed = await store.content.markLost({ documentId: document.id, version: 1, contentKey: version(document.id, 1).contentKey, at: 'now', reason: 'the file is missing' }, [lostEvent()], mark);
    expect(changed).toEqual({ version: true, current: false });
    expect(await store.documents.get(PATIENT, document.id)).toMatchObject({ hasContent: true, version: 2 });
    expect(lostEvents(store)).toBe(0);
  });
});

const restoredEvent = (): OutboxEvent => ({ id: randomUUID(), eventType: 'document.restored', patientId: PATIENT, organizationId: 'org', operationId: 'op', occurredAt: 'x', data: {} });
const restoredEvents = (store: SqliteStore) => store.db.prepare("SELECT COUNT(*) FROM outbox_events WHERE event_type = 'document.restored'").pluck().get();
const lostAt = (store: SqliteStore, documentId: string, number: number) =>
  store.db.prepare('SELECT content_lost_at FROM document_versions WHERE document_id = ? AND version = ?').pluck().get(documentId, number);
const byHasContent = { hasContent: true, sortBy: 'lastModifiedAt', sortDirection: 'DESC', offset: 0, limit: 10 } as const;

describe('SqliteDocumentContent.markRestored', () => {
  it('gives the document its content back in one step (counts, change counter, thumbnail, event) and changes nothing the second time', async () => {
    const { store, document } = await storeWithDocument();
    const v1 = version(document.id, 1);
    await store.content.commitVersion(v1, 0, []);
    await store.content.setThumbnail(document.id, 1, { status: 'ready', key: `thumbnails/${document.id}/v1.png`, error: null });
    const before = await store.documents.get(PATIENT, document.id);
    const restored = { documentId: document.id, version: 1, contentKey: v1.contentKey, sha256: v1.sha256 };
    // Not marked lost: nothing to undo.
    expect(await store.content.markRestored(restored, [restoredEvent()], mark)).toEqual({ version: false, current: false });
    await store.content.markLost({ ...restored, at: 'now', reason: 'the file is missing' }, [], mark);
    const counter = await store.documents.changeCounter(PATIENT);

    expect(await store.content.markRestored(restored, [restoredEvent()], mark)).toEqual({ version: true, current: true });
    expect(await store.documents.get(PATIENT, document.id)).toEqual(before);
    expect(lostAt(store, document.id, 1)).toBeNull();
    expect(await store.documents.changeCounter(PATIENT)).toBeGreaterThan(counter);
    expect((await store.documents.search({ patientId: PATIENT, ...byHasContent })).total).toBe(1);
    expect(restoredEvents(store)).toBe(1);

    const again = await store.documents.changeCounter(PATIENT);
    expect(await store.content.markRestored(restored, [restoredEvent()], mark)).toEqual({ version: false, current: false });
    expect(await store.documents.changeCounter(PATIENT)).toBe(again);
    expect(restoredEvents(store)).toBe(1);
    // The next upload replaces it as any content: If-Match on its sha256, version 2.
    expect(await store.content.commitVersion(version(document.id, 2), 1, [])).toBe(true);
  });

  it('a newer version uploaded after the loss stays current: the restored one is an earlier version again, no event', async () => {
    const { store, document } = await storeWithDocument();
    const v1 = version(document.id, 1);
    await store.content.commitVersion(v1, 0, []);
    await store.content.markLost({ documentId: document.id, version: 1, contentKey: v1.contentKey, at: 'now', reason: 'the file is missing' }, [], mark);
    await store.content.commitVersion(version(document.id, 2), 1, []);
    const current = await store.documents.get(PATIENT, document.id);

    expect(await store.content.markRestored({ documentId: document.id, version: 1, contentKey: v1.contentKey, sha256: v1.sha256 }, [restoredEvent()], mark)).toEqual({ version: true, current: false });
    expect(await store.documents.get(PATIENT, document.id)).toEqual(current);
    expect(lostAt(store, document.id, 1)).toBeNull();
    expect(restoredEvents(store)).toBe(0);
  });

  it('refuses bytes other than the version recorded, and a deleted document stays deleted', async () => {
    const { store, document } = await storeWithDocument();
    const v1 = version(document.id, 1);
    await store.content.commitVersion(v1, 0, []);
    await store.content.markLost({ documentId: document.id, version: 1, contentKey: v1.contentKey, at: 'now', reason: 'the file is missing' }, [], mark);

    expect(await store.content.markRestored({ documentId: document.id, version: 1, contentKey: v1.contentKey, sha256: 'f'.repeat(64) }, [restoredEvent()], mark)).toEqual({ version: false, current: false });
    expect(await store.content.markRestored({ documentId: document.id, version: 1, contentKey: 'documents/other', sha256: v1.sha256 }, [restoredEvent()], mark)).toEqual({ version: false, current: false });
    expect(lostAt(store, document.id, 1)).toBe('now');

    expect(await store.content.remove(PATIENT, document.id, { at: 'later', by: 'test' }, [])).toBe(true);
    expect(await store.content.markRestored({ documentId: document.id, version: 1, contentKey: v1.contentKey, sha256: v1.sha256 }, [restoredEvent()], mark)).toEqual({ version: true, current: false });
    expect(await store.content.find(document.id)).toBeUndefined();
    expect(restoredEvents(store)).toBe(0);
  });

  it('a version whose thumbnail failed gets the no-thumbnail mark back, not a link', async () => {
    const { store, document } = await storeWithDocument();
    const v1 = version(document.id, 1);
    await store.content.commitVersion(v1, 0, []);
    await store.content.setThumbnail(document.id, 1, { status: 'failed', key: null, error: 'not a mesh' });
    await store.content.markLost({ documentId: document.id, version: 1, contentKey: v1.contentKey, at: 'now', reason: 'the file is missing' }, [], mark);
    await store.content.markRestored({ documentId: document.id, version: 1, contentKey: v1.contentKey, sha256: v1.sha256 }, [], mark);
    expect(await store.content.find(document.id)).toMatchObject({ hasContent: true, thumbnailKey: NO_THUMBNAIL, contentType: 'model/stl', fileSize: 101 });
  });
});

const auditEntries = async (store: SqliteStore) => (await store.audit.search({ offset: 0, limit: 100 })).rows;

describe('the audit entries of the marks', () => {
  it('markLost and markRestored write one entry each with the document’s patient and organization, none when nothing changed', async () => {
    const { store, document } = await storeWithDocument();
    const v1 = version(document.id, 1);
    await store.content.commitVersion(v1, 0, []);
    const lost = { documentId: document.id, version: 1, contentKey: v1.contentKey, at: mark.at, reason: 'the file is missing' };
    const lostMark = { ...mark, detail: { by: 'admin CLI', found: 'missing' } };
    await store.content.markLost(lost, [lostEvent()], lostMark);
    await store.content.markLost(lost, [lostEvent()], lostMark);
    expect(await auditEntries(store)).toEqual([
      {
        id: expect.any(Number), at: mark.at, action: 'mark-lost', outcome: 'allowed', status: 0, organizationId: 'org', clientId: null, patientId: PATIENT,
        documentId: document.id, version: 1, requestId: 'run-1', remoteAddress: null, detail: { by: 'admin CLI', found: 'missing', current: true },
      },
    ]);

    const restored = { documentId: document.id, version: 1, contentKey: v1.contentKey, sha256: v1.sha256 };
    // Other bytes than recorded: not restored, not recorded.
    await store.content.markRestored({ ...restored, sha256: 'f'.repeat(64) }, [], { ...mark, requestId: 'run-2' });
    await store.content.markRestored(restored, [restoredEvent()], { ...mark, requestId: 'run-3' });
    await store.content.markRestored(restored, [restoredEvent()], { ...mark, requestId: 'run-4' });
    const entries = await auditEntries(store);
    expect(entries.map((entry) => [entry.action, entry.requestId, entry.detail?.current])).toEqual([
      ['mark-restored', 'run-3', true],
      ['mark-lost', 'run-1', true],
    ]);
    expect(await store.audit.search({ action: 'mark-restored', patientId: PATIENT, offset: 0, limit: 10 })).toMatchObject({ total: 1 });
  });

  it('an earlier version, and a deleted document’s, are recorded with current false and the document’s patient', async () => {
    const { store, document } = await storeWithDocument();
    const v1 = version(document.id, 1);
    await store.content.commitVersion(v1, 0, []);
    await store.content.commitVersion(version(document.id, 2), 1, []);
    await store.content.remove(PATIENT, document.id, { at: 'later', by: 'test' }, []);
    await store.content.markLost({ documentId: document.id, version: 1, contentKey: v1.contentKey, at: mark.at, reason: 'the file is missing' }, [], mark);
    expect(await auditEntries(store)).toMatchObject([{ action: 'mark-lost', patientId: PATIENT, organizationId: 'org', documentId: document.id, version: 1, detail: { current: false } }]);
  });

  it('a mark whose entry cannot be written is not made (same transaction), and prune removes mark entries like others', async () => {
    const { store, document } = await storeWithDocument();
    const v1 = version(document.id, 1);
    await store.content.commitVersion(v1, 0, []);
    const lost = { documentId: document.id, version: 1, contentKey: v1.contentKey, at: mark.at, reason: 'the file is missing' };
    store.db.exec("CREATE TEMP TRIGGER refuse_audit BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit log refused'); END");
    await expect(store.content.markLost(lost, [lostEvent()], mark)).rejects.toThrow(/audit log refused/);
    expect(lostAt(store, document.id, 1)).toBeNull();
    expect(await store.content.find(document.id)).toMatchObject({ hasContent: true, version: 1 });
    expect(lostEvents(store)).toBe(0);
    store.db.exec('DROP TRIGGER refuse_audit');

    expect(await store.content.markLost(lost, [lostEvent()], mark)).toEqual({ version: true, current: true });
    expect(await store.audit.count()).toBe(1);
    expect(await store.audit.prune('2026-11-22T10:00:00.000Z')).toBe(0);
    expect(await store.audit.prune('2026-11-22T10:00:00.001Z')).toBe(1);
    expect(await store.audit.count()).toBe(0);
  });
});
