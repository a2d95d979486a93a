// SQLite and PostgreSQL side by side in one run, on the same population (1,000,000 documents,
// 100,000 of them for one patient; --quick: 100,000 and 20,000): an uncached search page (a
// different page each request), a repeated page, document create (every connection on the main
// patient, each connection on a patient of its own, as a clinic group's workstations are, and one
// connection alone) and token issue, each with req/s, p50/p99 at 10 connections; a one-shot upload of a 256 KiB file
// into a placeholder made for it, at 4 connections; and webhook deliveries, patient.updated events fanned out to 50 subscriptions on a
// local HTTPS receiver, in deliveries/s. Every run prints the server's CPU per request (upload,
// delivery) and PostgreSQL's own (the postmaster and its backends, from /proc), PostgreSQL's
// write-ahead log per request (bytes, records, full-page images: pg_stat_wal) with the checkpoints
// that fell in the run, and the load average at its end. SQLite is the baseline of every
// PostgreSQL row; the no-op route of each server is printed beside them.
//   node bench/postgres.mjs [--quick] [--cache <dir>] [--rounds N]   (npm run bench runs it with every other bench)
// BENCH_ONLY=uncached,repeated runs only those (and the no-op route); the others are create, token, upload, webhooks.
// BENCH_POSTGRES_SETTINGS="wal_compression=off" runs PostgreSQL with these settings added (a later one wins).
// BENCH_STATEMENTS=1 prints, after PostgreSQL's runs, the statements that took its time (pg_stat_statements), per request of the uncached page.
// --cache keeps each population in <dir> and uses a copy of it in later runs of the same size,
// schema and filling code (the 1,000,000-document SQLite one takes minutes to fill).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import pg from 'pg';
import { median } from './lib/figures.mjs';
import { cpuSeconds, measureSteal } from './lib/proc.mjs';
import { CLIENT, clientHeaders, createRequests, databaseFile, ORG, PATIENT, populate, startServer, stopServer, writeSeed } from './lib/populated.mjs';
import { cachedPostgres, cachedSqlite, populationName } from './lib/population-cache.mjs';
import { processTree, startPostgres } from './lib/postgres.mjs';
import { startWebhookReceiver, subscribePatientUpdates, writePatientEvents } from './lib/webhook-receiver.mjs';

const quick = process.argv.includes('--quick');
const cacheAt = process.argv.indexOf('--cache');
/** Where populations are kept between runs (bench/lib/population-cache.mjs), if anywhere. */
const CACHE = cacheAt >= 0 ? path.resolve(process.argv[cacheAt + 1]) : undefined;
const MAIN_PATIENT_DOCS = quick ? 20_000 : 100_000;
const TOTAL_DOCS = quick ? 100_000 : 1_000_000;
const OTHER_PATIENTS = 99;
const DURATION = quick ? 4 : 10;
const CONNECTIONS = 10;
/**
 * The upload: a small scan-sized file (a DICOM slice, a one-page PDF report). A 20 MB mesh costs
 * its bytes (hashing and writing, the same on both stores); a small file leaves visible the part an
 * upload costs once whatever its size, where the stores differ: the commit of the content, its
 * version row, audit entry and event. DCM has no thumbnail, so no render joins the server's CPU.
 */
const UPLOAD_BYTES = 256 * 1024;
const UPLOAD_CONNECTIONS = 4;
/**
 * Uploads and deliveries are counted runs (each upload needs a placeholder made for it first): the
 * warm-up's pace sizes the measured run to about DURATION seconds, and never fewer than these.
 */
const UPLOAD_WARM_UP = 100;
/** Webhooks: events × subscriptions deliveries, as bench/webhooks.mjs makes them. */
const SUBSCRIPTIONS = 50;
const WARM_UP_EVENTS = quick ? 20 : 40;
/** A delivery run that has not seen all its deliveries after this long reports what is missing. */
const DELIVERY_TIMEOUT_MS = 300_000;
/** BENCH_ONLY=uncached,repeated: only these runs (and the no-op route), for a quick look at one cost. */
const ONLY = process.env.BENCH_ONLY?.split(',').filter(Boolean);
const roundsAt = process.argv.indexOf('--rounds');
/**
 * --rounds N (3 unless given): the uncached page is measured N times on each store, the stores taking turns, and
 * each ratio is taken within a round: this host's speed drifts by a third within minutes, so two
 * runs minutes apart do not compare; two runs seconds apart do.
 */
