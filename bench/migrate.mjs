// Migration throughput (issue 26): `patient-docs-admin migrate` of an embedded installation with
// --documents (default 100,000) documents of --kib KiB each (default 4) to a fresh PostgreSQL and a
// new content folder, in documents/s and MB/s; beside its baselines from the same run: `cp -r` of
// the content folder (the file system's copy, no checks) and the records exported by `sqlite3 -csv`
// and loaded by COPY (no upserts, no checks). Then the same command again (a run after a complete one: every row
// compared, every file recorded as done checked at its size, nothing written). Beside each run: the CPU seconds of
// PostgreSQL's backends and the WAL it wrote.
//   node bench/migrate.mjs [--documents N] [--kib K]
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes, createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { SqliteStore } from '../dist/server/db/sqlite/store.js';
import { prepareStore } from '../dist/server/prepare-store.js';
import { ORG } from './lib/populated.mjs';
import { startPostgres } from './lib/postgres.mjs';
import { measureSteal } from './lib/proc.mjs';

const option = (name, fallback) => {
  const index = process.argv.indexOf(name);
  return index >= 0 && process.argv[index + 1] !== undefined ? Number(process.argv[index + 1]) : fallback;
};
const DOCUMENTS = option('--documents', 100_000);
const KIB = option('--kib', 4);
const PATIENTS = 100;
const ROOT = path.resolve(import.meta.dirname, '..');
const ADMIN_CLI = path.join(ROOT, 'dist/server/admin/cli.js');

/** An embedded installation: one clinic, 100 patients, DOCUMENTS documents with one version each and their files. */
async function populate(dataDir) {
  const store = SqliteStore.open(path.join(dataDir, 'patient-docs.sqlite'));
  await prepareStore(store);
  const db = store.db;
  const now = new Date().toISOString();
  db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run(ORG, 'Smile Clinic', now);
  const patients = Array.from({ length: PATIENTS }, () => randomUUID());
  for (const [index, id] of patients.entries()) {
    db.prepare('INSERT INTO patients (id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(id, `Patient ${index}`, `patient ${index}`, now, now);
    db.prepare('INSERT INTO patient_organizations VALUES (?, ?)').run(id, ORG);
    db.prepare('INSERT INTO patient_consents VALUES (?, ?, ?)').run(id, ORG, now);
  }
  const objects = path.join(dataDir, 'content', 'objects');
  const document = db.prepare(`INSERT INTO documents (id, patient_id, organization_id, file_name, name_key, file_type, path, path_key, created_at,
    last_modified_at, has_content, file_size, sha256, version, content_key, content_type, created_by) VALUES (?, ?, ?, ?, ?, 'STL', ?, ?, ?, ?, 1, ?, ?, 1, ?, 'model/stl', 'bench')`);
  const version = db.prepare(`INSERT INTO document_versions (document_id, version, file_type, original_file_name, file_size, sha256, content_key, content_type,
    thumbnail_status, uploaded_at, uploaded_by) VALUES (?, 1, 'STL', ?, ?, ?, ?, 'model/stl', 'none', ?, 'bench')`);
  const audit = db.prepare(`INSERT INTO audit_log (at, action, outcome, status, organization_id, client_id, patient_id, document_id, version, request_id)
    VALUES (?, 'upload', 'allowed', 201, ?, 'bench', ?, ?, 1, ?)`);
  const addBatch = db.transaction((rows) => {
    for (const row of rows) {
      document.run(row.id, row.patientId, ORG, row.name, row.name, row.folder, row.folder, now, now, row.size, row.sha256, row.key);
      version.run(row.id, row.name, row.size, row.sha256, row.key, now);
      audit.run(now, ORG, row.patientId, row.id, randomUUID());
    }
  });
  let bytes = 0;
  for (let from = 0; from < DOCUMENTS; from += 5000) {
    const rows = [];
    for (let index = from; index < Math.min(from + 5000, DOCUMENTS); index += 1) {
      const id = randomUUID();
      const content = randomBytes(KIB * 1024);
      const key = `documents/${id}/v1-${randomUUID()}`;
      fs.mkdirSync(path.join(objects, 'documents', id), { recursive: true });
      fs.writeFileSync(path.join(objects, key), content);
      bytes += content.length;
      const folder = `/cases/case-${String(Math.floor(index / 100)).padStart(5, '0')}`;
      rows.push({ id, patientId: patients[index % PATIENTS], name: `scan-${index}.stl`, folder, size: content.length, sha256: createHash('sha256').update(content).digest('hex'), key });
    }
    addBatch(rows);
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return bytes;
}

function runMigrate(dataDir, databaseUrl, storageUrl) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [ADMIN_CLI, 'migrate', '--to-database', databaseUrl, '--to-storage', storageUrl], {
      cwd: ROOT,
      env: { ...process.env, PATIENT_DOCS_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.once('exit', (code) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (code === 0) resolve({ seconds, stdout, steps: stderr.split('\n').filter((text) => / in \d+\.\d s$/.test(text)) });
      else reject(new Error(`migrate exited with ${code}:\n${stderr}`));
    });
  });
}

