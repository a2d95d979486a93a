import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../db/sqlite/store.js';
import type { AuditEntryRecord } from '../db/types.js';
import { AuditLog } from './log.js';
import { AUDITED_PATIENT, auditEntry } from '../../test/helpers/audit.js';
import { AuditWriterThread, sqliteAuditSink } from './writer-thread.js';

const PATIENT = AUDITED_PATIENT;
const folders: string[] = [];

afterEach(() => {
  for (const folder of folders.splice(0)) fs.rmSync(folder, { recursive: true, force: true });
});

const entry = (index: number): AuditEntryRecord => auditEntry(index, { action: 'search', version: null, detail: { path: '/scans', results: index } });

function storeOnDisk(): { store: SqliteStore; file: string } {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-audit-thread-'));
  folders.push(folder);
  const file = path.join(folder, 'patient-docs.sqlite');
  return { store: SqliteStore.open(file), file };
}

describe('AuditWriterThread', () => {
  it('commits what the log hands it from its own thread, every entry once, readable by the server right after', async () => {
    const { store, file } = storeOnDisk();
    const log = new AuditLog(new AuditWriterThread({ file, busyTimeoutMs: 5000 }), { flushEveryMs: 5, batchSize: 100 });
    for (let index = 0; index < 1234; index += 1) log.record(entry(index));
    expect(await log.flush()).toBe(true);
    expect(log.pendingCount()).toBe(0);
    expect(await store.audit.count()).toBe(1234);
    const newest = await store.audit.search({ patientId: PATIENT, limit: 1, offset: 0 });
    expect(newest.rows[0]).toMatchObject({ requestId: 'request-1233', detail: { path: '/scans', results: 1233 } });
    expect(await log.close(1000)).toBe(0);
    store.db.close();
  });

  it('says why the database refused a batch (its SQLite code), and the log keeps the entries to try again', async () => {
    const { store, file } = storeOnDisk();
    store.db.exec('CREATE TRIGGER refuse BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, \'no room\'); END');
    const writer = new AuditWriterThread({ file, busyTimeoutMs: 5000 });
    await expect(writer.append([entry(1)])).rejects.toMatchObject({ message: 'no room', code: 'SQLITE_CONSTRAINT_TRIGGER' });
    const log = new AuditLog(writer, { flushEveryMs: 5 });
    log.useLogger({ error: () => undefined, warn: () => undefined, info: () => undefined });
    log.record(entry(2));
    expect(await log.flush()).toBe(false);
    expect(log.pendingCount()).toBe(1);
    store.db.exec('DROP TRIGGER refuse');
    expect(await log.flush()).toBe(true);
    expect(await store.audit.count()).toBe(1);
    await log.close(1000);
    store.db.close();
  });

  it('writes what waits at a hard stop, after the batch being committed, once', async () => {
    const { store, file } = storeOnDisk();
    const log = new AuditLog(new AuditWriterThread({ file, busyTimeoutMs: 5000 }), { flushEveryMs: 1, batchSize: 10 });
    for (let index = 0; index < 55; index += 1) log.record(entry(index));
    await new Promise((resolve) => setTimeout(resolve, 2));
    await log.flushBeforeExit();
    expect(await store.audit.count()).toBe(55);
    store.db.close();
  });
});

describe('sqliteAuditSink', () => {
  it("writes through the thread while the request thread only reads, and in the request thread's own connection while it writes (no turns on the write lock)", async () => {
    const { store } = storeOnDisk();
    const sink = sqliteAuditSink(store, 5000);
    const batch = (from: number) => Array.from({ length: 10 }, (_, index) => entry(from + index));
    let before = store.ownChanges();
    await sink.append(batch(0));
    expect(store.ownChanges()).toBe(before); // the thread's connection wrote them
    store.db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run('org', 'Smile Clinic', 'x'); // a create, say
    before = store.ownChanges();
    await sink.append(batch(10));
    expect(store.ownChanges()).toBe(before + 10); // this connection wrote them
    before = store.ownChanges();
    await sink.append(batch(20));
    expect(store.ownChanges()).toBe(before); // quiet again: the thread
    expect(await store.audit.count()).toBe(30);
    await sink.close();
    store.db.close();
  });
});