const ROUNDS = roundsAt >= 0 ? Math.max(1, Number(process.argv[roundsAt + 1])) : 3;
const STORES = ['sqlite', 'postgres'];
const ADMIN_TOKEN = 'bench'; // startServer's PATIENT_DOCS_ADMIN_TOKEN

/** CPU seconds of a process tree: the living processes, and what the root's ended children used. */
function treeCpuSeconds(root) {
  let total = 0;
  for (const pid of processTree(root)) {
    try {
      total += cpuSeconds(pid);
    } catch {
      // ended meanwhile
    }
  }
  const fields = fs.readFileSync(`/proc/${root}/stat`, 'utf8').split(') ')[1].split(' ');
  return total + (Number(fields[13]) + Number(fields[14])) / 100;
}

/**
 * The cluster's write-ahead log so far (pg_stat_wal: bytes, records, full-page images) and its
 * checkpoints (pg_stat_bgwriter), read through `stats` (a pg.Client on the bench's cluster).
 */
async function walTotals(stats) {
  const { rows } = await stats.query(`SELECT w.wal_bytes::float8 AS bytes, w.wal_records::float8 AS records, w.wal_fpi::float8 AS fpi,
      (b.checkpoints_timed + b.checkpoints_req)::float8 AS checkpoints FROM pg_stat_wal w, pg_stat_bgwriter b`);
  return rows[0];
}

/** Starts measuring WAL (walTotals); the returned function gives what was written since, per request of `count`. */
async function measureWal(stats) {
  if (!stats) return async () => undefined;
  const before = await walTotals(stats);
  return async (count) => {
    // Statistics of backends reach pg_stat_wal when they report (at the latest every second while busy, and when idle).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const after = await walTotals(stats);
    return {
      bytes: (after.bytes - before.bytes) / count,
      records: (after.records - before.records) / count,
      fpi: (after.fpi - before.fpi) / count,
      checkpoints: after.checkpoints - before.checkpoints,
    };
  };
}

/**
 * What a run measures: the server's process, and on PostgreSQL its postmaster (CPU of the tree) and
 * a client of the cluster for its WAL figures.
 * @typedef {{ serverPid: number, postgresPid?: number, stats?: pg.Client }} Target
 */

/**
 * One autocannon run (DURATION seconds, or `options.amount` requests) after a warm-up of one second
 * (JIT, caches, pool), or of `warmUp.amount` requests, unless `warmUp` is false.
 */
async function measure(options, { serverPid, postgresPid, stats }, warmUp = true) {
  if (warmUp) await autocannon({ connections: CONNECTIONS, pipelining: 1, ...options, ...(warmUp === true ? { duration: 1 } : warmUp) });
  const wal = await measureWal(stats);
  const serverBefore = cpuSeconds(serverPid);
  const postgresBefore = postgresPid ? treeCpuSeconds(postgresPid) : 0;
  const steal = measureSteal();
  const result = await autocannon({ connections: CONNECTIONS, pipelining: 1, duration: DURATION, ...options });
  const requests = Math.max(1, result.requests.total);
  const measured = {
    count: result.requests.total,
    requestsPerSecond: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: result.non2xx + result.errors + result.timeouts,
    serverCpuUs: ((cpuSeconds(serverPid) - serverBefore) / requests) * 1e6,
    postgresCpuUs: postgresPid ? ((treeCpuSeconds(postgresPid) - postgresBefore) / requests) * 1e6 : undefined,
    steal: steal(),
    load: os.loadavg()[0],
  };
  return { ...measured, wal: await wal(requests) };
}

