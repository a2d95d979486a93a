/**
 * The seed file on a real SQLite file: applied when an entry is new or changed, left alone when
 * unchanged (so run-time admin changes survive), checked whole before anything is applied.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SeedFile } from '../../shared/schemas.js';
import { ConfigError } from '../config.js';
import { SqliteStore } from '../db/sqlite/store.js';
import { verifySecret } from '../identity/secrets.js';
import { DirectoryService, SeedError } from './directory.js';
import { readSeedFile } from './seed-file.js';

const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const OTHER_ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a02';
const MISSING_ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0aff';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const PATIENT_2 = '5f0e8a3c-1d2b-4c3d-8e9f-000000000002';
const SECRET = 'scanner-pc-1-secret-0123456789';

const seed = (): SeedFile => ({
  organizations: [
    { id: ORG, name: 'Smile Clinic' },
    { id: OTHER_ORG, name: 'Other Clinic' },
  ],
  patients: [{ id: PATIENT, name: 'Jane Roe', organizations: [ORG, OTHER_ORG], consents: [ORG, OTHER_ORG] }],
  clients: [{ clientId: 'scanner-pc-1', clientSecret: SECRET, name: 'Scanner PC 1', scopes: ['Patient.File.Read', 'Patient.Read'], organizations: [ORG, OTHER_ORG] }],
});

let dir: string;
let store: SqliteStore;
let directory: DirectoryService;

function open(): void {
  store = SqliteStore.open(path.join(dir, 'patient-docs.sqlite'));
  directory = new DirectoryService(store);
}

/** A restart: the same database file, a new store. */
async function reopen(): Promise<void> {
  await store.close();
  open();
}

async function events(type?: string): Promise<string[]> {
  const all = await store.outbox.after(0, 10_000);
  return all.filter((event) => !type || event.eventType === type).map((event) => `${event.eventType} ${event.patientId}`);
}

function writeSeed(content: unknown): string {
  const file = path.join(dir, 'seed.json');
  fs.writeFileSync(file, JSON.stringify(content));
  return file;
}

/** What applying `content` from a file throws: the one-line message. */
async function refusal(content: unknown): Promise<string> {
  const file = writeSeed(content);
  try {
    await directory.applySeed(readSeedFile(file));
  } catch (error) {
    expect(error).toBeInstanceOf(SeedError);
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toContain(`PATIENT_DOCS_SEED=${file}`);
    return message;
  }
  throw new Error('the seed was accepted');
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-seed-'));
  open();
});

