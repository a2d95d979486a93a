// Search and create throughput with 100,000 documents for one patient and 1,000,000 in all,
// measured with autocannon against a real server process, side by side with the no-op route
// (GET /healthz) of the same server in the same run, measured again just before each run.
//   npm run bench            (all benchmarks)      node bench/search.mjs [--quick]
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { SqliteStore } from '../dist/server/db/sqlite/store.js';
import { cpuSeconds, mainThreadCpuSeconds, measureSteal, rssBytes } from './lib/proc.mjs';

const quick = process.argv.includes('--quick');
const ROOT = path.resolve(import.meta.dirname, '..');
const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const CLIENT = { id: 'scanner-pc-1', secret: 'scanner-pc-1-secret-0123456789' };
const MAIN_PATIENT_DOCS = quick ? 20_000 : 100_000;
const TOTAL_DOCS = quick ? 100_000 : 1_000_000;
const OTHER_PATIENTS = 99;
const DURATION = quick ? 4 : 10;

function populate(dataDir) {
  const store = SqliteStore.open(path.join(dataDir, 'patient-docs.sqlite'));
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
      const stamp = new Date(now - (TOTAL_DOCS - index) * 1000).toISOString();
      const hasContent = index % 4 === 0 ? 0 : 1;
      insert.run(randomUUID(), patientId, ORG, name, name, type, folder, folder, stamp, stamp, hasContent, hasContent ? 1000 + index : null, null, hasContent);
    }
  });
  for (let from = 0; from < MAIN_PATIENT_DOCS; from += 10_000) addBatch(PATIENT, from, Math.min(from + 10_000, MAIN_PATIENT_DOCS));
  const perOther = Math.floor((TOTAL_DOCS - MAIN_PATIENT_DOCS) / OTHER_PATIENTS);
  for (const patientId of patients.slice(1)) {
    for (let from = 0; from < perOther; from += 10_000) addBatch(patientId, from, Math.min(from + 10_000, perOther));
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  const total = db.prepare('SELECT COUNT(*) FROM documents').pluck().get();
  db.close();
  return total;
}

