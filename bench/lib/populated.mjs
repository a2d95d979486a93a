// A server's data folder filled as bench/search.mjs and bench/create-floor.mjs need it: one clinic,
// 100 patients, one of them with many documents in case folders of 100, the rest spread over the
// others; and the server started on it, as IT would start it.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { SqliteStore } from '../../dist/server/db/sqlite/store.js';
import { listeningUrl } from './server.mjs';

export const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
export const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
export const CLIENT = { id: 'scanner-pc-1', secret: 'scanner-pc-1-secret-0123456789' };
const OTHER_PATIENTS = 99;
const ROOT = path.resolve(import.meta.dirname, '../..');

/** The database file a populated data folder holds. */
export const databaseFile = (dataDir) => path.join(dataDir, 'patient-docs.sqlite');

/**
 * Fills `dataDir` with `totalDocs` documents, `mainPatientDocs` of them for PATIENT in folders
 * /cases/case-NNNNN/scans of 100 each, and writes the seed file of the bench client; returns the
 * seed file's path and the number of documents stored.
 */
export function populate(dataDir, { mainPatientDocs, totalDocs }) {
  const store = SqliteStore.open(databaseFile(dataDir));
  const db = store.db;
  const now = Date.now();
  db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run(ORG, 'Smile Clinic', new Date().toISOString());
  const patients = [PATIENT, ...Array.from({ length: OTHER_PATIENTS }, () => randomUUID())];
  for (const [index, id] of patients.entries()) {
    db.prepare('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(id, `Patient ${index}`, `patient ${index}`, new Date().toISOString(), new Date().toISOString());
    db.prepare('INSERT INTO patient_organizations VALUES (?, ?)').run(id, ORG);
    db.prepare('INSERT INTO patient_consents VALUES (?, ?, ?)').run(id, ORG, new Date().toISOString());
  }
  const insert = db.prepare(`INSERT INTO documents (id, patient_id, organization_id, file_name, name_key, file_type, path, path_key,
    created_at, last_modified_at, has_content, file_size, sha256, version, created_by)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'bench')`);
  const types = ['STL', 'PLY', 'OBJ', 'PDF', 'DCM'];
  const addBatch = db.transaction((patientId, from, to) => {
    for (let index = from; index < to; index += 1) {
      const folder = `/cases/case-${String(Math.floor(index / 100)).padStart(5, '0')}/scans`;
      const type = types[index % types.length];
      const name = `scan-${String(index).padStart(7, '0')}.${type.toLowerCase()}`;
      const stamp = new Date(now - (totalDocs - index) * 1000).toISOString();
      const hasContent = index % 4 === 0 ? 0 : 1;
      insert.run(randomUUID(), patientId, ORG, name, name, type, folder, folder, stamp, stamp, hasContent, hasContent ? 1000 + index : null, null, hasContent);
    }
  });
  for (let from = 0; from < mainPatientDocs; from += 10_000) addBatch(PATIENT, from, Math.min(from + 10_000, mainPatientDocs));
  const perOther = Math.floor((totalDocs - mainPatientDocs) / OTHER_PATIENTS);
  for (const patientId of patients.slice(1)) {
    for (let from = 0; from < perOther; from += 10_000) addBatch(patientId, from, Math.min(from + 10_000, perOther));
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  const total = db.prepare('SELECT COUNT(*) FROM documents').pluck().get();
  db.close();
  return { seed: writeSeed(dataDir), total };
}

/** The seed file of the bench's organization and client (Webhook.Manage too: postgres.mjs subscribes), written into `dir`; its path. */
export function writeSeed(dir) {
  const seed = path.join(dir, 'seed.json');
  fs.writeFileSync(
    seed,
    JSON.stringify({
      organizations: [{ id: ORG, name: 'Smile Clinic' }],
      clients: [{ clientId: CLIENT.id, clientSecret: CLIENT.secret, scopes: ['Patient.File.Read', 'Patient.File.Write', 'Patient.Read', 'Webhook.Manage'], organizations: [ORG] }],
    }),
  );
  return seed;
}

/**
 * The server (dist/server/main.js) on `dataDir`, with node options from BENCH_SERVER_NODE_ARGS (a
 * profiler, say), run by `wrapper` (a command and its arguments, valgrind say) if one is given;
 * `env` adds to its environment (PATIENT_DOCS_DATABASE_URL, say).
 */
export async function startServer(dataDir, seed, { wrapper = [], env = {} } = {}) {
  const command = [...wrapper, process.execPath, ...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []), 'dist/server/main.js'];
  const child = spawn(command[0], command.slice(1), {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: seed, PATIENT_DOCS_LOG_LEVEL: 'warn', PATIENT_DOCS_ADMIN_TOKEN: 'bench', PATIENT_DOCS_TOKEN_RATE_LIMIT: '100000', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr.pipe(process.stderr);
  return { child, url: await listeningUrl(child) };
}

/** Stops a server started by startServer and waits for it to exit. */
export async function stopServer(child) {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** The bearer-token headers the bench client sends (what got, fetch and browsers send: gzip taken). */
export async function clientHeaders(url) {
  const response = await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) });
  const { access_token: token } = await response.json();
  return { authorization: `Bearer ${token}`, 'organization-id': ORG, 'content-type': 'application/json', 'accept-encoding': 'gzip, deflate, br' };
}

/**
 * autocannon options for the create route: each request a new placeholder `<prefix>-<n>.stl` in
 * /bench (a name asked twice would be a 409), of PATIENT, or with several `patients` one of them
 * per connection.
 */
export function createRequests(url, headers, prefix, patients = [PATIENT]) {
  let counter = 0;
  let connections = 0;
  const body = () => JSON.stringify({ fileName: `${prefix}-${counter++}.stl`, path: '/bench' });
  return {
    url,
    headers,
    // One patient per connection, round the list (several: workstations of a clinic group, each on its own patient).
    requests: [
      {
        method: 'POST',
        setupRequest: (request, context) => {
          context.patient ??= patients[connections++ % patients.length];
          return { ...request, path: `/v1/patients/${context.patient}/documents`, body: body() };
        },
      },
    ],
  };
}
