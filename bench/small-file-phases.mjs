// What one small file costs the server, request by request: a fresh server (as bench/peer-rclone.mjs
// starts it), then N creates, N one-shot multipart uploads and N verification searches (by id,
// hasContent), three at a time as the sync client sends them, each phase measured on its own: the
// server's CPU per file from /proc, split by thread as peer-rclone splits it (main thread, worker
// threads, V8/Node helpers, libuv pool; bench/lib/thread-kinds.cjs). The upload phase includes the
// thumbnail renders it starts (they are waited for). The files are random bytes, as in peer-rclone,
// so each render of a renderable type fails.
//   node bench/small-file-phases.mjs [--files=300] [--bytes=270000] [--types=stl,ply,obj,pdf,dcm]
//                                    [--server=DIR] [--runs=2]
// --server=DIR: another build's server (DIR holds dist/ and a node_modules link), alternating run by
// run with this build's: a change side by side. --types=dcm: no renders (DICOM has no thumbnail).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { cpuSeconds, threadCpuSeconds } from './lib/proc.mjs';
import { CLIENT, ORG, PATIENT } from './lib/populated.mjs';
import { freePort, listeningUrl } from './lib/server.mjs';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values: args } = parseArgs({
  options: { files: { type: 'string', default: '300' }, bytes: { type: 'string', default: '270000' }, types: { type: 'string', default: 'stl,ply,obj,pdf,dcm' }, server: { type: 'string' }, runs: { type: 'string', default: '2' } },
  strict: true,
});
const FILES = Number(args.files);
const BYTES = Number(args.bytes);
const TYPES = args.types.split(',');
const RUNS = Number(args.runs);
const TRANSFERS = 3;
const KINDS = ['total', 'main', 'others', 'helpers', 'pool'];

function request(agent, url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const sent = http.request(url, { method, headers, agent }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        if (response.statusCode >= 300) reject(new Error(`${method} ${url}: ${response.statusCode} ${text}`));
        else resolve(text ? JSON.parse(text) : null);
      });
    });
    sent.on('error', reject);
    sent.end(body);
  });
}

/** Runs `work` for every item, TRANSFERS at a time. */
async function eachInParallel(items, work) {
  let next = 0;
  await Promise.all(Array.from({ length: TRANSFERS }, async () => {
    while (next < items.length) await work(items[next++]);
  }));
}

/** Waits until the server used less than 0.02 CPU-seconds in half a second (its renders are done). */
async function untilIdle(pid) {
  for (let last = cpuSeconds(pid); ; ) {
    await delay(500);
    const now = cpuSeconds(pid);
    if (now - last < 0.02) return;
    last = now;
  }
}

function multipart(file) {
  const boundary = `----bench-${randomBytes(8).toString('hex')}`;
  const field = (name, value) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = Buffer.from(`${field('FileName', file.name)}${field('Type', file.type.toUpperCase())}${field('Id', file.id)}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  return { body: Buffer.concat([head, file.bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** One fresh server of `serverRoot`'s build; returns each phase's CPU per file (ms) by thread kind. */
async function run(serverRoot) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'small-file-phases-'));
  const kindsFile = path.join(dataDir, 'thread-kinds.json');
  const port = await freePort();
  const server = spawn(process.execPath, ['--require', path.join(ROOT, 'bench/lib/thread-kinds.cjs'), path.join(serverRoot, 'dist/server/main.js')], {
    env: { ...process.env, PORT: String(port), PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: path.join(ROOT, 'test/fixtures/seed.json'), PATIENT_DOCS_ADMIN_TOKEN: 'bench-admin-token-0123456789', PATIENT_DOCS_LOG_LEVEL: 'warn', BENCH_THREAD_KINDS_FILE: kindsFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: TRANSFERS });
  try {
    const url = await listeningUrl(server);
    while (!fs.existsSync(kindsFile)) await delay(50);
    const kinds = JSON.parse(fs.readFileSync(kindsFile, 'utf8'));
    const form = `grant_type=client_credentials&client_id=${encodeURIComponent(CLIENT.id)}&client_secret=${encodeURIComponent(CLIENT.secret)}`;
    const { access_token: token } = await request(agent, `${url}/oauth2/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
    const json = (body) => ({ method: 'POST', headers: { authorization: `Bearer ${token}`, 'organization-id': ORG, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const files = Array.from({ length: FILES }, (_, index) => {
      const type = TYPES[index % TYPES.length];
      return { name: `scan-${index}.${type}`, type, folder: `/bench/case-${String(index % 40).padStart(2, '0')}`, bytes: randomBytes(BYTES) };
    });
    await untilIdle(server.pid);
    const phases = {};
    let before = threadCpuSeconds(server.pid, kinds);
    const measured = async (name, work) => {
      await eachInParallel(files, work);
      await untilIdle(server.pid);
      const after = threadCpuSeconds(server.pid, kinds);
      phases[name] = Object.fromEntries(KINDS.map((kind) => [kind, ((after[kind] - before[kind]) * 1000) / FILES]));
      before = after;
    };
    await measured('create', async (file) => {
      const created = await request(agent, `${url}/v1/patients/${PATIENT}/documents`, json({ fileName: file.name, path: file.folder }));
      file.id = created.id;
      file.storageUrl = created.storageUrl;
    });
    await measured('upload', async (file) => {
      const { body, contentType } = multipart(file);
      await request(agent, `${file.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': contentType, 'content-length': body.length }, body });
    });
    await measured('search', (file) => request(agent, `${url}/v1/patients/${PATIENT}/documents/search`, json({ id: [file.id], hasContent: true, offset: 0, limit: 1 })));
    return phases;
  } finally {
    agent.destroy();
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const loadAverage = () => os.loadavg().map((load) => load.toFixed(1)).join(' / ');
const other = args.server ? path.resolve(args.server) : null;
const sides = other ? [['this build', ROOT], ['--server', other]] : [['this build', ROOT]];
console.log(`small-file-phases: ${FILES} files of ${BYTES} bytes (${TYPES.join(', ')}), ${TRANSFERS} at a time; server CPU per file in ms (main / worker threads / V8-Node helpers / libuv pool); load average ${loadAverage()}`);
for (let round = 0; round < RUNS; round += 1) {
  for (const [label, serverRoot] of round % 2 === 0 ? sides : [...sides].reverse()) {
    const phases = await run(serverRoot);
    const line = Object.entries(phases)
      .map(([name, cpu]) => `${name} ${cpu.total.toFixed(2)} (${cpu.main.toFixed(2)} / ${cpu.others.toFixed(2)} / ${cpu.helpers.toFixed(2)} / ${cpu.pool.toFixed(2)})`)
      .join('   ');
    console.log(`  run ${round + 1} ${label.padEnd(10)} ${line}`);
  }
}
console.log(`  (load average ${loadAverage()})`);
