import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { ChangeWatch, EXTERNAL_CHECK_MS } from './change-watch.js';
import { SqliteStore } from './store.js';

const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const folders: string[] = [];

afterEach(() => {
  for (const folder of folders.splice(0)) fs.rmSync(folder, { recursive: true, force: true });
});

function storeOnDisk(): { store: SqliteStore; file: string } {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-change-watch-'));
  folders.push(folder);
  const file = path.join(folder, 'patient-docs.sqlite');
  const store = SqliteStore.open(file);
  store.db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run(ORG, 'Smile Clinic', 'x');
  store.db.prepare('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(PATIENT, 'Jane Roe', 'jane roe', 'x', 'x');
  store.db.prepare('INSERT INTO patient_organizations VALUES (?, ?)').run(PATIENT, ORG);
  store.db.prepare('INSERT INTO patient_consents VALUES (?, ?, ?)').run(PATIENT, ORG, 'x');
  return { store, file };
}

describe('ChangeWatch', () => {
  it('keeps its generation while nothing is written, and moves at once on a write of its own connection', () => {
    const { store } = storeOnDisk();
    let clock = 0;
    const watch = new ChangeWatch(store.db, () => clock);
    const first = watch.generation();
    clock += EXTERNAL_CHECK_MS * 10;
    expect(watch.generation()).toBe(first);
    store.db.prepare('UPDATE patients SET name = ? WHERE id = ?').run('Jane Doe', PATIENT);
    expect(watch.generation()).not.toBe(first);
    store.db.close();
  });

  it("sees another process's commit once EXTERNAL_CHECK_MS have passed, not before", () => {
    const { store, file } = storeOnDisk();
    let clock = 0;
    const watch = new ChangeWatch(store.db, () => clock);
    const first = watch.generation();
    const other = new Database(file);
    other.prepare('DELETE FROM patient_consents WHERE patient_id = ?').run(PATIENT);
    other.close();
    expect(watch.generation()).toBe(first);
    clock += EXTERNAL_CHECK_MS;
    expect(watch.generation()).not.toBe(first);
    store.db.close();
  });
});

describe('SqlitePatients.access (kept in memory between writes)', () => {
  it('follows a consent withdrawn by the server itself from the very next check', async () => {
    const { store } = storeOnDisk();
    expect((await store.patients.access(PATIENT, ORG)).consent).toBe(true);
    const patient = (await store.patients.get(PATIENT))!;
    await store.patients.update({ ...patient, consents: [] }, []);
    expect((await store.patients.access(PATIENT, ORG)).consent).toBe(false);
    store.db.close();
  });

  it('follows a consent withdrawn and a document uploaded by another process (the admin CLI)', async () => {
    const { store, file } = storeOnDisk();
    const before = await store.patients.access(PATIENT, ORG);
    expect(before).toMatchObject({ exists: true, access: true, consent: true });
    const other = new Database(file);
    other.prepare('DELETE FROM patient_consents WHERE patient_id = ?').run(PATIENT);
    other.prepare('INSERT INTO patient_document_versions (patient_id, version) VALUES (?, 7) ON CONFLICT (patient_id) DO UPDATE SET version = 7').run(PATIENT);
    other.close();
    await new Promise((resolve) => setTimeout(resolve, EXTERNAL_CHECK_MS + 5));
    const after = await store.patients.access(PATIENT, ORG);
    expect(after.consent).toBe(false);
    expect(after.documentChanges).toBe(7);
    store.db.close();
  });

  it('answers an unknown patient as unknown, and then a patient added meanwhile as known', async () => {
    const { store } = storeOnDisk();
    const unknown = '5f0e8a3c-1d2b-4c3d-8e9f-000000000002';
    expect((await store.patients.access(unknown, ORG)).exists).toBe(false);
    store.db.prepare('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(unknown, 'John Roe', 'john roe', 'x', 'x');
    expect((await store.patients.access(unknown, ORG)).exists).toBe(true);
    store.db.close();
  });
});