function startServer(dataDir, seed) {
  const child = spawn(process.execPath, [...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []), 'dist/server/main.js'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: seed, PATIENT_DOCS_LOG_LEVEL: 'warn', PATIENT_DOCS_ADMIN_TOKEN: 'bench', PATIENT_DOCS_TOKEN_RATE_LIMIT: '100000' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/[^\s;]+)/.exec(output);
      if (match) resolve({ child, url: match[1] });
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${output}`)));
  });
}

const rssMegabytes = (pid) => rssBytes(pid) / 1024 / 1024;

let serverPid;
let noOp;
/**
 * One run. The machine may be shared and its speed drifts within seconds, so the no-op route runs
 * again (half as long) just before every run, and every run is compared with the fastest no-op
 * figure of the whole bench: a slow moment can make a ratio look worse, never better.
 */
async function load(name, options) {
  if (process.env.BENCH_ONLY && !name.includes(process.env.BENCH_ONLY) && !name.includes('baseline')) return undefined;
  await autocannon({ connections: 10, pipelining: 1, ...options, duration: 1 }); // warm-up: JIT, caches
  const adjacent = noOp ? (await autocannon({ connections: 10, pipelining: 1, ...noOp, duration: DURATION / 2 })).requests.average : undefined;
  const cpuBefore = cpuSeconds(serverPid);
  const mainBefore = mainThreadCpuSeconds(serverPid);
  const steal = measureSteal();
  const result = await autocannon({ connections: 10, pipelining: 1, duration: DURATION, ...options });
  const serverCpu = cpuSeconds(serverPid) - cpuBefore;
  const mainThreadCpu = mainThreadCpuSeconds(serverPid) - mainBefore;
  const stolen = steal();
  const failures = result.non2xx + result.errors + result.timeouts;
  const requestsPerSecond = result.requests.average;
  return { name, requestsPerSecond, noOpBefore: adjacent ?? requestsPerSecond, p50: result.latency.p50, p99: result.latency.p99, failures, bytesPerResponse: result.throughput.total / result.requests.total, cpuPerRequest: (serverCpu / result.requests.total) * 1e6, mainThreadPerRequest: (mainThreadCpu / result.requests.total) * 1e6, serverCpuShare: serverCpu / DURATION, steal: stolen, rss: rssMegabytes(serverPid) };
}
let fastestNoOp = 0;
const share = (run) => `${((run.requestsPerSecond / fastestNoOp) * 100).toFixed(0)}%`;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bench-'));
const seed = path.join(dataDir, 'seed.json');
fs.writeFileSync(
  seed,
  JSON.stringify({
    organizations: [{ id: ORG, name: 'Smile Clinic' }],
    clients: [{ clientId: CLIENT.id, clientSecret: CLIENT.secret, scopes: ['Patient.File.Read', 'Patient.File.Write', 'Patient.Read'], organizations: [ORG] }],
  }),
);
console.log(`search bench: populating ${TOTAL_DOCS.toLocaleString('en')} documents (${MAIN_PATIENT_DOCS.toLocaleString('en')} for one patient)…`);
const started = Date.now();
const total = populate(dataDir);
console.log(`  populated ${total.toLocaleString('en')} rows in ${((Date.now() - started) / 1000).toFixed(1)} s`);

const { child, url } = await startServer(dataDir, seed);
serverPid = child.pid;
try {
  const tokenResponse = await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) });
  const { access_token: token } = await tokenResponse.json();
  // What got (the desktop app's client), fetch and browsers send: pages of 50 then travel gzipped.
  const headers = { authorization: `Bearer ${token}`, 'organization-id': ORG, 'content-type': 'application/json', 'accept-encoding': 'gzip, deflate, br' };
  const searchUrl = `${url}/v1/patients/${PATIENT}/documents/search`;
  const search = (body) => ({ url: searchUrl, method: 'POST', headers, body: JSON.stringify(body) });
  let counter = 0;
  const runs = [];
  noOp = { url: `${url}/healthz`, headers };
  runs.push(await load('no-op GET /healthz (baseline)', noOp));
  const caseFolders = MAIN_PATIENT_DOCS / 100;
  const caseFolder = (index) => `/cases/case-${String(index % caseFolders).padStart(5, '0')}`;
  const repeated = { offset: 0, limit: 50, path: caseFolder(caseFolders / 2), sortBy: 'lastModifiedAt', sortDirection: 'DESC' };
  runs.push(await load('search: path filter (one case folder, repeated), 50 by lastModifiedAt', search(repeated)));
  runs.push(await load('  the same, by a client that does not take gzip', { ...search(repeated), headers: { ...headers, 'accept-encoding': 'identity' } }));
  let rotation = 0;
  // Every case folder, both pages of each, in an order that cycles through all of them before any
  // repeats: more distinct pages than the server's page cache holds, so every answer is a miss.
  const nextFolderBody = () => {
    const step = rotation++;
    return JSON.stringify({ offset: (Math.floor(step / caseFolders) % 2) * 50, limit: 50, path: caseFolder(step * 7919), sortBy: 'lastModifiedAt', sortDirection: 'DESC' });
  };
  runs.push(
    await load('search: path filter (rotating over every page of every case folder: cache misses)', {
      url: searchUrl,
      method: 'POST',
      headers,
      setupClient: (client) => {
        client.setBody(nextFolderBody());
        client.on('response', () => client.setBody(nextFolderBody()));
      },
    }),
  );
  runs.push(await load('search: whole patient (path /), 50 by lastModifiedAt', search({ offset: 0, limit: 50, path: '/', sortBy: 'lastModifiedAt', sortDirection: 'DESC' })));
  runs.push(await load('search: fileName filter "0099"', search({ offset: 0, limit: 50, fileName: '0099' })));
  runs.push(
    await load('create placeholder', {
      url: `${url}/v1/patients/${PATIENT}/documents`,
      method: 'POST',
      headers,
      setupClient: (client) => {
        client.setBody(JSON.stringify({ fileName: `bench-${process.pid}-${counter++}.stl`, path: '/bench' }));
        client.on('response', () => client.setBody(JSON.stringify({ fileName: `bench-${process.pid}-${counter++}.stl`, path: '/bench' })));
      },
    }),
  );
  const rss = rssMegabytes(child.pid);
  fastestNoOp = Math.max(runs[0].requestsPerSecond, ...runs.filter(Boolean).map((run) => run.noOpBefore));
  console.log(`\nno-op route: ${runs.filter(Boolean).map((run) => run.noOpBefore.toFixed(0)).join(', ')} req/s just before each run; ratios are against the fastest, ${fastestNoOp.toFixed(0)} req/s`);
  console.log('| run | req/s | p50 ms | p99 ms | no-op just before, req/s | vs fastest no-op | server CPU µs/req | of it main thread | server CPU busy | host steal | bytes/response | RSS after, MB | errors |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const run of runs.filter(Boolean)) {
    console.log(`| ${run.name} | ${run.requestsPerSecond.toFixed(0)} | ${run.p50} | ${run.p99} | ${run.noOpBefore.toFixed(0)} | ${share(run)} | ${run.cpuPerRequest.toFixed(0)} | ${run.mainThreadPerRequest.toFixed(0)} | ${(run.serverCpuShare * 100).toFixed(0)}% | ${run.steal.toFixed(0)}% | ${run.bytesPerResponse.toFixed(0)} | ${run.rss.toFixed(0)} | ${run.failures} |`);
  }
  console.log(`\nserver RSS after the runs with ${total.toLocaleString('en')} documents: ${rss.toFixed(0)} MB`);
  if (!process.env.BENCH_ONLY) console.log(`targets: path-filtered search >= 40% of no-op (repeated ${share(runs[1])}, rotating ${share(runs[3])}), create >= 25% (${share(runs[6])}), RSS < 300 MB (${rss.toFixed(0)} MB)`);
} finally {
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  fs.rmSync(dataDir, { recursive: true, force: true });
}
