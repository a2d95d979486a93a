// What `webhooks prune` (and PATIENT_DOCS_WEBHOOK_RETENTION_DAYS) costs, on SQLite and PostgreSQL:
// a queue of delivered messages (one attempt and one outbox event each, every hundredth still
// waiting for a retry), half of them older than the date, pruned while a writer keeps appending
// outbox events (a change a request makes). Prints rows removed per second and how long the writer
// waited at worst: the prune goes a batch per transaction so that requests are not held up.
//   node bench/webhook-prune.mjs [--quick] [--batch N]       (after npm run build)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { PostgresStore } from '../dist/server/db/postgres/store.js';
import { SqliteStore } from '../dist/server/db/sqlite/store.js';
import { startPostgres } from './lib/postgres.mjs';

const quick = process.argv.includes('--quick');
const batchFlag = process.argv.indexOf('--batch');
/** Rows per transaction (the store's default, WEBHOOK_PRUNE_BATCH, unless --batch N). */
const batch = batchFlag === -1 ? undefined : Number(process.argv[batchFlag + 1]);
const MESSAGES = quick ? 20_000 : 200_000;
const START = Date.parse('2026-01-01T00:00:00.000Z');
/** One message a minute: half of them before the date. */
const at = (index) => new Date(START + index * 60_000).toISOString();
const BEFORE = at(MESSAGES / 2);

function fillSqlite(db) {
  db.exec(`INSERT INTO webhook_subscriptions (id, organization_id, client_id, events, callback, sealed_secret, status, created_at, from_sequence)
           VALUES ('sub', 'org', 'client', '[]', 'https://lab.example/hook', 's', 'active', '${at(0)}', 0)`);
  const event = db.prepare(`INSERT INTO outbox_events (id, event_type, patient_id, organization_id, operation_id, occurred_at, data) VALUES (?, 'order.updated', NULL, 'org', 'op', ?, '{}')`);
  const message = db.prepare(
    `INSERT INTO webhook_messages (id, subscription_id, event_id, event_type, state, attempts, next_attempt_at, created_at, updated_at) VALUES (?, 'sub', ?, 'order.updated', ?, 1, 0, ?, ?)`,
  );
  const attempt = db.prepare(`INSERT INTO webhook_attempts (message_id, subscription_id, attempt, attempted_at, latency_ms, outcome) VALUES (?, 'sub', 1, ?, 5, 'delivered')`);
  db.transaction(() => {
    for (let index = 0; index < MESSAGES; index++) {
      event.run(`e${index}`, at(index));
      message.run(`m${index}`, `e${index}`, index % 100 === 0 ? 'pending' : 'delivered', at(index), at(index));
      attempt.run(`m${index}`, at(index));
    }
    db.prepare('INSERT INTO webhook_cursor (id, sequence) VALUES (1, ?)').run(MESSAGES);
  })();
}

