// Webhook delivery benchmark (issue 4). Needs the compiled server: `npx tsc -b` (npm run bench builds).
//  1. baseline: a plain keep-alive HTTPS POST loop to a local receiver (same concurrency as the
//     dispatcher's per-callback limit);
//  2. the server (child process) delivering to 50 subscriptions on the same receiver:
//     deliveries per second, as a share of the baseline (target >= 50 %);
//  3. event-to-delivery latency p50/p99 with no retries (one subscription, events spaced out).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { cpuSeconds, measureSteal } from './lib/proc.mjs';
import { startWebhookReceiver, subscribePatientUpdates, writePatientEvents } from './lib/webhook-receiver.mjs';

const ROOT = path.resolve(import.meta.dirname, '..');
const MAIN = path.join(ROOT, 'dist/server/main.js');
const SEED = path.join(ROOT, 'test/fixtures/seed.json');
const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const ADMIN = 'bench-admin-token-0123456789';
const SUBSCRIPTIONS = 50;
const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 600); // x 50 subscriptions
const CONCURRENCY = 16; // = DEFAULT_DISPATCHER_OPTIONS.maxPerCallback: all 50 subscriptions share one callback host
const LATENCY_EVENTS = 300;
/** Requests (loop) and deliveries (server) each side makes before it is measured. */
const WARM_UP = 2000;

if (!fs.existsSync(MAIN)) {
  console.error(`${MAIN} is missing: run npx tsc -b first`);
  process.exit(1);
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bench-webhooks-'));
const receiver = await startWebhookReceiver(work);
const { port, ca } = receiver;

// --- 1. baseline -------------------------------------------------------------------------------
const sampleBody = JSON.stringify({
  source: 'patient-docs',
  messageId: '7b1f2c9e-3d4a-5b6c-8d7e-9f0a1b2c3d4e',
  timestamp: new Date().toISOString(),
  eventType: 'patient.updated',
  operationId: '2f9d4c1a-8b7e-4f6a-9c3d-1e2f3a4b5c6d',
  organizationId: ORG,
  data: { patient: { id: PATIENT, name: 'Jane Roe', createdAt: new Date().toISOString(), updatedAt: new Date().toISOString() } },
  patientId: PATIENT,
});
const total = SUBSCRIPTIONS * EVENTS;
/** The plain loop: CONCURRENCY workers POSTing `total` bodies over keep-alive sockets; requests per second. */
async function baseline(count = total) {
  const agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca });
  const post = () =>
    new Promise((resolve, reject) => {
      const request = https.request({ host: '127.0.0.1', port, path: '/baseline', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(sampleBody) } }, (response) => {
        response.resume();
        response.on('end', resolve);
      });
      request.on('error', reject);
      request.end(sampleBody);
    });
  let sent = 0;
  const connectionsBefore = receiver.connections;
  const steal = measureSteal();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (sent < count) {
        sent += 1;
        await post();
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  baselineConnections = receiver.connections - connectionsBefore;
  return { rate: count / seconds, steal: steal() };
}
let baselineConnections = 0;
// Warm-up (JIT, TLS session setup on both sides), not counted.
await baseline(Math.min(total, WARM_UP));
// The machine may be shared: the loop runs before and after the server phase and the faster run counts.
const baselineBefore = await baseline();

// --- 2. the server ------------------------------------------------------------------------------
const dataDir = path.join(work, 'data');
const child = spawn(process.execPath, [...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []), MAIN], {
  cwd: ROOT,
  env: {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: '0',
    ...receiver.serverEnv,
    PATIENT_DOCS_DATA_DIR: dataDir,
    PATIENT_DOCS_SEED: SEED,
    PATIENT_DOCS_ADMIN_TOKEN: ADMIN,
    PATIENT_DOCS_LOG_LEVEL: 'warn',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const baseUrl = await new Promise((resolve, reject) => {
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
    const match = /listening on (http:\/\/[^\s;]+)/.exec(output);
    if (match) resolve(match[1]);
  });
  child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${output}`)));
});
const tokenResponse = await fetch(`${baseUrl}/oauth2/token`, {
  method: 'POST',
  body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'scanner-pc-1', client_secret: 'scanner-pc-1-secret-0123456789' }),
});
const { access_token: token } = await tokenResponse.json();
const api = (route, body) =>
  fetch(`${baseUrl}${route}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'organization-id': ORG, 'content-type': 'application/json' }, body: JSON.stringify(body) });
