/**
 * The seed file as IT meets it: the built server restarted with the same PATIENT_DOCS_SEED keeps
 * what the admin API changed at run time; a bad seed stops the server (exit 2) or the admin CLI's
 * `seed --file` (exit 2) with one line naming the file and the entry, before anything is applied.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../server/db/sqlite/store.js';
import { ADMIN_CLI, adminCommands, freePort, SERVER_MAIN, type AdminCommands } from './helpers/processes.js';
import { ORG, OTHER_ORG, tempDir } from './helpers/server.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const ADMIN_TOKEN = 'seed-test-admin-token-0123456789';
const MISSING_ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0aff';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-0000000000b1';
const NEW_PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-0000000000b2';

const SEED = {
  organizations: [
    { id: ORG, name: 'Smile Clinic' },
    { id: OTHER_ORG, name: 'Other Clinic' },
  ],
  patients: [{ id: PATIENT, name: 'Jane Roe', organizations: [ORG, OTHER_ORG], consents: [ORG, OTHER_ORG] }],
  clients: [{ clientId: 'seed-pc', clientSecret: 'seed-pc-secret-0123456789', name: 'Seed PC', scopes: ['Patient.Read'], organizations: [ORG] }],
};

let dir: string;
let dataDir: string;
let seedFile: string;

function writeSeed(name: string, content: unknown): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(content, null, 2));
  return file;
}

interface Started {
  url: string;
  stop(): Promise<void>;
}

/** The built server (SERVER_MAIN) on the test's data directory: resolves when it listens, rejects with its output when it exits. */
async function startServer(seed: string): Promise<Started> {
  const port = String(await freePort());
  const child = spawn(process.execPath, [SERVER_MAIN], {
    cwd: ROOT,
    env: { ...process.env, PORT: port, PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: seed, PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN, PATIENT_DOCS_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = /listening on (http:\/\/[^\s;]+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => reject(Object.assign(new Error(output), { code, output })));
  });
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A server start that must fail: its exit code and what it printed. */
async function failedStart(seed: string): Promise<{ code: number; output: string }> {
  try {
    const server = await startServer(seed);
    await server.stop();
  } catch (error) {
    const failure = error as { code: number; output: string };
    return { code: failure.code, output: failure.output };
  }
  throw new Error('the server started');
}

/** The built CLI as its own process: its entry's exit code and the one line it stops with. */
function adminProcess(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [ADMIN_CLI, ...args], { cwd: ROOT, env: { ...process.env, PATIENT_DOCS_DATA_DIR: dataDir }, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The other commands: one after another in one process of the built CLI's code (each output and exit code as the CLI's own). */
let commands: AdminCommands;
const admin = (...args: string[]) => commands.run(...args);

async function adminApi(url: string, method: string, route: string, body?: unknown): Promise<any> {
  const response = await fetch(`${url}${route}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.status, `${method} ${route}`).toBe(200);
  return response.json();
}

/** Events in the outbox (read from the database file while no server runs). */
async function patientEvents(): Promise<string[]> {
  const store = SqliteStore.open(path.join(dataDir, 'patient-docs.sqlite'));
  try {
    return (await store.outbox.after(0, 10_000)).filter((event) => event.eventType.startsWith('patient.')).map((event) => `${event.eventType} ${event.patientId}`);
  } finally {
    await store.close();
  }
}

beforeAll(() => {
  dir = tempDir('seed-e2e');
  dataDir = path.join(dir, 'data');
  seedFile = writeSeed('seed.json', SEED);
  commands = adminCommands({ PATIENT_DOCS_DATA_DIR: dataDir });
});

afterAll(async () => {
  await commands?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('seed file (built server and admin CLI)', () => {
  it('bug 1: a consent revoked and a name changed through the admin API stay so when the server restarts with the same seed', async () => {
    const first = await startServer(seedFile);
    await adminApi(first.url, 'DELETE', `/admin/v1/patients/${PATIENT}/consents/${OTHER_ORG}`);
    await adminApi(first.url, 'PATCH', `/admin/v1/patients/${PATIENT}`, { name: 'Jane Roe-Smith' });
    await first.stop();
    const before = await patientEvents();
    expect(before).toEqual([`patient.created ${PATIENT}`, `patient.updated ${PATIENT}`, `patient.updated ${PATIENT}`]);

    const second = await startServer(seedFile);
    try {
      expect(await adminApi(second.url, 'GET', `/admin/v1/patients/${PATIENT}`)).toMatchObject({ name: 'Jane Roe-Smith', organizations: [ORG, OTHER_ORG], consents: [ORG] });
    } finally {
      await second.stop();
    }
    expect(await patientEvents()).toEqual(before);
  });

  it('bug 1: `seed --file` with the same file after `consent revoke` leaves the consent revoked', async () => {
    expect((await admin('consent', 'revoke', '--patient', PATIENT, '--organization', ORG)).code).toBe(0);
    const seeded = await admin('seed', '--file', seedFile);
    expect(seeded.code).toBe(0);
    expect(JSON.parse(seeded.stdout)).toEqual({ created: 0, updated: 0 });
    expect(JSON.parse((await admin('patient', 'show', '--id', PATIENT)).stdout)).toMatchObject({ consents: [] });
  });

  it('bug 3: a seed naming an unknown organization stops the server with one line (exit 2) and applies nothing', async () => {
    const bad = writeSeed('unknown-org.json', {
      ...SEED,
      patients: [{ id: NEW_PATIENT, name: 'John Doe', organizations: [ORG], consents: [] }, { ...SEED.patients[0], consents: [ORG, MISSING_ORG] }],
    });
    const { code, output } = await failedStart(bad);
    expect(code).toBe(2);
    expect(output.trim()).toBe(
      `patient-docs-server: PATIENT_DOCS_SEED=${bad}: patients[1] (id ${PATIENT}) names organization ${MISSING_ORG} which is neither in the file nor in the database`,
    );
    expect((await admin('patient', 'show', '--id', NEW_PATIENT)).code).toBe(1);
    const cli = adminProcess('seed', '--file', bad);
    expect(cli.code).toBe(2);
    expect(cli.stderr.trim()).toBe(`patient-docs-admin: --file=${bad}: patients[1] (id ${PATIENT}) names organization ${MISSING_ORG} which is neither in the file nor in the database`);
    expect((await admin('patient', 'show', '--id', NEW_PATIENT)).code).toBe(1);
  });

  it('bug 2: the same patient id twice stops the server (exit 2) and is refused by the CLI (exit 2)', async () => {
    const bad = writeSeed('duplicate.json', { ...SEED, patients: [...SEED.patients, { ...SEED.patients[0], name: 'Jane Doe' }] });
    const { code, output } = await failedStart(bad);
    expect(code).toBe(2);
    expect(output.trim()).toBe(`patient-docs-server: PATIENT_DOCS_SEED=${bad}: patients[1] (id ${PATIENT}) has the same id as patients[0]; each id may appear only once`);
    const cli = await admin('seed', '--file', bad);
    expect(cli.code).toBe(2);
    expect(cli.stderr.trim()).toBe(`patient-docs-admin: --file=${bad}: patients[1] (id ${PATIENT}) has the same id as patients[0]; each id may appear only once`);
  });

  it('bug 4: an unknown scope stops the server (exit 2); an unknown key and a short secret are refused by the CLI (exit 2)', async () => {
    const scope = writeSeed('scope.json', { ...SEED, clients: [{ ...SEED.clients[0], scopes: ['Patient.Everything'] }] });
    const { code, output } = await failedStart(scope);
    expect(code).toBe(2);
    expect(output.trim().split('\n')).toHaveLength(1);
    expect(output).toContain(`PATIENT_DOCS_SEED=${scope} is invalid: /clients/0/scopes/0 must be one of "Patient.File.Read"`);
    const typo = writeSeed('typo.json', { patients: [{ id: NEW_PATIENT, name: 'John Doe', organizations: [ORG], consent: [ORG] }] });
    const cli = await admin('seed', '--file', typo);
    expect(cli.code).toBe(2);
    expect(cli.stderr.trim()).toBe(`patient-docs-admin: --file=${typo} is invalid: /patients/0/consent is not a known key (known: id, name, organizations, consents, identifiers, birthDate)`);
    const secret = writeSeed('secret.json', { ...SEED, clients: [{ ...SEED.clients[0], clientSecret: '12345678' }] });
    expect((await admin('seed', '--file', secret)).stderr.trim()).toBe(`patient-docs-admin: --file=${secret} is invalid: /clients/0/clientSecret must NOT have fewer than 16 characters`);
    expect((await admin('patient', 'show', '--id', NEW_PATIENT)).code).toBe(1);
  });

  it('bug 5: a consent removed from a patient in the file is removed at the next start (one patient.updated)', async () => {
    const before = await patientEvents();
    const changed = writeSeed('seed.json', { ...SEED, patients: [{ ...SEED.patients[0], consents: [ORG] }] });
    const server = await startServer(changed);
    try {
      expect(await adminApi(server.url, 'GET', `/admin/v1/patients/${PATIENT}`)).toMatchObject({ name: 'Jane Roe', organizations: [ORG, OTHER_ORG], consents: [ORG] });
    } finally {
      await server.stop();
    }
    expect(await patientEvents()).toEqual([...before, `patient.updated ${PATIENT}`]);
  });

  it('applies identifiers and birth dates from the file once, and refuses a file where two patients of an organization share one (exit 2, nothing applied)', async () => {
    const charted = writeSeed('charted.json', {
      organizations: SEED.organizations,
      patients: [
        { id: NEW_PATIENT, name: 'Smith, John', organizations: [ORG], consents: [ORG], identifiers: [{ system: 'chart', value: '10231' }], birthDate: '1984-03-02' },
      ],
    });
    expect(JSON.parse((await admin('seed', '--file', charted)).stdout)).toEqual({ created: 1, updated: 0 });
    expect(JSON.parse((await admin('seed', '--file', charted)).stdout)).toEqual({ created: 0, updated: 0 });
    expect(JSON.parse((await admin('patient', 'show', '--id', NEW_PATIENT)).stdout)).toMatchObject({ identifiers: [{ system: 'chart', value: '10231' }], birthDate: '1984-03-02' });

    const clash = writeSeed('clash.json', {
      patients: [{ id: PATIENT, name: 'Jane Roe', organizations: [ORG, OTHER_ORG], consents: [ORG], identifiers: [{ system: 'chart', value: '10231' }] }],
    });
    const refused = await admin('seed', '--file', clash);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim()).toBe(
      `patient-docs-admin: --file=${clash}: patients[0] (id ${PATIENT}) has identifier chart|10231, which belongs to patient ${NEW_PATIENT} in organization ${ORG}; an identifier is unique per organization and system`,
    );
    expect(JSON.parse((await admin('patient', 'show', '--id', PATIENT)).stdout)).toMatchObject({ identifiers: [] });
  });
});