async function fillPostgres(db) {
  await db.run(`INSERT INTO webhook_subscriptions (id, organization_id, client_id, events, callback, sealed_secret, status, created_at, from_sequence)
                VALUES ('sub', 'org', 'client', '[]', 'https://lab.example/hook', 's', 'active', $1, 0)`, [at(0)]);
  const time = `to_char(to_timestamp($1::bigint / 1000.0 + i * 60) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  await db.run(`INSERT INTO outbox_events (id, event_type, patient_id, organization_id, operation_id, occurred_at, data)
                SELECT 'e' || i, 'order.updated', NULL, 'org', 'op', ${time}, '{}' FROM generate_series(0, $2::int - 1) i`, [START, MESSAGES]);
  await db.run(`INSERT INTO webhook_messages (id, subscription_id, event_id, event_type, state, attempts, next_attempt_at, created_at, updated_at)
                SELECT 'm' || i, 'sub', 'e' || i, 'order.updated', CASE WHEN i % 100 = 0 THEN 'pending' ELSE 'delivered' END, 1, 0, ${time}, ${time}
                FROM generate_series(0, $2::int - 1) i`, [START, MESSAGES]);
  await db.run(`INSERT INTO webhook_attempts (message_id, subscription_id, attempt, attempted_at, latency_ms, outcome)
                SELECT 'm' || i, 'sub', 1, ${time}, 5, 'delivered' FROM generate_series(0, $2::int - 1) i`, [START, MESSAGES]);
  await db.run('INSERT INTO webhook_cursor (id, sequence) VALUES (1, $1)', [MESSAGES]);
  await db.run('ANALYZE');
}

/** An order change with its outbox event: what a request writes. */
function change(store, n) {
  const now = new Date().toISOString();
  return store.orders.update({ id: 'order', patientId: 'patient', organizationId: 'org', status: `s${n}`, createdAt: at(0), updatedAt: now }, [
    { id: randomUUID(), eventType: 'order.updated', patientId: 'patient', organizationId: 'org', operationId: randomUUID(), occurredAt: now, data: {} },
  ]);
}

/** Writes a change every 2 ms or as soon as it can after (a first one not counted) until stopped; returns the longest wait. */
async function writer(store) {
  await store.organizations.upsert({ id: 'org', name: 'Clinic', createdAt: at(0) });
  if (!(await store.orders.get('order'))) {
    await store.patients.create({ id: 'patient', name: 'Jane Roe', organizations: ['org'], consents: ['org'], identifiers: [], birthDate: null, createdAt: at(0), updatedAt: at(0) }, []);
    await store.orders.create({ id: 'order', patientId: 'patient', organizationId: 'org', status: 'new', createdAt: at(0), updatedAt: at(0) }, []);
  }
  await change(store, 0);
  let stopped = false;
  let slowest = 0;
  let writes = 0;
  const done = (async () => {
    while (!stopped) {
      // From when the write is due (2 ms after the last) to its commit: on SQLite a batch holds this
      // process's thread, as it holds a request's, and the write waits for it to end.
      const due = performance.now() + 2;
      await new Promise((resolve) => setTimeout(resolve, 2));
      await change(store, writes + 1);
      slowest = Math.max(slowest, performance.now() - due);
      writes += 1;
    }
  })();
  return {
    async stop() {
      stopped = true;
      await done;
      return { slowest, writes };
    },
  };
}

async function measure(name, store) {
  // The writer alone first, for as long as a prune of this size takes about: what its slowest is anyway.
  const alone = await writer(store);
  await new Promise((resolve) => setTimeout(resolve, quick ? 2_000 : 10_000));
  const baseline = await alone.stop();
  const write = await writer(store);
  const started = performance.now();
  const report = await store.webhooks.prune({ before: BEFORE, dead: false, ...(batch ? { batch } : {}) });
  const seconds = (performance.now() - started) / 1000;
  const { slowest, writes } = await write.stop();
  const rows = report.delivered + report.attempts + report.events;
  console.log(
    `${name.padEnd(10)} removed ${report.delivered} messages, ${report.attempts} attempts, ${report.events} events in ${seconds.toFixed(2)} s ` +
      `(${Math.round(rows / seconds)} rows/s); a writer beside it: ${writes} writes, the longest from due to committed ${slowest.toFixed(1)} ms ` +
      `(alone: ${baseline.writes} writes, ${baseline.slowest.toFixed(1)} ms)`,
  );
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bench-prune-'));
try {
  const sqlite = SqliteStore.open(path.join(dir, 'db.sqlite'));
  fillSqlite(sqlite.db);
  await measure('sqlite', sqlite);
  await sqlite.close();

  const cluster = await startPostgres();
  try {
    const postgres = await PostgresStore.open(await cluster.createDatabase('prune'), { webhookLeaseMs: 60_000 });
    await fillPostgres(postgres.db);
    await measure('postgres', postgres);
    await postgres.close();
  } finally {
    cluster.remove();
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
