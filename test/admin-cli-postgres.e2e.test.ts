/**
 * `patient-docs-admin` on a PostgreSQL database (PATIENT_DOCS_DATABASE_URL=postgres://…), as IT
 * runs it beside the instances: every command that works on the records, and what backup says
 * it does there (verify --mark-lost on PostgreSQL: test/postgres-deployment.test.ts).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_CLI, adminCommands, type AdminCommands } from './helpers/processes.js';
import { SEED_FILE, tempDir, testPostgres } from './helpers/server.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-0000000000aa';
let dataDir: string;
let databaseUrl: string;

/** The built CLI as its own process, for what its entry does: exit codes, the one line it stops with. */
function adminProcess(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync('node', [ADMIN_CLI, ...args], { cwd: ROOT, env: { ...process.env, PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_DATABASE_URL: databaseUrl }, encoding: 'utf8', timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The commands whose results are under test: one after another in one process of the built CLI's code (each output and exit code as the CLI's own). */
let commands: AdminCommands;
const admin = (...args: string[]) => commands.run(...args);

beforeAll(async () => {
  dataDir = tempDir('admin-cli-pg');
  databaseUrl = await (await testPostgres()).createDatabase();
  commands = adminCommands({ PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_DATABASE_URL: databaseUrl });
});
afterAll(async () => {
  await commands?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('patient-docs-admin on PostgreSQL', () => {
  it('adds and lists organizations, patients, clients, orders and consents, applies a seed, and rotates keys', async () => {
    expect((await admin('organization', 'add', '--name', 'Smile Clinic', '--id', ORG)).code).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'patient-docs.sqlite'))).toBe(false);
    const patient = await admin('patient', 'add', '--name', 'Jane Roe', '--id', PATIENT, '--organization', ORG, '--consent', ORG);
    expect(patient.code).toBe(0);
    expect(patient.json()).toMatchObject({ id: PATIENT, organizations: [ORG], consents: [ORG] });
    expect((await admin('patient', 'list', '--name', 'JANE')).json()).toEqual([expect.objectContaining({ id: PATIENT, name: 'Jane Roe' })]);
    const client = await admin('client', 'add', '--name', 'Scanner PC', '--scope', 'Patient.File.Read', '--organization', ORG, '--client-id', 'scanner-1');
    expect(client.code).toBe(0);
    expect(client.json().clientSecret).toMatch(/.{16,}/);
    expect((await admin('client', 'disable', '--client-id', 'scanner-1')).json().disabledAt).toMatch(/Z$/);
    expect((await admin('client', 'list')).json()).toEqual([expect.objectContaining({ clientId: 'scanner-1', organizations: [ORG] })]);
    const order = await admin('order', 'add', '--patient', PATIENT, '--organization', ORG, '--status', 'scheduled');
    expect(order.code).toBe(0);
    expect((await admin('order', 'update', '--id', order.json().id, '--status', 'done')).json()).toMatchObject({ status: 'done' });
    expect((await admin('consent', 'revoke', '--patient', PATIENT, '--organization', ORG)).json()).toMatchObject({ consents: [] });
    const seeded = await admin('seed', '--file', SEED_FILE);
    expect(seeded.code).toBe(0);
    expect((await admin('seed', '--file', SEED_FILE)).json()).toEqual({ created: 0, updated: 0 });
    expect((await admin('organization', 'list')).json().map((organization: { name: string }) => organization.name)).toEqual(['Other Clinic', 'Smile Clinic']);
    const before = (await admin('keys', 'list')).json();
    expect(before).toHaveLength(1);
    const rotated = await admin('keys', 'rotate');
    expect(rotated.code).toBe(0);
    expect((await admin('keys', 'list')).json().filter((key: { retiredAt: string | null }) => key.retiredAt === null)).toEqual([expect.objectContaining({ kid: rotated.json().kid })]);
    expect((await admin('audit')).code).toBe(0);
    const pruned = await admin('webhooks', 'prune', '--before', new Date().toISOString(), '--dead', '--json');
    expect([pruned.code, pruned.stderr]).toEqual([0, '']);
    expect(pruned.json()).toMatchObject({ delivered: 0, cancelled: 0, dead: 0, attempts: 0, events: 0 });
    // Each command connects and checks the schema, as the CLI's own process does.
  }, 240_000);

  it('says backup is not how a PostgreSQL database is backed up, and writes nothing; verify checks the files PostgreSQL records', async () => {
    const target = path.join(dataDir, 'backup-target');
    const backup = await admin('backup', '--to', target);
    expect(backup.code).toBe(2);
    expect(backup.stderr).toMatch(/pg_dump/);
    expect(fs.existsSync(target)).toBe(false);
    const verify = await admin('verify');
    expect(verify.stderr).toBe('');
    expect(verify.code).toBe(0);
  });

  it('stops with one line naming the database (without its password) when it cannot be reached', () => {
    const saved = databaseUrl;
    databaseUrl = 'postgres://docs:secret-password@127.0.0.1:1/patient_docs';
    try {
      const result = adminProcess('organization', 'list');
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain('postgres://docs@127.0.0.1:1/patient_docs');
      expect(result.stderr).not.toContain('secret-password');
    } finally {
      databaseUrl = saved;
    }
  });
});