/** A multipart body of UPLOAD_BYTES that do not compress, the file part alone (SPEC §4.2: only `file` is required). */
function uploadBody() {
  const boundary = '----patient-docs-bench';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slice.dcm"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.concat([Buffer.from(head), randomBytes(UPLOAD_BYTES), Buffer.from(`\r\n--${boundary}--\r\n`)]) };
}

let placeholderSerial = 0;
/** `count` new placeholders (/uploads/slice-<n>.dcm of PATIENT, n never used before), ten requests at a time; their upload paths. */
async function placeholders(url, headers, count) {
  const paths = [];
  let made = 0;
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (made < count) {
        made += 1;
        const response = await fetch(`${url}/v1/patients/${PATIENT}/documents`, { method: 'POST', headers, body: JSON.stringify({ fileName: `slice-${placeholderSerial++}.dcm`, path: '/uploads' }) });
        if (response.status !== 201) throw new Error(`placeholder: ${response.status} ${await response.text()}`);
        paths.push(`${new URL((await response.json()).storageUrl).pathname}/file`);
      }
    }),
  );
  return paths;
}

/** autocannon options for `amount` uploads of `upload` (uploadBody()), one into each of `paths` (placeholders()). */
function uploadRequests(url, headers, upload, paths, amount) {
  return {
    url,
    connections: UPLOAD_CONNECTIONS,
    amount,
    requests: [
      {
        method: 'POST',
        headers: { authorization: headers.authorization, 'content-type': upload.contentType },
        body: upload.body,
        setupRequest: (request) => {
          const next = paths.pop();
          if (!next) throw new Error('the upload run used more placeholders than it made');
          return { ...request, path: next };
        },
      },
    ],
  };
}

/** The upload run: each request the same body into a placeholder of its own; UPLOAD_WARM_UP first, then DURATION seconds' worth at the warm-up's pace. */
async function uploads(url, headers, target) {
  const upload = uploadBody();
  const warmUp = await autocannon(uploadRequests(url, headers, upload, await placeholders(url, headers, UPLOAD_WARM_UP), UPLOAD_WARM_UP));
  const amount = Math.max(UPLOAD_WARM_UP, Math.round((warmUp.requests.total / warmUp.duration) * DURATION));
  const paths = await placeholders(url, headers, amount);
  return measure(uploadRequests(url, headers, upload, paths, amount), target, false);
}

/** Resolves when the receiver has `count` deliveries, or after DELIVERY_TIMEOUT_MS; whether they all came. */
async function allDelivered(receiver, count) {
  let timer;
  const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve(false), DELIVERY_TIMEOUT_MS)));
  const arrived = await Promise.race([receiver.waitForReceived(count).then(() => true), timeout]);
  clearTimeout(timer);
  return arrived;
}

/**
 * The webhook run: SUBSCRIPTIONS callbacks on the receiver, WARM_UP_EVENTS events delivered first,
 * then DURATION seconds' worth of events at the warm-up's pace written (four at a time, the admin
 * API) and timed until every delivery came.
 * The server's CPU includes writing the events (one PATCH per SUBSCRIPTIONS deliveries).
 */
async function deliveries(url, headers, receiver, { serverPid, postgresPid, stats }) {
  await subscribePatientUpdates(url, headers, receiver.port, SUBSCRIPTIONS);
  receiver.reset();
  const warmUpStarted = performance.now();
  await writePatientEvents(url, ADMIN_TOKEN, PATIENT, WARM_UP_EVENTS, 'warm-up');
  if (!(await allDelivered(receiver, WARM_UP_EVENTS * SUBSCRIPTIONS))) throw new Error(`webhook warm-up: ${receiver.received} of ${WARM_UP_EVENTS * SUBSCRIPTIONS} deliveries`);
  const warmUpPace = (WARM_UP_EVENTS * SUBSCRIPTIONS) / ((performance.now() - warmUpStarted) / 1000);
  const events = Math.max(WARM_UP_EVENTS, Math.round((warmUpPace * DURATION) / SUBSCRIPTIONS));
  const total = events * SUBSCRIPTIONS;
  receiver.reset();
  const serverBefore = cpuSeconds(serverPid);
  const postgresBefore = postgresPid ? treeCpuSeconds(postgresPid) : 0;
  const steal = measureSteal();
  const wal = await measureWal(stats);
  const started = performance.now();
  await writePatientEvents(url, ADMIN_TOKEN, PATIENT, events, 'run');
  await allDelivered(receiver, total);
  const seconds = (performance.now() - started) / 1000;
  const delivered = Math.max(1, Math.min(receiver.received, total));
  return {
    count: total,
    requestsPerSecond: delivered / seconds,
    failures: total - Math.min(receiver.received, total),
    serverCpuUs: ((cpuSeconds(serverPid) - serverBefore) / delivered) * 1e6,
    postgresCpuUs: postgresPid ? ((treeCpuSeconds(postgresPid) - postgresBefore) / delivered) * 1e6 : undefined,
    steal: steal(),
    load: os.loadavg()[0],
    wal: await wal(delivered),
  };
}

