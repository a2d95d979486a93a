// Sync engine benchmarks (issue 5), each beside its baseline in the same run:
//  1. initial sync of 2,000 files / 1 GiB (one 500 MB STL, the rest small): engine wall time vs a
//     plain script doing the same create → upload → search calls with the same concurrency
//     (target ≤ 1.25×);
//  2. engine RSS while uploading a 2 GiB file (target < 250 MB);
//  3. idle CPU of the engine watching 50,000 files (target < 1%).
// Runs on the build (`npm run bench` builds first). Sizes can be scaled down with
// SYNC_BENCH_SCALE=0.1 for a quick look; SYNC_BENCH_ONLY=initial,rss,idle picks parts.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { cpuSeconds, rssBytes } from './lib/proc.mjs';
import { freePort, listeningUrl } from './lib/server.mjs';

const ROOT = path.resolve(import.meta.dirname, '..');
const DIST = path.join(ROOT, 'dist');
const SEED = path.join(ROOT, 'test/fixtures/seed.json');
const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const CLIENT = { id: 'scanner-pc-1', secret: 'scanner-pc-1-secret-0123456789' };
const MB = 1024 * 1024;
const SCALE = Number(process.env.SYNC_BENCH_SCALE ?? '1');
const CONCURRENCY = 8;

const { ApiClient } = await import(path.join(DIST, 'electron/sync/api/api-client.js'));
const { SyncEngine } = await import(path.join(DIST, 'electron/sync/engine/engine.js'));
const { openJournal } = await import(path.join(DIST, 'electron/sync/journal/open-journal.js'));
const { openSettings } = await import(path.join(DIST, 'electron/sync/home/settings.js'));

const temp = (name) => fs.mkdtempSync(path.join(os.tmpdir(), `patient-docs-bench-${name}-`));
const cleanup = [];