afterEach(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('seed file', () => {
  it('bug 1: a consent revoked and a rename made at run time survive re-applying the same seed (no patient.updated)', async () => {
    expect(await directory.applySeed(seed())).toEqual({ created: 4, updated: 0 });
    await directory.setConsent(PATIENT, OTHER_ORG, false);
    await directory.updatePatient(PATIENT, { name: 'Jane Roe-Smith' });
    await directory.upsertOrganization({ id: OTHER_ORG, name: 'Other Clinic (closed)' });
    const before = await events();
    await reopen();
    expect(await directory.applySeed(seed())).toEqual({ created: 0, updated: 0 });
    const patient = await directory.getPatient(PATIENT);
    expect(patient).toMatchObject({ name: 'Jane Roe-Smith', consents: [ORG] });
    expect((await store.organizations.get(OTHER_ORG))?.name).toBe('Other Clinic (closed)');
    expect(await events()).toEqual(before);
  });

  it('bug 1: an entry that changed in the file is applied again, as the file says', async () => {
    await directory.applySeed(seed());
    await directory.setConsent(PATIENT, OTHER_ORG, false);
    const changed = seed();
    changed.patients![0]!.name = 'Jane Roe (new name)';
    expect(await directory.applySeed(changed)).toEqual({ created: 0, updated: 1 });
    expect(await directory.getPatient(PATIENT)).toMatchObject({ name: 'Jane Roe (new name)', consents: [ORG, OTHER_ORG] });
    expect(await events('patient.updated')).toHaveLength(2);
  });

  it('bug 2: the same id twice in one file is refused for patients, organizations and clients, and nothing is applied', async () => {
    const patients = seed();
    patients.patients!.push({ id: PATIENT.toUpperCase(), name: 'Someone Else', organizations: [ORG], consents: [] });
    expect(await refusal(patients)).toContain(`patients[1] (id ${PATIENT}) has the same id as patients[0]; each id may appear only once`);
    const organizations = seed();
    organizations.organizations!.push({ id: ORG, name: 'Smile Clinic 2' });
    expect(await refusal(organizations)).toContain(`organizations[2] (id ${ORG}) has the same id as organizations[0]`);
    const clients = seed();
    clients.clients!.push({ ...clients.clients![0]!, name: 'Scanner PC 1 again' });
    expect(await refusal(clients)).toContain('clients[1] (clientId scanner-pc-1) has the same clientId as clients[0]');
    expect(await store.organizations.list()).toEqual([]);
    expect(await events()).toEqual([]);
  });

  it('bug 3: an unknown organization is one line naming the file and the entry, and nothing before it is applied', async () => {
    const content = seed();
    content.patients!.push({ id: PATIENT_2, name: 'John Doe', organizations: [ORG], consents: [MISSING_ORG] });
    expect(await refusal(content)).toMatch(
      new RegExp(`^PATIENT_DOCS_SEED=.*seed\\.json: patients\\[1\\] \\(id ${PATIENT_2}\\) names organization ${MISSING_ORG} which is neither in the file nor in the database$`),
    );
    const client = seed();
    client.clients![0]!.organizations = [MISSING_ORG];
    expect(await refusal(client)).toContain(`clients[0] (clientId scanner-pc-1) names organization ${MISSING_ORG} which is neither in the file nor in the database`);
    expect(await store.organizations.list()).toEqual([]);
    expect(await store.patients.get(PATIENT)).toBeUndefined();
    expect(await store.clients.get('scanner-pc-1')).toBeUndefined();
    expect(await events()).toEqual([]);
  });

  it('bug 3: an organization that is only in the database may be named', async () => {
    await directory.upsertOrganization({ id: ORG, name: 'Smile Clinic' });
    expect(await directory.applySeed({ patients: [{ id: PATIENT, name: 'Jane Roe', organizations: [ORG], consents: [ORG] }] })).toEqual({ created: 1, updated: 0 });
  });

  it('bug 4: the seed is checked as strictly as the admin API (scopes, secret length, unknown keys)', async () => {
    const scope = seed();
    scope.clients![0]!.scopes = ['Patient.Everything' as never];
    expect(await refusal(scope)).toContain('is invalid: /clients/0/scopes/0 must be one of "Patient.File.Read", "Patient.File.Write", "Patient.Read", "Webhook.Manage"');
    const secret = seed();
    secret.clients![0]!.clientSecret = '12345678';
    expect(await refusal(secret)).toContain('is invalid: /clients/0/clientSecret must NOT have fewer than 16 characters');
    const typo = { patients: [{ id: PATIENT, name: 'Jane Roe', consent: [ORG] }] };
    expect(await refusal(typo)).toContain('is invalid: /patients/0/consent is not a known key (known: id, name, organizations, consents, identifiers, birthDate)');
    expect(await refusal({ patient: [] })).toContain('is invalid: /patient is not a known key (known: organizations, patients, clients)');
    expect(await refusal({ patients: [{ id: 'nope', name: 'X' }] })).toContain('is invalid: /patients/0/id must be a UUID');
    expect(await store.patients.get(PATIENT)).toBeUndefined();
    // Objects handed to applySeed directly (not read from a file) are checked the same way.
    await expect(directory.applySeed(typo as unknown as SeedFile, '--file=x.json')).rejects.toThrow('--file=x.json is invalid: /patients/0/consent is not a known key');
  });

  it('bug 5: a consent or organization removed from a patient in the file is removed, as a client’s scopes and organizations are', async () => {
    await directory.applySeed(seed());
    const changed = seed();
    changed.patients![0]!.organizations = [ORG];
    changed.patients![0]!.consents = [];
    changed.clients![0]!.organizations = [ORG];
    changed.clients![0]!.scopes = ['Patient.Read'];
    expect(await directory.applySeed(changed)).toEqual({ created: 0, updated: 2 });
    expect(await directory.getPatient(PATIENT)).toMatchObject({ organizations: [ORG], consents: [] });
    expect(await store.clients.get('scanner-pc-1')).toMatchObject({ organizations: [ORG], scopes: ['Patient.Read'] });
    expect(await events('patient.updated')).toHaveLength(1);
    // …and applying the changed file again changes nothing.
    expect(await directory.applySeed(changed)).toEqual({ created: 0, updated: 0 });
    expect(await events('patient.updated')).toHaveLength(1);
  });

  it('a client whose secret changed in the file gets the new secret; the order of lists and the case of ids are no change', async () => {
    await directory.applySeed(seed());
    const reordered = seed();
    reordered.patients![0]!.consents = [OTHER_ORG.toUpperCase(), ORG];
    reordered.clients![0]!.scopes = ['Patient.Read', 'Patient.File.Read'];
    expect(await directory.applySeed(reordered)).toEqual({ created: 0, updated: 0 });
    reordered.clients![0]!.clientSecret = 'a-new-secret-0123456789';
    expect(await directory.applySeed(reordered)).toEqual({ created: 0, updated: 1 });
    expect(await verifySecret('a-new-secret-0123456789', (await store.clients.get('scanner-pc-1'))!.secretHash)).toBe(true);
  });

  it('a secret rotated at run time stands when the server restarts with the seed that holds the old one', async () => {
    await directory.applySeed(seed());
    const rotated = await directory.rotateClientSecret('scanner-pc-1');
    await reopen();
    expect(await directory.applySeed(seed())).toEqual({ created: 0, updated: 0 });
    const stored = (await store.clients.get('scanner-pc-1'))!.secretHash;
    expect(await verifySecret(rotated.clientSecret!, stored)).toBe(true);
    expect(await verifySecret(SECRET, stored)).toBe(false);
    // A client seeded by an older version (no record of the hash it left) is remembered as it is now.
    store.db.prepare("DELETE FROM meta WHERE key LIKE 'seed-entry:client:%:secret-hash'").run();
    expect(await directory.applySeed(seed())).toEqual({ created: 0, updated: 1 });
    const again = await directory.rotateClientSecret('scanner-pc-1');
    expect(await directory.applySeed(seed())).toEqual({ created: 0, updated: 0 });
    expect(await verifySecret(again.clientSecret!, (await store.clients.get('scanner-pc-1'))!.secretHash)).toBe(true);
  });

  it('a database seeded before entries were remembered: the first apply changes nothing that already matches, then run-time changes survive', async () => {
    await directory.applySeed(seed());
    // What an older version left: the records, no record of applied entries.
    store.db.prepare("DELETE FROM meta WHERE key LIKE 'seed-entry:%'").run();
    const before = await events();
    expect(await directory.applySeed(seed())).toEqual({ created: 0, updated: 0 });
    expect(await events()).toEqual(before);
    await directory.setConsent(PATIENT, ORG, false);
    expect(await directory.applySeed(seed())).toEqual({ created: 0, updated: 0 });
    expect((await directory.getPatient(PATIENT)).consents).toEqual([OTHER_ORG]);
  });

  it('a file that is not JSON is one line naming it', async () => {
    const file = path.join(dir, 'broken.json');
    fs.writeFileSync(file, '{ "patients": [');
    expect(() => readSeedFile(file, '--file')).toThrow(new RegExp(`^--file=${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} cannot be read as JSON`));
  });
});