const CASE_FOLDERS = MAIN_PATIENT_DOCS / 100;
const caseFolder = (index) => `/cases/case-${String(index % CASE_FOLDERS).padStart(5, '0')}`;
/** Every case folder's two pages: the uncached run's cycle, and its first warm-up. */
const PAGES_PER_CYCLE = CASE_FOLDERS * 2;
/** Where each server's rotation of pages stands (by its URL), so a later round goes on with pages not asked for yet. */
const rotations = new Map();

/**
 * The uncached run: every case folder, both pages of each, cycling through all before any repeats,
 * so every answer is a miss of the server's page cache. The first run of a server warms up with
 * one whole cycle, so the database's own cache holds the pages' rows, as it does on a server that
 * has run a while (a PostgreSQL restored for the bench starts with none of them in its buffers;
 * with a warm-up of one second, its backends reading them in made the first run's pages cost the
 * server 1.2–1.7 times what the later rounds' cost).
 */
function uncached(url, headers, target) {
  const nextPage = () => {
    const step = rotations.get(url) ?? 0;
    rotations.set(url, step + 1);
    return JSON.stringify({ offset: (Math.floor(step / CASE_FOLDERS) % 2) * 50, limit: 50, path: caseFolder(step * 7919), sortBy: 'lastModifiedAt', sortDirection: 'DESC' });
  };
  const setupClient = (client) => {
    client.setBody(nextPage());
    client.on('response', () => client.setBody(nextPage()));
  };
  const warmUp = rotations.has(url) ? true : { amount: PAGES_PER_CYCLE };
  return measure({ url: `${url}/v1/patients/${PATIENT}/documents/search`, method: 'POST', headers, setupClient }, target, warmUp);
}

/** The runs of one server, in one order for both stores. */
async function runs(url, headers, target, receiver, patients) {
  const searchUrl = `${url}/v1/patients/${PATIENT}/documents/search`;
  const tokenForm = new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }).toString();
  const results = {};
  const wanted = (key) => !ONLY || ONLY.includes(key);
  results.noOp = await measure({ url: `${url}/healthz`, headers }, target);
  if (wanted('uncached')) results.uncached = await uncached(url, headers, target);
  const repeated = { offset: 0, limit: 50, path: caseFolder(CASE_FOLDERS / 2), sortBy: 'lastModifiedAt', sortDirection: 'DESC' };
  if (wanted('repeated')) results.repeated = await measure({ url: searchUrl, method: 'POST', headers, body: JSON.stringify(repeated) }, target);
  if (wanted('create')) results.create = await measure(createRequests(url, headers, `bench-${process.pid}`), target);
  if (wanted('create')) results.createSpread = await measure(createRequests(url, headers, `bench-spread-${process.pid}`, patients), target);
  // One workstation alone: the latency a durable commit costs when no other commit shares its flush.
  if (wanted('create')) results.createAlone = await measure({ ...createRequests(url, headers, `bench-alone-${process.pid}`, patients.slice(1, 2)), connections: 1 }, target);
  if (wanted('token')) results.token = await measure({ url: `${url}/oauth2/token`, method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: tokenForm }, target);
  if (wanted('upload')) results.upload = await uploads(url, headers, target);
  if (wanted('webhooks')) results.webhooks = await deliveries(url, headers, receiver, target);
  return results;
}