async function startServer(extraEnv = {}) {
  const dataDir = temp('server');
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(DIST, 'server/main.js')], {
    env: { ...process.env, PORT: String(port), PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: SEED, PATIENT_DOCS_ADMIN_TOKEN: 'bench-admin-token-0123456789', PATIENT_DOCS_LOG_LEVEL: 'warn', ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await listeningUrl(child);
  cleanup.push(async () => {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return { url, child };
}

function apiClient(url) {
  return new ApiClient({ serverUrl: url, organizationId: ORG, credentials: { tokenUrl: `${url}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret } });
}

/** A sparse file with real bytes at both ends: instant to create, every byte still travels. */
function sparseFile(file, bytes) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const handle = fs.openSync(file, 'w');
  fs.writeSync(handle, Buffer.from('solid 500MB scan\n'), 0, 17, 0);
  fs.ftruncateSync(handle, bytes);
  fs.writeSync(handle, Buffer.from('endsolid\n'), 0, 9, bytes - 9);
  fs.closeSync(handle);
}

function makeTree(folder, smallCount, smallBytes, bigBytes) {
  const files = [];
  sparseFile(path.join(folder, 'case-big', 'full arch.stl'), bigBytes);
  files.push({ relativePath: 'case-big/full arch.stl', size: bigBytes });
  const small = Buffer.alloc(smallBytes);
  for (let index = 0; index < smallCount; index += 1) {
    small.writeUInt32LE(index, 0);
    const relativePath = `case-${String(index % 40).padStart(2, '0')}/scan-${index}.dcm`;
    fs.mkdirSync(path.join(folder, path.dirname(relativePath)), { recursive: true });
    fs.writeFileSync(path.join(folder, relativePath), small);
    files.push({ relativePath, size: smallBytes });
  }
  return files;
}

/** The baseline: the same calls as the engine (token once, create, multipart upload streamed from disk, search by id), same concurrency. */
async function plainSync(url, folder, files, basePath) {
  const tokenResponse = await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) });
  const { access_token: token } = await tokenResponse.json();
  const headers = { authorization: `Bearer ${token}`, 'organization-id': ORG, 'content-type': 'application/json' };
  const queue = [...files];
  const worker = async () => {
    for (let file = queue.shift(); file; file = queue.shift()) {
      const folderPath = path.posix.join(basePath, path.posix.dirname(file.relativePath));
      const fileName = path.posix.basename(file.relativePath);
      const created = await (await fetch(`${url}/v1/patients/${PATIENT}/documents`, { method: 'POST', headers, body: JSON.stringify({ fileName, path: folderPath }) })).json();
      const form = new FormData();
      form.set('FileName', fileName);
      form.set('Type', 'DCM');
      form.set('Id', created.id);
      form.set('file', await fs.openAsBlob(path.join(folder, file.relativePath)), fileName);
      const uploaded = await fetch(`${created.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
      if (uploaded.status !== 201) throw new Error(`plain upload ${uploaded.status}: ${await uploaded.text()}`);
      const found = await (await fetch(`${url}/v1/patients/${PATIENT}/documents/search`, { method: 'POST', headers, body: JSON.stringify({ id: [created.id], hasContent: true, offset: 0, limit: 1 }) })).json();
      if (found.documents[0]?.fileSize !== file.size) throw new Error('plain verify failed');
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

async function engineSync(url, folder, expected, basePath) {
  const home = temp('engine');
  cleanup.push(() => fs.rmSync(home, { recursive: true, force: true }));
  const journal = openJournal(path.join(home, 'journal.db'));
  const engine = new SyncEngine({ journal, api: apiClient(url), tuning: { concurrency: CONCURRENCY, settleMs: 200, rescanMinutes: 0, ignorePatterns: [] }, idlePollMs: 1000 });
  const started = performance.now();
  await engine.start([{ id: 'bench', folder, patientId: PATIENT, remoteBasePath: basePath, paused: false }]);
  while (journal.counts('bench').synced < expected) {
    await delay(50);
    const counts = journal.counts('bench');
    if (counts.failed > 0) throw new Error(`engine: ${counts.failed} failed`);
  }
  const elapsed = performance.now() - started;
  await engine.stop();
  journal.close();
  return elapsed;
}

function runCli(home, args, extraEnv = {}) {
  const child = spawn(process.execPath, [path.join(DIST, 'electron/sync/cli/cli.js'), ...args], {
    env: { ...process.env, PATIENT_DOCS_SYNC_HOME: home, PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const done = new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
  return { child, done };
}

async function cliHome(url, folder, { paused = false } = {}) {
  const home = temp('cli-home');
  cleanup.push(() => fs.rmSync(home, { recursive: true, force: true }));
  for (const args of [
    ['connect', '--server', url, '--client-id', CLIENT.id, '--organization', ORG],
    ['add-pair', '--folder', folder, '--patient', PATIENT, '--path', `/bench-${path.basename(home)}`],
    ['config', '--settle-ms', '500'],
  ]) {
    const result = await runCli(home, args).done;
    if (result.code !== 0) throw new Error(`cli ${args[0]}: ${result.output}`);
  }
  if (paused) {
    const settings = openSettings(home);
    settings.set('pairs', settings.get('pairs').map((pair) => ({ ...pair, paused: true })));
  }
  return home;
}

async function initialSyncBench(server) {
  const smallCount = Math.round(1999 * SCALE);
  const bigBytes = Math.round(500 * MB * SCALE);
  const smallBytes = Math.floor((1024 * MB * SCALE - bigBytes) / Math.max(1, smallCount));
  const folder = temp('tree');
  cleanup.push(() => fs.rmSync(folder, { recursive: true, force: true }));
  const files = makeTree(folder, smallCount, smallBytes, bigBytes);
  const totalMB = files.reduce((sum, file) => sum + file.size, 0) / MB;
  // Alternating order (plain, engine, engine, plain): whatever the server still does after a run
  // (thumbnails of the big STL, WAL checkpoints) weighs on both sides alike; the best of each counts.
  const plainRuns = [];
  const engineRuns = [];
  for (const [round, order] of [['a', ['plain', 'engine']], ['b', ['engine', 'plain']]]) {
    for (const side of order) {
      if (side === 'plain') {
        const started = performance.now();
        await plainSync(server.url, folder, files, `/bench-plain-${round}`);
        plainRuns.push(performance.now() - started);
      } else {
        engineRuns.push(await engineSync(server.url, folder, files.length, `/bench-engine-${round}`));
      }
      await delay(3000);
    }
  }
  const plainMs = Math.min(...plainRuns);
  const engineMs = Math.min(...engineRuns);
  console.log(`initial sync: ${files.length} files, ${totalMB.toFixed(0)} MB (one ${(bigBytes / MB).toFixed(0)} MB STL), concurrency ${CONCURRENCY}`);
  const runs = (list) => list.map((ms) => `${(ms / 1000).toFixed(2)} s`).join(', ');
  console.log(`  plain script (create → upload → search):  best ${(plainMs / 1000).toFixed(2)} s (runs: ${runs(plainRuns)})`);
  console.log(`  engine (scan, settle 200 ms, journal, create → upload → re-hash → verify): best ${(engineMs / 1000).toFixed(2)} s (runs: ${runs(engineRuns)})`);
  console.log(`  ratio engine / plain: ${(engineMs / plainMs).toFixed(2)}× (target ≤ 1.25×)`);
}

async function rssBench(server) {
  const folder = temp('big');
  cleanup.push(() => fs.rmSync(folder, { recursive: true, force: true }));
  const bytes = Math.round(2048 * MB * SCALE);
  sparseFile(path.join(folder, 'huge scan.stl'), bytes);
  const home = await cliHome(server.url, folder);
  const run = runCli(home, ['run', '--once', '--timeout', '600']);
  let peak = 0;
  const samples = [];
  const sampler = setInterval(() => {
    try {
      const rss = rssBytes(run.child.pid);
      peak = Math.max(peak, rss);
      samples.push(rss);
    } catch {
      // exited
    }
  }, 100);
  const started = performance.now();
  const result = await run.done;
  clearInterval(sampler);
  if (result.code !== 0) throw new Error(`rss run failed: ${result.output}`);
  const seconds = (performance.now() - started) / 1000;
  console.log(`2 GiB upload: engine (CLI process) peak RSS ${(peak / MB).toFixed(0)} MB, median ${(samples.sort((a, b) => a - b)[samples.length >> 1] / MB).toFixed(0)} MB over ${samples.length} samples (target < 250 MB); ${(bytes / MB / seconds).toFixed(0)} MB/s including start and verification`);
}

async function idleBench(server) {
  const count = Math.round(50_000 * SCALE);
  const folder = temp('idle');
  cleanup.push(() => fs.rmSync(folder, { recursive: true, force: true }));
  for (let index = 0; index < count; index += 1) {
    const dir = path.join(folder, `case-${Math.floor(index / 500)}`);
    if (index % 500 === 0) fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `f-${index}.dcm`), 'x');
  }
  // Paused: the engine watches and journals all of them but uploads none, so what is measured is watching.
  const home = await cliHome(server.url, folder, { paused: true });
  const run = runCli(home, ['run']);
  const Database = (await import('better-sqlite3')).default;
  const started = performance.now();
  for (;;) {
    await delay(500);
    if (!fs.existsSync(path.join(home, 'journal.db'))) continue;
    const database = new Database(path.join(home, 'journal.db'), { readonly: true, fileMustExist: true });
    const observed = database.prepare('SELECT COUNT(*) AS n FROM files').get().n;
    database.close();
    if (observed >= count) break;
    if (performance.now() - started > 300_000) throw new Error(`only ${observed} of ${count} files observed`);
  }
  const readyMs = performance.now() - started;
  await delay(3000);
  const before = cpuSeconds(run.child.pid);
  const windowMs = 20_000;
  await delay(windowMs);
  const after = cpuSeconds(run.child.pid);
  const cpu = ((after - before) / (windowMs / 1000)) * 100;
  const rss = rssBytes(run.child.pid);
  run.child.kill('SIGTERM');
  await run.done;
  console.log(`idle watching ${count} files: CPU ${cpu.toFixed(2)}% over ${windowMs / 1000} s (target < 1%), RSS ${(rss / MB).toFixed(0)} MB; initial scan + journal of all files took ${(readyMs / 1000).toFixed(1)} s`);
}

try {
  const server = await startServer();
  const only = (process.env.SYNC_BENCH_ONLY ?? 'initial,rss,idle').split(',');
  if (only.includes('initial')) await initialSyncBench(server);
  if (only.includes('rss')) await rssBench(server);
  if (only.includes('idle')) await idleBench(server);
} finally {
  for (const step of cleanup.reverse()) await Promise.resolve().then(step).catch(() => undefined);
}
