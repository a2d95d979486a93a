// What the audit log costs per access: the request's part (building the entry and keeping it in
// memory) and the flush's part (its share of transactions of 500 inserts into a table that
// already holds many entries, with its four indexes), on a real database file with the server's
// settings (WAL, synchronous NORMAL).
// Entries spread over the patients being seen (20 at a time by default: a clinic's chairs over a
// morning); spread over more, more index pages change per flush and it costs more (about twice at 500).
//   node bench/audit.mjs [--quick] [--patients N]       (after npm run build)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AuditLog } from '../dist/server/audit/log.js';
import { SqliteStore } from '../dist/server/db/sqlite/store.js';

const quick = process.argv.includes('--quick');
const EXISTING = quick ? 50_000 : 500_000;
const MEASURED = quick ? 20_000 : 100_000;
const ROUNDS = 3;
const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const patientsFlag = process.argv.indexOf('--patients');
const ACTIVE_PATIENTS = patientsFlag === -1 ? 20 : Number(process.argv[patientsFlag + 1]);
const patients = Array.from({ length: ACTIVE_PATIENTS }, (_, index) => `5f0e8a3c-1d2b-4c3d-8e9f-${String(index).padStart(12, '0')}`);

function entry(index) {
  return {
    at: new Date().toISOString(),
    action: index % 3 === 0 ? 'search' : 'download',
    outcome: 'allowed',
    status: 200,
    organizationId: ORG,
    clientId: `scanner-pc-${index % 8}`,
    patientId: patients[index % patients.length],
    documentId: index % 3 === 0 ? null : '01934f6e-7c1a-7b2e-9d3f-' + String(index).padStart(12, '0'),
    version: 1,
    requestId: '8f0e8a3c-1d2b-4c3d-8e9f-' + String(index).padStart(12, '0'),
    remoteAddress: '10.0.0.7',
    detail: index % 3 === 0 ? { path: '/scans', results: 50, total: 120 } : { bytes: 1_234_567, size: 1_234_567 },
  };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bench-audit-'));
const store = SqliteStore.open(path.join(dir, 'patient-docs.sqlite'));
try {
  for (let done = 0; done < EXISTING; done += 5000) await store.audit.append(Array.from({ length: 5000 }, (_, index) => entry(done + index)));
  const results = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const log = new AuditLog(store.audit, { flushEveryMs: 3_600_000 });
    const recordStart = process.hrtime.bigint();
    for (let index = 0; index < MEASURED; index += 1) log.record(entry(index));
    const recordNs = Number(process.hrtime.bigint() - recordStart);
    const flushStart = process.hrtime.bigint();
    await log.flush();
    const flushNs = Number(process.hrtime.bigint() - flushStart);
    await log.close(0);
    results.push({ record: recordNs / MEASURED / 1000, flush: flushNs / MEASURED / 1000 });
  }
  const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const record = median(results.map((result) => result.record));
  const flush = median(results.map((result) => result.flush));
  console.log(
    `audit log, ${MEASURED} entries over ${ACTIVE_PATIENTS} patients into a table of ${EXISTING}+: record (build + keep in memory) ${record.toFixed(2)} µs/entry, ` +
      `flush (batched inserts, 4 indexes) ${flush.toFixed(2)} µs/entry, total ${(record + flush).toFixed(2)} µs/entry (median of ${ROUNDS} rounds)`,
  );
} finally {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