/**
 * BENCH_STATEMENTS: the statements that took most of PostgreSQL's time in this server's runs (the
 * counts start when its runs do), in ms per uncached page, execution and planning
 * apart. Meaningful for the uncached page alone (BENCH_ONLY=uncached): other runs add their own.
 */
async function printStatements(stats, uncachedRun) {
  const top = await stats.query(`SELECT calls, total_exec_time AS exec, total_plan_time AS plan, left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS text
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY total_exec_time + total_plan_time DESC LIMIT 8`);
  // The uncached run's warm-up (a whole cycle of pages) is in the counts too.
  const requests = (uncachedRun?.count ?? 0) + PAGES_PER_CYCLE;
  console.log(`\nPostgreSQL's statements, ms per uncached page (${requests.toLocaleString('en')} pages with the warm-up; pg_stat_statements):`);
  console.log('| calls per page | execution | planning | statement |');
  console.log('|---:|---:|---:|---|');
  for (const row of top.rows) console.log(`| ${(row.calls / requests).toFixed(2)} | ${(row.exec / requests).toFixed(3)} | ${(row.plan / requests).toFixed(3)} | ${row.text.replaceAll('|', '\\|')} |`);
}

/** The same population as populate() (bench/lib/populated.mjs) in PostgreSQL, by bulk SQL: the schema and seed are the server's own. */
async function populatePostgres(databaseUrl) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const now = new Date().toISOString();
    await client.query('BEGIN');
    const patients = [PATIENT, ...Array.from({ length: OTHER_PATIENTS }, (_, index) => `00000000-0000-4000-8000-${String(index + 1).padStart(12, '0')}`)];
    for (const [index, id] of patients.entries()) {
      await client.query('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)', [id, `Patient ${index}`, `patient ${index}`, now]);
      await client.query('INSERT INTO patient_organizations (patient_id, organization_id) VALUES ($1, $2)', [id, ORG]);
      await client.query('INSERT INTO patient_consents (patient_id, organization_id, granted_at) VALUES ($1, $2, $3)', [id, ORG, now]);
    }
    // Loaded without the per-row trigger and indexes, then the totals and indexes built once.
    const indexes = (await client.query("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'documents' AND indexname <> 'documents_pkey'")).rows;
    for (const { indexname } of indexes) await client.query(`DROP INDEX ${indexname}`);
    await client.query('ALTER TABLE documents DISABLE TRIGGER documents_keep_counts');
    const insert = `
      INSERT INTO documents (id, patient_id, organization_id, file_name, name_key, file_type, path, path_key, created_at, last_modified_at, has_content, file_size, sha256, version, created_by)
      SELECT gen_random_uuid()::text, $1, $2, name, name, type, folder, folder, stamp, stamp, i % 4 <> 0, CASE WHEN i % 4 = 0 THEN NULL ELSE 1000 + i END, NULL, CASE WHEN i % 4 = 0 THEN 0 ELSE 1 END, 'bench'
      FROM (
        SELECT i, folder, type, 'scan-' || lpad(i::text, 7, '0') || '.' || lower(type) AS name,
               to_char(to_timestamp(($3::bigint - ($4::bigint - i) * 1000) / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS stamp
        FROM (SELECT i, '/cases/case-' || lpad((i / 100)::text, 5, '0') || '/scans' AS folder, (ARRAY['STL','PLY','OBJ','PDF','DCM'])[i % 5 + 1] AS type FROM generate_series(0, $5::int - 1) AS i) AS numbered
      ) AS rows`;
    const epoch = Date.now();
    await client.query(insert, [PATIENT, ORG, epoch, TOTAL_DOCS, MAIN_PATIENT_DOCS]);
    const perOther = Math.floor((TOTAL_DOCS - MAIN_PATIENT_DOCS) / OTHER_PATIENTS);
    for (const id of patients.slice(1)) await client.query(insert, [id, ORG, epoch, TOTAL_DOCS, perOther]);
    await client.query(`INSERT INTO patient_document_counts (patient_id, has_content, documents)
      SELECT patient_id, has_content, count(*) FROM documents WHERE deleted_at IS NULL GROUP BY patient_id, has_content
      ON CONFLICT (patient_id, has_content) DO UPDATE SET documents = EXCLUDED.documents`);
    await client.query(`INSERT INTO patient_document_versions (patient_id, version) SELECT patient_id, count(*) FROM documents GROUP BY patient_id
      ON CONFLICT (patient_id) DO UPDATE SET version = EXCLUDED.version`);
    await client.query('ALTER TABLE documents ENABLE TRIGGER documents_keep_counts');
    for (const { indexdef } of indexes) await client.query(indexdef);
    await client.query('COMMIT');
    await client.query('VACUUM ANALYZE');
  } finally {
    await client.end();
  }
}