/** CPU seconds of the cluster's ended backends (a postmaster's reaped children: the command's connections once it exits). */
function postgresCpu(postmasterPid) {
  // After the command name: state is the first field, cutime and cstime the 14th and 15th, in clock ticks of 1/100 s.
  const fields = fs.readFileSync(`/proc/${postmasterPid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

async function walPosition(databaseUrl) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query('SELECT pg_current_wal_lsn() AS lsn')).rows[0].lsn;
  } finally {
    await client.end();
  }
}

async function walSince(databaseUrl, lsn) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return Number((await client.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS bytes', [lsn])).rows[0].bytes);
  } finally {
    await client.end();
  }
}

/** A run of the command with what PostgreSQL did for it: its backends' CPU seconds and the WAL bytes written meanwhile. */
async function measuredMigrate(dataDir, databaseUrl, storageUrl) {
  const cpu = postgresCpu(postgres.postmasterPid);
  const lsn = await walPosition(databaseUrl);
  const run = await runMigrate(dataDir, databaseUrl, storageUrl);
  return { ...run, postgresCpu: postgresCpu(postgres.postmasterPid) - cpu, wal: await walSince(databaseUrl, lsn) };
}

function timed(work) {
  const started = process.hrtime.bigint();
  work();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

const mb = (bytes) => bytes / 1e6;
const line = (label, seconds, bytes) => `${label.padEnd(44)} ${seconds.toFixed(1).padStart(7)} s  ${(DOCUMENTS / seconds).toFixed(0).padStart(7)} documents/s  ${(mb(bytes) / seconds).toFixed(1).padStart(7)} MB/s`;

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bench-migrate-'));
const postgres = await startPostgres();
try {
  const source = path.join(work, 'embedded');
  console.log(`populating ${DOCUMENTS} documents of ${KIB} KiB (one version each, one audit entry each) …`);
  const bytes = await populate(source);
  execFileSync('sync');
  const steal = measureSteal();

  const databaseUrl = await postgres.createDatabase('migrated');
  const target = path.join(work, 'target');
  const first = await measuredMigrate(source, databaseUrl, pathToFileURL(path.join(target, 'content')).href);
  const again = await measuredMigrate(source, databaseUrl, pathToFileURL(path.join(target, 'content')).href);
  if (!/nothing changed/.test(again.stdout)) throw new Error(`the second run changed something:\n${again.stdout}`);

  execFileSync('sync');
  const copy = timed(() => execFileSync('cp', ['-r', path.join(source, 'content'), path.join(work, 'cp-copy')]));
  // The records' baseline: the three big tables exported as CSV and loaded with COPY, no checks.
  const dumpUrl = await postgres.createDatabase('copied');
  execFileSync(process.execPath, ['-e', `import('${pathToFileURL(path.join(ROOT, 'dist/server/db/postgres/store.js')).href}').then(async ({ PostgresStore }) => (await PostgresStore.open('${dumpUrl}')).close())`]);
  const tables = { organizations: '*', patients: '*', documents: '*', document_versions: '*', audit_log: 'at, action, outcome, status, organization_id, client_id, patient_id, document_id, version, request_id, remote_address, detail' };
  const records = timed(() => {
    for (const [table, columns] of Object.entries(tables)) {
      const csv = path.join(work, `${table}.csv`);
      execFileSync('sqlite3', ['-csv', path.join(source, 'patient-docs.sqlite'), `SELECT ${columns} FROM ${table}`], { stdio: ['ignore', fs.openSync(csv, 'w'), 'inherit'] });
      const list = columns === '*' ? '' : ` (${columns})`;
      execFileSync('psql', ['-q', '-v', 'ON_ERROR_STOP=1', '-d', dumpUrl, '-c', `\\copy ${table}${list} FROM '${csv}' CSV`], { stdio: ['ignore', 'ignore', 'inherit'] });
    }
  });

  console.log(`\n${DOCUMENTS} documents, ${(mb(bytes)).toFixed(0)} MB of content, ${DOCUMENTS} audit entries; ${os.cpus().length} CPUs; steal ${steal().toFixed(1)} %`);
  console.log(line('admin migrate (PostgreSQL + file:// content)', first.seconds, bytes));
  const postgresLine = (run) => `    PostgreSQL: ${run.postgresCpu.toFixed(1)} CPU seconds, ${(run.wal / 1e6).toFixed(1)} MB of WAL`;
  console.log(postgresLine(first));
  for (const step of first.steps) console.log(`    ${step}`);
  console.log(line('admin migrate again (nothing to change)', again.seconds, bytes));
  console.log(postgresLine(again));
  for (const step of again.steps) console.log(`    ${step}`);
  console.log(line('baseline: cp -r of the content folder', copy, bytes));
  console.log(`${'baseline: sqlite3 -csv | COPY of the records'.padEnd(44)} ${records.toFixed(1).padStart(7)} s  ${(DOCUMENTS / records).toFixed(0).padStart(7)} documents/s`);
  console.log(`${'baseline: cp -r + COPY together'.padEnd(44)} ${(copy + records).toFixed(1).padStart(7)} s  ${(DOCUMENTS / (copy + records)).toFixed(0).padStart(7)} documents/s  ${(mb(bytes) / (copy + records)).toFixed(1).padStart(7)} MB/s`);
} finally {
  postgres.remove();
  fs.rmSync(work, { recursive: true, force: true });
}
