// What a create costs with no HTTP in the way: DocumentService.create (name and path rules, the
// placeholder and its document.created event) into the server's own SQLite store, schema and
// settings, on the database bench/search.mjs fills (1,000,000 documents; 100,000 with --quick),
// creates arriving 1, 5 or 10 in one turn of the event loop (they then share one transaction: the
// group commit of SqliteDocuments), with and without the audit entry each create also writes.
// Beside it, in the same script: the real server's no-op route and its create route on the same
// database, under autocannon as in bench/search.mjs. So it shows the share of the no-op's req/s a
// create could reach if HTTP, the token check and the response cost nothing at all.
//   node bench/create-floor.mjs [--quick]                      (after npm run build)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { AuditLog } from '../dist/server/audit/log.js';
import { SqliteStore } from '../dist/server/db/sqlite/store.js';
import { DocumentService } from '../dist/server/domain/document-service.js';
import { Links } from '../dist/server/domain/links.js';
import { clientHeaders, CLIENT, createRequests, databaseFile, ORG, PATIENT, populate, startServer, stopServer } from './lib/populated.mjs';

const quick = process.argv.includes('--quick');
const TOTAL_DOCS = quick ? 100_000 : 1_000_000;
const MAIN_PATIENT_DOCS = quick ? 20_000 : 100_000;
const SECONDS = quick ? 4 : 8;
const CREATES = quick ? 10_000 : 30_000;
const BATCHES = [1, 5, 10];
const TARGET = 0.25;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-create-floor-'));
try {
  console.log(`create floor: populating ${TOTAL_DOCS.toLocaleString('en')} documents…`);
  const { seed } = populate(dataDir, { mainPatientDocs: MAIN_PATIENT_DOCS, totalDocs: TOTAL_DOCS });

  // The real server first: its no-op (fastest of three runs) and its create route.
  const { child, url } = await startServer(dataDir, seed);
  let noOp = 0;
  let http;
  try {
    const headers = await clientHeaders(url);
    for (let round = 0; round < 3; round += 1) {
      await autocannon({ url: `${url}/healthz`, connections: 10, duration: 1 });
      noOp = Math.max(noOp, (await autocannon({ url: `${url}/healthz`, connections: 10, duration: SECONDS })).requests.average);
    }
    const creates = createRequests(url, headers, 'http');
    await autocannon({ ...creates, connections: 10, duration: 1 });
    http = await autocannon({ ...creates, connections: 10, duration: SECONDS });
    if (http.non2xx + http.errors > 0) throw new Error(`create route: ${http.non2xx} non-2xx, ${http.errors} errors`);
  } finally {
    await stopServer(child);
  }

  // Then the same database in this process, as the server opens it.
  const store = SqliteStore.open(databaseFile(dataDir));
  const documents = new DocumentService(store, new Links(url, Buffer.alloc(32, 1)));
  const actor = { clientId: CLIENT.id, organizationId: ORG, operationId: 'bench' };
  let name = 0;
  const createMany = (count) => Promise.all(Array.from({ length: count }, () => documents.create(PATIENT, { fileName: `floor-${name++}.stl`, path: '/bench' }, actor)));
  // The entry the audit hook records for a create (server/audit/http.ts), written as the server
  // writes it while it writes anyway: through the same connection, a transaction every 200 ms.
  const auditEntry = (index) => ({
    at: new Date().toISOString(),
    action: 'create',
    outcome: 'allowed',
    status: 201,
    organizationId: ORG,
    clientId: CLIENT.id,
    patientId: PATIENT,
    documentId: null,
    version: null,
    requestId: `floor-${index}`,
    remoteAddress: '127.0.0.1',
    detail: { path: '/bench', fileName: `floor-${index}.stl` },
  });
  const measure = async (batch, audit) => {
    const log = audit ? new AuditLog(store.audit) : undefined;
    await createMany(batch * 50); // warm-up
    const cpu = process.cpuUsage();
    const started = process.hrtime.bigint();
    for (let done = 0; done < CREATES; done += batch) {
      await createMany(batch);
      if (log) for (let index = 0; index < batch; index += 1) log.record(auditEntry(done + index));
    }
    if (log) await log.close(5000);
    const elapsed = Number(process.hrtime.bigint() - started) / 1000;
    const used = process.cpuUsage(cpu);
    return { wall: elapsed / CREATES, cpu: (used.user + used.system) / CREATES };
  };
  const rows = [];
  for (const batch of BATCHES) rows.push({ batch, store: await measure(batch, false), audited: await measure(batch, true) });
  store.close();

  const budget = 1e6 / (noOp * TARGET);
  console.log(`\nno-op GET /healthz of the server on this database: ${noOp.toFixed(0)} req/s (fastest of 3 runs of ${SECONDS} s)`);
  console.log(`create route over HTTP (10 connections): ${http.requests.average.toFixed(0)} req/s = ${((http.requests.average / noOp) * 100).toFixed(0)}% of the no-op; p50 ${http.latency.p50} ms`);
  console.log(`the ${TARGET * 100}% target: ${(noOp * TARGET).toFixed(0)} creates/s, i.e. ${budget.toFixed(0)} µs per create for everything (HTTP, token, audit, SQLite)\n`);
  // A create is an HTTP request too: it costs at least what the no-op costs (a POST with a body to
  // read and validate, two hooks and a JSON answer costs more), on top of the work measured here.
  const noOpMicroseconds = 1e6 / noOp;
  console.log(`| creates per transaction | store only: µs per create (CPU) | with its audit entry: µs per create (CPU) | creates/s with HTTP free: store only / with audit (vs the no-op) | with HTTP at the no-op's own ${noOpMicroseconds.toFixed(0)} µs: store only / with audit (vs the no-op) |`);
  console.log('|---:|---:|---:|---:|---:|');
  const share = (microseconds) => `${(1e6 / microseconds).toFixed(0)} (${((1e6 / microseconds / noOp) * 100).toFixed(0)}%)`;
  for (const { batch, store: alone, audited } of rows) {
    console.log(
      `| ${batch} | ${alone.wall.toFixed(0)} (${alone.cpu.toFixed(0)}) | ${audited.wall.toFixed(0)} (${audited.cpu.toFixed(0)}) | ${share(alone.wall)} / ${share(audited.wall)} | ${share(alone.wall + noOpMicroseconds)} / ${share(audited.wall + noOpMicroseconds)} |`,
    );
  }
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