/** Documents in a SQLite database file. */
function count(file) {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT count(*) FROM documents').pluck().get();
  } finally {
    db.close();
  }
}

/** The patients of a SQLite database file, the main one first. */
function patientsOf(file) {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT id FROM patients ORDER BY id = ? DESC, id').pluck().all(PATIENT);
  } finally {
    db.close();
  }
}

/** The patients of a PostgreSQL database, the main one first. */
async function patientsOfPostgres(databaseUrl) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query('SELECT id FROM patients ORDER BY id = $1 DESC, id', [PATIENT])).rows.map((row) => row.id);
  } finally {
    await client.end();
  }
}

/** Documents in a PostgreSQL database. */
async function countPostgres(databaseUrl) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return Number((await client.query('SELECT count(*) AS n FROM documents')).rows[0].n);
  } finally {
    await client.end();
  }
}

const seconds = (since) => ((Date.now() - since) / 1000).toFixed(1);
const temp = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bench-stores-'));
const sqliteDir = path.join(temp, 'sqlite');
const postgresDir = path.join(temp, 'postgres');
fs.mkdirSync(sqliteDir);
fs.mkdirSync(postgresDir);
// As docs/several-instances.md tells IT to run it: fsync and synchronous_commit at their defaults
// (on: a commit answered is on disk, so a PostgreSQL crash loses nothing a client was told is
// stored), shared_buffers above the default 128 MB, full-page images in the WAL compressed (lz4).
// BENCH_POSTGRES_SETTINGS="name=value …" adds settings (a later one wins), to measure one before
// docs/several-instances.md recommends it.
/** BENCH_STATEMENTS=1: pg_stat_statements counts each statement's execution and planning time. */
const STATEMENTS = Boolean(process.env.BENCH_STATEMENTS);
const POSTGRES_SETTINGS = [
  'shared_buffers=256MB',
  'wal_compression=lz4',
  ...(STATEMENTS ? ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track_planning=on'] : []),
  ...(process.env.BENCH_POSTGRES_SETTINGS?.split(' ').filter(Boolean) ?? []),
];
const cluster = await startPostgres(POSTGRES_SETTINGS);
const receiver = await startWebhookReceiver(temp);
const results = {};
try {
  console.log(`stores bench: ${TOTAL_DOCS.toLocaleString('en')} documents (${MAIN_PATIENT_DOCS.toLocaleString('en')} for one patient), ${CONNECTIONS} connections, ${DURATION} s a run`);
  console.log(`  PostgreSQL settings: ${POSTGRES_SETTINGS.join(' ')} (the rest at PostgreSQL's defaults)`);
  let started = Date.now();
  const sqliteSeed = writeSeed(sqliteDir);
  const fillSqlite = () => populate(sqliteDir, { mainPatientDocs: MAIN_PATIENT_DOCS, totalDocs: TOTAL_DOCS });
  const sqliteCached = CACHE ? await cachedSqlite(CACHE, populationName(`stores-sqlite-${TOTAL_DOCS}`, populate.toString()), databaseFile(sqliteDir), fillSqlite) : (fillSqlite(), false);
  console.log(`  SQLite: ${count(databaseFile(sqliteDir)).toLocaleString('en')} documents in ${seconds(started)} s${sqliteCached ? ' (a copy of the cached population)' : ''}`);

  const admin = new pg.Client({ connectionString: cluster.url('postgres') });
  await admin.connect();
  await admin.query('CREATE DATABASE patient_docs');
  await admin.end();
  const env = { PATIENT_DOCS_DATABASE_URL: cluster.url('patient_docs') };
  const seed = writeSeed(postgresDir);
  // The server makes its schema and applies the seed; the documents then go in by bulk SQL.
  const fillPostgres = async () => {
    await stopServer((await startServer(postgresDir, seed, { env })).child);
    await populatePostgres(env.PATIENT_DOCS_DATABASE_URL);
  };
  started = Date.now();
  const postgresCached = CACHE ? await cachedPostgres(CACHE, populationName(`stores-postgres-${TOTAL_DOCS}`, populatePostgres.toString()), env.PATIENT_DOCS_DATABASE_URL, fillPostgres) : (await fillPostgres(), false);
  console.log(`  PostgreSQL: ${(await countPostgres(env.PATIENT_DOCS_DATABASE_URL)).toLocaleString('en')} documents in ${seconds(started)} s${postgresCached ? ' (restored from the cached population)' : ''}`);

  const patients = { sqlite: patientsOf(databaseFile(sqliteDir)), postgres: await patientsOfPostgres(env.PATIENT_DOCS_DATABASE_URL) };
  // Both servers run from here on, each loaded in turn (an idle one costs nothing measurable).
  const servers = {};
  try {
    servers.sqlite = await startServer(sqliteDir, sqliteSeed, { env: receiver.serverEnv });
    servers.postgres = { ...(await startServer(postgresDir, seed, { env: { ...env, ...receiver.serverEnv } })), stats: new pg.Client({ connectionString: env.PATIENT_DOCS_DATABASE_URL }) };
    await servers.postgres.stats.connect();
    for (const store of STORES) servers[store].headers = await clientHeaders(servers[store].url);
    const target = ({ child, stats }) => ({ serverPid: child.pid, postgresPid: stats ? cluster.postmasterPid : undefined, stats });
    if (STATEMENTS) await servers.postgres.stats.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()');
    for (const store of STORES) results[store] = await runs(servers[store].url, servers[store].headers, target(servers[store]), receiver, patients[store]);
    if (STATEMENTS) await printStatements(servers.postgres.stats, results.postgres.uncached);
    if (results.sqlite.uncached) {
      for (const store of STORES) results[store].uncachedRounds = [results[store].uncached];
      for (let round = 1; round < ROUNDS; round += 1) {
        for (const store of STORES) results[store].uncachedRounds.push(await uncached(servers[store].url, servers[store].headers, target(servers[store])));
      }
    }
  } finally {
    await servers.postgres?.stats.end();
    for (const server of Object.values(servers)) await stopServer(server.child);
  }
} finally {
  receiver.close();
  cluster.remove();
  fs.rmSync(temp, { recursive: true, force: true });
}

const counted = (key) => (!results.sqlite[key] ? '' : `${results.sqlite[key].count.toLocaleString('en')} / ${results.postgres[key].count.toLocaleString('en')}`);
const names = {
  noOp: 'no-op GET /healthz',
  uncached: 'search, page of 50, a different page each request (uncached)',
  repeated: 'search, one page asked again',
  create: 'create placeholder, one patient',
  createSpread: `create placeholder, each connection its own patient`,
  createAlone: 'create placeholder, one connection alone',
  token: 'token issue (client credentials)',
  upload: `one-shot upload, ${UPLOAD_BYTES / 1024} KiB into a placeholder, at ${UPLOAD_CONNECTIONS} connections (per upload; ${counted('upload')} uploads)`,
  webhooks: `webhook deliveries to ${SUBSCRIPTIONS} subscriptions (per delivery, req/s = deliveries/s; ${counted('webhooks')} deliveries)`,
};
const us = (value) => (value === undefined ? '—' : value.toFixed(0));
const latency = (run) => (run.p50 === undefined ? '—' : `${run.p50} / ${run.p99}`);
/** PostgreSQL's WAL per request: bytes, records, full-page images, and the checkpoints during the run. */
const walFigures = (wal) => (wal === undefined ? '—' : `${wal.bytes.toFixed(0)} B, ${wal.records.toFixed(1)} rec, ${wal.fpi.toFixed(2)} FPI${wal.checkpoints > 0 ? `, ${wal.checkpoints} checkpoint${wal.checkpoints > 1 ? 's' : ''}` : ''}`);
console.log(
  "\n| run | SQLite req/s | PostgreSQL req/s | p50 / p99 ms SQLite | p50 / p99 ms PostgreSQL | server CPU µs/req SQLite | server CPU µs/req PostgreSQL | PostgreSQL's own CPU µs/req | PostgreSQL WAL per req | load average | host steal | errors |",
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const key of Object.keys(names).filter((name) => results.sqlite[name])) {
  const a = results.sqlite[key];
  const b = results.postgres[key];
  console.log(`| ${names[key]} | ${a.requestsPerSecond.toFixed(0)} | ${b.requestsPerSecond.toFixed(0)} | ${latency(a)} | ${latency(b)} | ${us(a.serverCpuUs)} | ${us(b.serverCpuUs)} | ${us(b.postgresCpuUs)} | ${walFigures(b.wal)} | ${a.load.toFixed(1)} / ${b.load.toFixed(1)} | ${a.steal.toFixed(0)}% / ${b.steal.toFixed(0)}% | ${a.failures} / ${b.failures} |`);
}
const { sqlite, postgres } = results;
const targets = [];
const ofRounds = ROUNDS > 1 ? ` (median of ${ROUNDS} rounds)` : '';
if (sqlite.uncached && ROUNDS > 1) {
  console.log(`\nuncached page, ${ROUNDS} rounds (SQLite, then PostgreSQL, in each):`);
  console.log('| round | server CPU µs/req SQLite | server CPU µs/req PostgreSQL | ratio | p99 ms SQLite / PostgreSQL | PostgreSQL\'s own CPU µs/req | load average |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|');
  sqlite.uncachedRounds.forEach((a, index) => {
    const b = postgres.uncachedRounds[index];
    console.log(`| ${index + 1} | ${us(a.serverCpuUs)} | ${us(b.serverCpuUs)} | ${(b.serverCpuUs / a.serverCpuUs).toFixed(2)} | ${a.p99} / ${b.p99} | ${us(b.postgresCpuUs)} | ${a.load.toFixed(1)} / ${b.load.toFixed(1)} |`);
  });
}
if (sqlite.uncached) {
  const ratios = sqlite.uncachedRounds.map((a, index) => postgres.uncachedRounds[index].serverCpuUs / a.serverCpuUs);
  targets.push(
    `PostgreSQL uncached page: server CPU ${median(ratios).toFixed(2)}× SQLite's${ofRounds} (≤ 1.5×), p99 ${median(postgres.uncachedRounds.map((run) => run.p99))} ms${ofRounds} (< 20 ms at ${CONNECTIONS} connections)`,
  );
}
if (sqlite.create) {
  const rate = (key) => `${((postgres[key].requestsPerSecond / sqlite[key].requestsPerSecond) * 100).toFixed(0)}%`;
  targets.push(`PostgreSQL create: ${rate('createSpread')} of SQLite's rate, each connection its own patient (≥ 50%); ${rate('create')} with every connection on one patient`);
}
if (sqlite.uncached) targets.push(`SQLite uncached page of 50: ${(median(sqlite.uncachedRounds.map((run) => run.serverCpuUs)) / 1000).toFixed(2)} ms server CPU${ofRounds} (≤ 0.5 ms)`);
console.log(`\ntargets:\n${targets.map((line) => `  ${line}`).join('\n')}`);
