// A create's statements on PostgreSQL with no HTTP in the way, two variants in alternating slices
// on one cluster, so a machine busy with other work weighs on both alike:
//   check: the patient's access check then the create (two statements, as a route that checks
//          first would) against createIfAllowed (the check inside the create's statement);
//   commit-delay: createIfAllowed with commit_delay/commit_siblings at PostgreSQL's defaults
//          against COMMIT_DELAY (set with ALTER SYSTEM and a reload between slices).
// Each variant runs with 10 workers, each on a patient of its own, and with one worker alone.
// Printed per slice and as medians: creates/s, PostgreSQL's CPU (postmaster and backends, /proc)
// and this process's CPU per create, and p50/p99 of a create. The cluster has the settings
// docs/several-instances.md recommends (fsync and synchronous_commit on, wal_compression = lz4),
// but commit_delay and commit_siblings at PostgreSQL's defaults except where a variant sets them.
//   node bench/postgres-create.mjs check|commit-delay   (after npm run build; SLICE_MS, ROUNDS)
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { PostgresStore } from '../dist/server/db/postgres/store.js';
import { timeOrderedUuid } from '../dist/server/domain/ids.js';
import { cpuSeconds } from './lib/proc.mjs';
import { processTree, startPostgres } from './lib/postgres.mjs';

const SLICE_MS = Number(process.env.SLICE_MS ?? 5000);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const WORKERS = 10;
/** The group commit measured: wait up to 1 ms for other commits to share a flush, when 5 other transactions are open. */
const COMMIT_DELAY = { commit_delay: '1000', commit_siblings: '5' };
const mode = process.argv[2] ?? 'check';
if (mode !== 'check' && mode !== 'commit-delay') throw new Error('usage: node bench/postgres-create.mjs check|commit-delay');

const cluster = await startPostgres(['shared_buffers=256MB', 'wal_compression=lz4']);
const url = await cluster.createDatabase('create');
const store = await PostgresStore.open(url, { webhookLeaseMs: 60_000 });
// As in the server, whose delivery worker fans out what its instance commits: no NOTIFY per create
// (a NOTIFY takes a database-wide lock through its commit, so notifying creates commit one by one).
store.outbox.onAppended(() => undefined);
const admin = new pg.Client({ connectionString: url });
await admin.connect();
const ORG = randomUUID();
const AT = new Date().toISOString();
await store.organizations.upsert({ id: ORG, name: 'Clinic', createdAt: AT });
const patients = Array.from({ length: WORKERS }, () => randomUUID());
for (const id of patients) await store.patients.create({ id, name: `Patient ${id}`, organizations: [ORG], consents: [ORG], identifiers: [], birthDate: null, createdAt: AT, updatedAt: AT }, []);

let created = 0;
/** A placeholder and its event, as DocumentService.create makes them. */
function placeholder(patientId) {
  const at = new Date().toISOString();
  const id = timeOrderedUuid();
  const document = { id, patientId, organizationId: ORG, fileName: `scan-${created++}.stl`, fileType: 'STL', path: '/bench', createdAt: at, lastModifiedAt: at, hasContent: false, fileSize: null, sha256: null, version: 0, contentKey: null, contentType: null, thumbnailKey: null, createdBy: 'bench', scannedAt: null };
  const event = { id: timeOrderedUuid(), eventType: 'document.created', patientId, organizationId: ORG, operationId: randomUUID(), occurredAt: at, data: { document: { id } } };
  return [document, [event]];
}

const VARIANTS = {
  'check, then create': async (patientId) => {
    if (!(await store.patients.access(patientId, ORG)).consent) throw new Error('refused');
    await store.documents.create(...placeholder(patientId));
  },
  createIfAllowed: async (patientId) => {
    if (!(await store.documents.createIfAllowed(...placeholder(patientId))).consent) throw new Error('refused');
  },
};

/** CPU seconds of the cluster: its living processes, and what the postmaster's ended children used. */
function postgresCpu() {
  let total = 0;
  for (const pid of processTree(cluster.postmasterPid)) {
    try {
      total += cpuSeconds(pid);
    } catch {
      // ended meanwhile
    }
  }
  const fields = fs.readFileSync(`/proc/${cluster.postmasterPid}/stat`, 'utf8').split(') ')[1].split(' ');
  return total + (Number(fields[13]) + Number(fields[14])) / 100;
}

async function slice(create, workers) {
  const latencies = [];
  const end = Date.now() + SLICE_MS;
  const postgresBefore = postgresCpu();
  const ownBefore = process.cpuUsage();
  await Promise.all(patients.slice(0, workers).map(async (patientId) => {
    while (Date.now() < end) {
      const started = process.hrtime.bigint();
      await create(patientId);
      latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  }));
  const own = process.cpuUsage(ownBefore);
  const count = latencies.length;
  latencies.sort((a, b) => a - b);
  return { rate: count / (SLICE_MS / 1000), postgresUs: ((postgresCpu() - postgresBefore) / count) * 1e6, ownUs: (own.user + own.system) / count, p50: latencies[Math.floor(count * 0.5)], p99: latencies[Math.floor(count * 0.99)], load: os.loadavg()[0] };
}

async function commitDelay(on) {
  for (const [name, value] of Object.entries(COMMIT_DELAY)) await admin.query(on ? `ALTER SYSTEM SET ${name} = ${value}` : `ALTER SYSTEM RESET ${name}`);
  await admin.query('SELECT pg_reload_conf()');
  await new Promise((resolve) => setTimeout(resolve, 200));
}

const delayed = Object.entries(COMMIT_DELAY).map(([name, value]) => `${name}=${value}`).join(' ');
const cases = mode === 'check'
  ? [['check, then create', WORKERS, false], ['createIfAllowed', WORKERS, false], ['check, then create', 1, false], ['createIfAllowed', 1, false]]
  : [['createIfAllowed', WORKERS, false], ['createIfAllowed', WORKERS, true], ['createIfAllowed', 1, false], ['createIfAllowed', 1, true]];
const results = new Map();
const number = (value, digits = 0) => value.toFixed(digits);
const line = (run) => `${number(run.rate)} creates/s, PostgreSQL ${number(run.postgresUs)} µs and this process ${number(run.ownUs)} µs per create, p50 ${number(run.p50, 2)} / p99 ${number(run.p99, 2)} ms`;
try {
  console.log(`postgres-create ${mode}: ${ROUNDS} rounds of ${SLICE_MS / 1000} s slices`);
  await slice(VARIANTS.createIfAllowed, WORKERS); // warm-up: connections, plans, pages
  for (let round = 0; round < ROUNDS; round += 1) {
    // Each pair (the same workers, the two variants) in the other order every other round, so
    // neither variant always follows the same slice.
    const order = round % 2 === 0 ? cases : cases.map((_, index) => cases[index ^ 1]);
    for (const [variant, workers, delay] of order) {
      await commitDelay(delay);
      const run = await slice(VARIANTS[variant], workers);
      const key = `${variant}, ${workers === 1 ? 'one worker alone' : `${workers} workers`}${delay ? `, ${delayed}` : ''}`;
      results.set(key, [...(results.get(key) ?? []), run]);
      console.log(`  ${key}: ${line(run)}, load average ${number(run.load, 1)}`);
    }
  }
  const median = (values) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)];
  console.log('medians:');
  for (const [key, runs] of results) {
    console.log(`  ${key}: ${line(Object.fromEntries(['rate', 'postgresUs', 'ownUs', 'p50', 'p99'].map((field) => [field, median(runs.map((run) => run[field]))])))}`);
  }
} finally {
  await admin.end();
  await store.close();
  cluster.remove();
}