const admin = (method, route, body) => fetch(`${baseUrl}${route}`, { method, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

const writeEvents = (count, label) => writePatientEvents(baseUrl, ADMIN, PATIENT, count, label);

await subscribePatientUpdates(baseUrl, { authorization: `Bearer ${token}`, 'organization-id': ORG }, port, SUBSCRIPTIONS);

// Warm-up of the server side (JIT, connections to the receiver), not counted: as many deliveries as
// the loop's warm-up had requests (WARM_UP), events written the way the measured run writes them.
receiver.reset();
const warmUpEvents = Math.ceil(WARM_UP / SUBSCRIPTIONS);
await writeEvents(warmUpEvents, 'warm-up');
await receiver.waitForReceived(warmUpEvents * SUBSCRIPTIONS);

/** One measured run: EVENTS events written (four at a time), timed until all their deliveries arrived. */
async function deliveryRun(label) {
  receiver.reset();
  const connectionsBefore = receiver.connections;
  const cpuBefore = cpuSeconds(child.pid);
  const steal = measureSteal();
  const selfBefore = process.cpuUsage();
  const started = performance.now();
  await writeEvents(EVENTS, label);
  const eventsSeconds = (performance.now() - started) / 1000;
  await receiver.waitForReceived(total);
  const seconds = (performance.now() - started) / 1000;
  const self = process.cpuUsage(selfBefore);
  return {
    rate: total / seconds,
    seconds,
    eventsSeconds,
    serverCpuMs: (cpuSeconds(child.pid) - cpuBefore) * 1000,
    steal: steal(),
    receiverCpuMs: (self.user + self.system) / 1000,
    connections: receiver.connections - connectionsBefore,
  };
}
// Like the loop, the server side runs twice and the faster run counts (both are printed).
const runs = [await deliveryRun('run 1'), await deliveryRun('run 2')];
const best = runs.reduce((a, b) => (b.rate > a.rate ? b : a));

const baselineAfter = await baseline();
const baselineRate = Math.max(baselineBefore.rate, baselineAfter.rate);

// --- 3. latency ---------------------------------------------------------------------------------
const latencySubscription = await api('/v1/webhooks/subscribe', { events: ['order.created'], callback: `https://127.0.0.1:${port}/latency`, hmac: 'latency-secret' });
if (latencySubscription.status !== 201) throw new Error('latency subscription failed');
receiver.reset();
for (let index = 0; index < LATENCY_EVENTS; index += 1) {
  const response = await admin('POST', '/admin/v1/orders', { patientId: PATIENT, organizationId: ORG, status: `latency-${index}` });
  await response.arrayBuffer();
  await new Promise((resolve) => setTimeout(resolve, 5));
}
await receiver.waitForReceived(LATENCY_EVENTS);
const latencies = receiver.latencies;
latencies.sort((a, b) => a - b);
const percentile = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))];

child.kill('SIGTERM');
await new Promise((resolve) => child.once('exit', resolve));
receiver.close();
fs.rmSync(work, { recursive: true, force: true });

const share = (run) => (100 * run.rate) / baselineRate;
console.log(`webhooks: ${total} deliveries (${EVENTS} events x ${SUBSCRIPTIONS} subscriptions) to one local HTTPS receiver, at most ${CONCURRENCY} connections each side, both sides warmed up with ${WARM_UP}`);
console.log(`  plain keep-alive POST loop : ${baselineRate.toFixed(0).padStart(6)} req/s        (best of ${baselineBefore.rate.toFixed(0)} before and ${baselineAfter.rate.toFixed(0)} after, host steal ${baselineBefore.steal.toFixed(0)}% and ${baselineAfter.steal.toFixed(0)}%; ${baselineConnections} new TLS connections per run)`);
console.log(`  webhook dispatcher         : ${best.rate.toFixed(0).padStart(6)} deliveries/s = ${share(best).toFixed(0)}% of the loop (target >= 50%; best of ${runs.map((run) => `${run.rate.toFixed(0)} (${share(run).toFixed(0)}%)`).join(' and ')})`);
for (const [index, run] of runs.entries()) {
  console.log(`    run ${index + 1}: ${run.seconds.toFixed(2)} s, events written in ${run.eventsSeconds.toFixed(2)} s; ${run.connections} new TLS connections; CPU: server ${run.serverCpuMs.toFixed(0)} ms (${(run.serverCpuMs / total).toFixed(3)} ms/delivery), receiver+bench ${run.receiverCpuMs.toFixed(0)} ms; host steal ${run.steal.toFixed(0)}%`);
}
console.log(`  event-to-delivery latency  : p50 ${percentile(50)} ms, p99 ${percentile(99)} ms, max ${latencies.at(-1)} ms (${LATENCY_EVENTS} events, one subscription, no retries)`);
// A benchmark reports; it does not fail the run when a figure misses its target (the line above says so).
