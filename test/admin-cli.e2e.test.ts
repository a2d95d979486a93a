/**
 * `patient-docs-admin` as IT runs it: the built CLI on a data directory. It accepts exactly what the
 * admin API accepts; anything else is one line naming the flag, exit code 2, and nothing stored.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_CLI, adminCommands, type AdminCommands } from './helpers/processes.js';
import { tempDir } from './helpers/server.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-0000000000aa';
let dataDir: string;
const BAD_SEED = path.join(tempDir('admin-cli-seed'), 'seed.json');
fs.writeFileSync(BAD_SEED, JSON.stringify({ organizations: [{ id: ORG, name: 'Smile\u202EClinic' }] }));

/** The built CLI as its own process, for what its entry does: exit codes, usage. */
function adminProcess(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync('node', [ADMIN_CLI, ...args], { cwd: ROOT, env: { ...process.env, PATIENT_DOCS_DATA_DIR: dataDir }, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The commands whose results are under test: one after another in one process of the built CLI's code (each output and exit code as the CLI's own). */
let commands: AdminCommands;
const admin = (...args: string[]) => commands.run(...args);

beforeAll(() => {
  dataDir = tempDir('admin-cli');
  commands = adminCommands({ PATIENT_DOCS_DATA_DIR: dataDir });
});
afterAll(async () => {
  await commands?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(path.dirname(BAD_SEED), { recursive: true, force: true });
});

describe('patient-docs-admin', () => {
  it('refuses to read from a data dir without a database, and says so when a first write creates one', () => {
    const missing = spawnSync('node', [ADMIN_CLI, 'organization', 'list'], { cwd: ROOT, env: { ...process.env, PATIENT_DOCS_DATA_DIR: path.join(dataDir, 'typo') }, encoding: 'utf8' });
    expect(missing.status).toBe(2);
    expect(missing.stderr.trim()).toBe(`patient-docs-admin: there is no database at ${path.join(dataDir, 'typo', 'patient-docs.sqlite')}: set PATIENT_DOCS_DATA_DIR (or PATIENT_DOCS_DATABASE_URL) as for the server`);
    expect(fs.existsSync(path.join(dataDir, 'typo', 'patient-docs.sqlite'))).toBe(false);
    // A write refused for its flags is refused before anything is opened: no database made for it.
    const refused = spawnSync('node', [ADMIN_CLI, 'patient', 'add', '--name', 'X', '--id', 'nope'], { cwd: ROOT, env: { ...process.env, PATIENT_DOCS_DATA_DIR: path.join(dataDir, 'typo') }, encoding: 'utf8' });
    expect([refused.status, refused.stderr.trim()]).toEqual([2, 'patient-docs-admin: --id "nope" must be a UUID']);
    expect(fs.existsSync(path.join(dataDir, 'typo', 'patient-docs.sqlite'))).toBe(false);
  });

  it('adds an organization, a patient with access and consent, a client (secret shown once) and an order', async () => {
    const first = await admin('organization', 'add', '--name', 'Smile Clinic', '--id', ORG);
    expect(first.code).toBe(0);
    expect(first.stderr).toContain(`no database at ${path.join(dataDir, 'patient-docs.sqlite')} yet; creating it`);
    const patient = await admin('patient', 'add', '--name', 'Jane Roe', '--id', PATIENT, '--organization', ORG, '--consent', ORG);
    expect(patient.code).toBe(0);
    expect(patient.json()).toMatchObject({ id: PATIENT, organizations: [ORG], consents: [ORG] });
    expect((await admin('patient', 'list', '--name', 'jane')).json()).toEqual([expect.objectContaining({ id: PATIENT, name: 'Jane Roe' })]);
    const client = await admin('client', 'add', '--name', 'Scanner PC', '--scope', 'Patient.File.Read', '--organization', ORG, '--client-id', 'scanner-1');
    expect(client.code).toBe(0);
    expect(client.json().clientSecret).toMatch(/.{16,}/);
    expect((await admin('client', 'list')).json()[0]).not.toHaveProperty('clientSecret');
    expect((await admin('client', 'disable', '--client-id', 'scanner-1')).json().disabledAt).toMatch(/Z$/);
    expect((await admin('client', 'enable', '--client-id', 'scanner-1')).json().disabledAt).toBeNull();
    const rotated = await admin('client', 'rotate-secret', '--client-id', 'scanner-1');
    expect(rotated.code).toBe(0);
    expect(rotated.json().clientSecret).toMatch(/.{16,}/);
    expect(rotated.json().clientSecret).not.toBe(client.json().clientSecret);
    const order = await admin('order', 'add', '--patient', PATIENT, '--organization', ORG, '--status', 'scheduled');
    expect(order.code).toBe(0);
    expect((await admin('order', 'update', '--id', order.json().id, '--status', 'done')).json()).toMatchObject({ status: 'done' });
    expect((await admin('consent', 'revoke', '--patient', PATIENT, '--organization', ORG)).json()).toMatchObject({ consents: [] });
  });

  it.each([
    [['patient', 'add', '--name', 'X', '--id', 'nope'], '--id "nope" must be a UUID'],
    [['patient', 'add', '--name', 'X', '--organization', '12'], '--organization "12" must be a UUID'],
    [['patient', 'show', '--id', 'x'], '--id "x" must be a UUID'],
    [['patient', 'add', '--name', ' '], '--name " " must not be blank or contain control characters'],
    [['consent', 'grant', '--patient', PATIENT, '--organization', 'nope'], '--organization "nope" must be a UUID'],
    [['client', 'add', '--name', 'c', '--scope', 'Everything', '--organization', ORG], '--scope "Everything"'],
    [['client', 'add', '--name', 'c', '--scope', 'Patient.Read', '--organization', ORG, '--client-id', 'bad id'], '--client-id "bad id"'],
    [['order', 'add', '--patient', 'x', '--organization', ORG, '--status', 'new'], '--patient "x" must be a UUID'],
    [['order', 'update', '--id', PATIENT, '--status', 'two words'], '--status "two words"'],
    [['keys', 'prune', '--overlap', 'abc'], '--overlap "abc" must be a whole number of seconds'],
    [['seed', '--file', '/no/such/seed.json'], '--file=/no/such/seed.json cannot be read as JSON'],
    [['seed', '--file', BAD_SEED], `--file=${BAD_SEED} is invalid: /organizations/0/name must not be blank or contain control characters`],
  ])('refuses %j in one line naming the flag, with exit code 2', async (args, message) => {
    const result = await admin(...args);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain(`patient-docs-admin: ${message}`);
    expect(result.stdout).toBe('');
  });

  it('stored nothing for the refused commands', async () => {
    const clients = (await admin('client', 'list')).json() as { clientId: string }[];
    expect(clients.map((client) => client.clientId)).toEqual(['scanner-1']);
    expect((await admin('patient', 'show', '--id', PATIENT)).json()).toMatchObject({ id: PATIENT, name: 'Jane Roe' });
  });

  it('gives patients identifiers and a birth date, finds them by both, refuses a clash (exit 1) and removes them with none', async () => {
    const smith = await admin('patient', 'add', '--name', 'Smith, John', '--organization', ORG, '--consent', ORG, '--identifier', 'chart|10231', '--identifier', 'itero|ORD|7', '--birth-date', '1984-03-02');
    expect(smith.code).toBe(0);
    expect(smith.json()).toMatchObject({ identifiers: [{ system: 'chart', value: '10231' }, { system: 'itero', value: 'ORD|7' }], birthDate: '1984-03-02' });
    expect((await admin('patient', 'list', '--identifier', 'chart|10231')).json()).toEqual([expect.objectContaining({ id: smith.json().id })]);
    expect((await admin('patient', 'list', '--birth-date', '1984-03-02', '--name', 'smith')).json()).toEqual([expect.objectContaining({ id: smith.json().id })]);
    const clash = await admin('patient', 'add', '--name', 'Smith, Jon', '--organization', ORG, '--identifier', 'chart|10231');
    expect(clash.code).toBe(1);
    expect(clash.stderr.trim()).toBe(`patient-docs-admin: identifier chart|10231 already belongs to patient ${smith.json().id} in organization ${ORG}; an identifier is unique per organization and system`);
    const updated = await admin('patient', 'update', '--id', smith.json().id, '--identifier', 'none', '--birth-date', 'none');
    expect(updated.json()).toMatchObject({ identifiers: [], birthDate: null });
  });

  it('refuses a malformed --identifier or --birth-date in one line (exit 2)', async () => {
    for (const [args, message] of [
      [['--identifier', 'chart'], `--identifier "chart" must be system|value (e.g. 'chart|10231', quoted for the shell), or none`],
      [['--birth-date', '1984-02-30'], '--birth-date "1984-02-30" must be a date YYYY-MM-DD that exists, from 1850-01-01 to today'],
    ] as const) {
      const refused = await admin('patient', 'add', '--name', 'Bad Input', ...args);
      expect(refused.code).toBe(2);
      expect(refused.stderr.trim()).toBe(`patient-docs-admin: ${message}`);
    }
  });

  it('prints usage with exit code 2 for a missing flag or an unknown command', () => {
    for (const args of [['patient', 'add'], ['bogus']]) {
      const result = adminProcess(...args);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('Usage: patient-docs-admin');
    }
  });
});
