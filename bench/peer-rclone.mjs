// Sync against the fastest peer on this machine (issue 28): `patient-docs-sync run --once` (fresh
// sync home, fresh server) against `rclone copy` to `rclone serve webdav` (Debian's rclone), 3
// parallel transfers on both sides, on three workloads:
//   mixed  2,000 files / 1 GiB, one 500 MiB STL, the rest STL/PLY/OBJ/PDF/DCM of ~270 KB
//   small  10,000 files of 2–20 KB
//   big    one 2 GiB file
// Runs alternate (engine, rclone, then rclone, engine, …); each run is checked on the server side
// afterwards (every stored byte hashed and compared with the source). Prints medians, the ratio of
// each pair of runs, and the client's and the server's CPU-seconds (the server's counted until it
// is idle again: thumbnails render after the uploads). The engine's server's CPU is also split by
// thread: main (JavaScript: routes, database, upload streams), worker threads (the thumbnail
// renders, the audit writer, secret checks), Node's helpers
// (V8's garbage collection and compilation threads) and libuv's pool (file writes, fsync), each
// user and kernel time together (bench/lib/thread-kinds.cjs tells them apart).
//
//   node bench/peer-rclone.mjs [--quick] [--only=mixed,small,big] [--runs=N] [--baseline=DIR]
//                              [--baseline-server=DIR] [--skip-rclone]
// --only also takes mixed-rest (the mixed workload without its big STL) and mixed-big (the big STL
// alone): what the big file costs the server, and what the other 1,999 files do.
// Each engine run also counts the client's journal writes (bench/lib/journal-count.cjs): writing
// statements and commits, printed per file with the client's CPU per file.
// --baseline=DIR: a third side, the sync client of another build (DIR holds its bin/ and dist/,
// e.g. a copy made before a change) against the same server, alternating with the others, so a
// change's effect on the client is measured under the same load as this build's.
// --baseline-server=DIR: the baseline side's server is DIR's (dist/server/main.js) instead of this
// build's; its client is --baseline's, or this build's without it. A server change's CPU, side by side.
// --skip-rclone: the engine's sides only (no ratios), for comparing two builds in less time.
// BENCH_CLIENT_NODE_ARGS: extra node arguments for the engine's `run --once` (space-separated),
// e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the client during its runs.
// BENCH_SERVER_NODE_ARGS: the same for the bundled server of the engine's runs (a profile is
// written when the bench stops the server).
// The big file's workload also prints the disk's floor: `dd` copying the same file into the temp
// folder with fdatasync, the least an upload that makes its bytes durable can take on this disk.
// --quick: 200 files / 64 MiB (one 32 MiB STL), 1,000 small files, one 256 MiB file.
// Skips itself (exit 0) where rclone is not installed. Runs on the build (`npm run bench` builds first).
import { execFile, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { median } from './lib/figures.mjs';
import { cpuSeconds, measureSteal, threadCpuSeconds } from './lib/proc.mjs';
import { CLIENT, ORG, PATIENT } from './lib/populated.mjs';
import { freePort, listeningUrl } from './lib/server.mjs';

const ROOT = path.resolve(import.meta.dirname, '..');
const DIST = path.join(ROOT, 'dist');
const SEED = path.join(ROOT, 'test/fixtures/seed.json');
const MiB = 1024 * 1024;
const TRANSFERS = 3;

const { values: args } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, only: { type: 'string' }, runs: { type: 'string' }, baseline: { type: 'string' }, 'baseline-server': { type: 'string' }, 'skip-rclone': { type: 'boolean', default: false } },
  strict: true,
});

const rclone = spawnSync('rclone', ['version'], { encoding: 'utf8' });
if (rclone.error || rclone.status !== 0) {
  console.log('peer-rclone: skipped, rclone is not installed here (Debian: apt-get install rclone)');
  process.exit(0);
}
const rcloneVersion = rclone.stdout.split('\n')[0];

const quick = args.quick;
const MIXED = quick ? { files: 200, totalBytes: 64 * MiB, bigBytes: 32 * MiB } : { files: 2000, totalBytes: 1024 * MiB, bigBytes: 500 * MiB };
const WORKLOADS = {
  mixed: MIXED,
  'mixed-rest': { ...MIXED, withBig: false },
  'mixed-big': { ...MIXED, withRest: false },
  small: quick ? { files: 1000, minBytes: 2000, maxBytes: 20_000 } : { files: 10_000, minBytes: 2000, maxBytes: 20_000 },
  big: quick ? { bytes: 256 * MiB } : { bytes: 2048 * MiB },
};
const only = (args.only ?? 'mixed,small,big').split(',');
const RUNS = Number(args.runs ?? (quick ? 3 : 3));

const temp = (name) => fs.mkdtempSync(path.join(os.tmpdir(), `peer-rclone-${name}-`));
const cleanup = [];

// ---- workloads: real bytes (random, so nothing compresses or dedupes), made once per workload

/** A file of `bytes` random bytes, written in 4 MiB pieces; returns its sha256. */
function randomFile(file, bytes) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const hash = createHash('sha256');
  const handle = fs.openSync(file, 'w');
  const piece = randomBytes(Math.min(bytes, 4 * MiB));
  for (let written = 0; written < bytes; ) {
    const length = Math.min(piece.length, bytes - written);
    // Each piece differs (its first 8 bytes are its offset): no run of the file repeats another.
    piece.writeBigUInt64LE(BigInt(written), 0);
    fs.writeSync(handle, piece, 0, length);
    hash.update(piece.subarray(0, length));
    written += length;
  }
  fs.closeSync(handle);
  return hash.digest('hex');
}

const SMALL_TYPES = ['stl', 'ply', 'obj', 'pdf', 'dcm'];

function makeWorkload(name) {
  const folder = temp(`${name}-source`);
  cleanup.push(() => fs.rmSync(folder, { recursive: true, force: true }));
  const files = [];
  const add = (relativePath, bytes) => files.push({ relativePath, size: bytes, sha256: randomFile(path.join(folder, relativePath), bytes) });
  if (name.startsWith('mixed')) {
    const { files: count, totalBytes, bigBytes, withBig = true, withRest = true } = WORKLOADS[name];
    if (withBig) add('case-big/full arch.stl', bigBytes);
    const each = Math.floor((totalBytes - bigBytes) / (count - 1));
    for (let index = 0; index < (withRest ? count - 1 : 0); index += 1) add(`case-${String(index % 40).padStart(2, '0')}/scan-${index}.${SMALL_TYPES[index % SMALL_TYPES.length]}`, each);
  } else if (name === 'small') {
    const { files: count, minBytes, maxBytes } = WORKLOADS.small;
    for (let index = 0; index < count; index += 1) {
      const bytes = minBytes + Math.floor(((index * 7919) % 1000) / 1000 * (maxBytes - minBytes));
      add(`case-${String(index % 100).padStart(3, '0')}/image-${index}.${SMALL_TYPES[index % SMALL_TYPES.length]}`, bytes);
    }
  } else {
    add('huge scan.stl', WORKLOADS.big.bytes);
  }
  return { name, folder, files, bytes: files.reduce((sum, file) => sum + file.size, 0) };
}

function sha256OfFile(file) {
  const hash = createHash('sha256');
  const handle = fs.openSync(file, 'r');
  const buffer = Buffer.allocUnsafe(4 * MiB);
  for (let read; (read = fs.readSync(handle, buffer, 0, buffer.length, null)) > 0; ) hash.update(buffer.subarray(0, read));
  fs.closeSync(handle);
  return hash.digest('hex');
}

// ---- processes

/** Runs a command to its end; resolves with its wall time and the CPU-seconds it and its children used (bash `times`). */
function timedCommand(command, commandArgs, env) {
  const started = performance.now();
  const child = spawn('bash', ['-c', '"$@"; status=$?; times >&2; exit $status', 'bench', command, ...commandArgs], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      const seconds = (performance.now() - started) / 1000;
      // `times` prints the shell's own times, then its children's: "0m1.234s 0m0.567s".
      const lines = stderr.trim().split('\n');
      const children = /(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s/.exec(lines.at(-1) ?? '');
      const cpu = children ? Number(children[1]) * 60 + Number(children[2]) + Number(children[3]) * 60 + Number(children[4]) : Number.NaN;
      if (code !== 0) reject(new Error(`${command} ${commandArgs.join(' ')} exited ${code}:\n${stdout}\n${stderr}`));
      else resolve({ seconds, cpu });
    });
  });
}

/** Waits until the process used less than 0.05 CPU-seconds in a second (bounded): its work after the client is done counts too. */
async function cpuWhenIdle(pid, boundMs = 120_000) {
  const deadline = Date.now() + boundMs;
  let last = cpuSeconds(pid);
  for (;;) {
    await delay(1000);
    const now = cpuSeconds(pid);
    if (now - last < 0.05 || Date.now() > deadline) return now;
    last = now;
  }
}

async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
}

// ---- Patient Docs: fresh server, fresh sync home, `patient-docs-sync run --once`

/** The product's command, as an operator runs it (of this build, or of the baseline's). */
const syncCli = (root) => path.join(root, 'bin/patient-docs-sync.js');
const BASELINE = args.baseline ? path.resolve(args.baseline) : null;
if (BASELINE && !fs.existsSync(syncCli(BASELINE))) throw new Error(`--baseline: ${syncCli(BASELINE)} does not exist`);
const serverMain = (root) => path.join(root, 'dist/server/main.js');
const BASELINE_SERVER = args['baseline-server'] ? path.resolve(args['baseline-server']) : null;
if (BASELINE_SERVER && !fs.existsSync(serverMain(BASELINE_SERVER))) throw new Error(`--baseline-server: ${serverMain(BASELINE_SERVER)} does not exist`);
/** Tells the server's threads apart (loaded with --require into the engine's server). */
const THREAD_KINDS = path.join(ROOT, 'bench/lib/thread-kinds.cjs');
/** Counts the client's journal writes in its measured run (loaded with --require). */
const JOURNAL_COUNT = path.join(ROOT, 'bench/lib/journal-count.cjs');
/** Extra node arguments for the measured run only (a profiler), not for the set-up commands. */
const CLIENT_NODE_ARGS = (process.env.BENCH_CLIENT_NODE_ARGS ?? '').split(' ').filter(Boolean);
/** Extra node arguments for the server of the engine's runs (a profiler). */
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);

/** The thread ids thread-kinds.cjs wrote once the server started (it writes them at its first file call). */
async function threadKinds(file) {
  const deadline = Date.now() + 20_000;
  while (!fs.existsSync(file)) {
    if (Date.now() > deadline) throw new Error('the server did not report its threads');
    await delay(50);
  }
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

async function patientDocsRun(workload, root = ROOT, serverRoot = ROOT) {
  const dataDir = temp('server');
  const port = await freePort();
  const kindsFile = path.join(dataDir, 'thread-kinds.json');
  const server = spawn(process.execPath, [...SERVER_NODE_ARGS, '--require', THREAD_KINDS, serverMain(serverRoot)], {
    env: { ...process.env, PORT: String(port), PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: SEED, PATIENT_DOCS_ADMIN_TOKEN: 'bench-admin-token-0123456789', PATIENT_DOCS_LOG_LEVEL: 'warn', BENCH_THREAD_KINDS_FILE: kindsFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const home = temp('sync-home');
  try {
    const url = await listeningUrl(server);
    const kinds = await threadKinds(kindsFile);
    const env = { PATIENT_DOCS_SYNC_HOME: home, PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret };
    for (const setup of [
      ['connect', '--server', url, '--client-id', CLIENT.id, '--organization', ORG],
      ['add-pair', '--folder', workload.folder, '--patient', PATIENT, '--path', '/bench'],
      ['config', '--concurrency', String(TRANSFERS)],
    ]) {
      await timedCommand(process.execPath, [syncCli(root), ...setup], env);
    }
    const countFile = path.join(home, 'journal-count.json');
    const threadsBefore = threadCpuSeconds(server.pid, kinds);
    const client = await timedCommand(process.execPath, [...CLIENT_NODE_ARGS, '--require', JOURNAL_COUNT, syncCli(root), 'run', '--once', '--timeout', '3600'], {
      ...env,
      BENCH_JOURNAL_COUNT_FILE: countFile,
    });
    await cpuWhenIdle(server.pid);
    const threadsAfter = threadCpuSeconds(server.pid, kinds);
    const serverThreads = Object.fromEntries(Object.keys(threadsAfter).map((kind) => [kind, threadsAfter[kind] - threadsBefore[kind]]));
    await stopChild(server);
    await checkPatientDocs(workload, dataDir);
    return { ...client, serverCpu: serverThreads.total, serverThreads, journal: JSON.parse(fs.readFileSync(countFile, 'utf8')) };
  } finally {
    await stopChild(server);
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(home, { recursive: true, force: true });
  }
}

/** Every source file is a document whose stored object (on the server's disk) hashes to the source's sha256. */
async function checkPatientDocs(workload, dataDir) {
  const Database = (await import('better-sqlite3')).default;
  const database = new Database(path.join(dataDir, 'patient-docs.sqlite'), { readonly: true, fileMustExist: true });
  const rows = database.prepare('SELECT path, file_name, file_size, sha256, content_key FROM documents WHERE deleted_at IS NULL AND has_content = 1').all();
  database.close();
  const stored = new Map(rows.map((row) => [`${row.path}/${row.file_name}`, row]));
  for (const file of workload.files) {
    const key = path.posix.join('/bench', file.relativePath);
    const row = stored.get(key);
    if (!row) throw new Error(`patient docs: ${key} is not on the server`);
    if (row.file_size !== file.size || row.sha256 !== file.sha256) throw new Error(`patient docs: ${key} recorded with other content`);
    const object = path.join(dataDir, 'content', 'objects', ...row.content_key.split('/'));
    if (sha256OfFile(object) !== file.sha256) throw new Error(`patient docs: the stored bytes of ${key} differ from the source`);
  }
  if (rows.length !== workload.files.length) throw new Error(`patient docs: ${rows.length} documents for ${workload.files.length} files`);
}

// ---- rclone: `rclone serve webdav` on a fresh folder, `rclone copy` to it

async function rcloneRun(workload) {
  const target = temp('rclone-target');
  const port = await freePort();
  const server = spawn('rclone', ['serve', 'webdav', target, '--addr', `127.0.0.1:${port}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    await waitForPort(port, server);
    const serverCpuBefore = cpuSeconds(server.pid);
    const client = await timedCommand('rclone', ['copy', workload.folder, ':webdav:', '--webdav-url', `http://127.0.0.1:${port}`, '--transfers', String(TRANSFERS), '--checkers', String(TRANSFERS)], {});
    const serverCpu = (await cpuWhenIdle(server.pid)) - serverCpuBefore;
    await stopChild(server);
    for (const file of workload.files) {
      const stored = path.join(target, ...file.relativePath.split('/'));
      if (!fs.existsSync(stored) || sha256OfFile(stored) !== file.sha256) throw new Error(`rclone: the stored bytes of ${file.relativePath} differ from the source`);
    }
    return { ...client, serverCpu };
  } finally {
    await stopChild(server);
    fs.rmSync(target, { recursive: true, force: true });
  }
}

async function waitForPort(port, child) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error('rclone serve webdav exited');
    const ok = await fetch(`http://127.0.0.1:${port}/`, { method: 'PROPFIND', headers: { depth: '0' } }).then(
      () => true,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error('rclone serve webdav did not start');
    await delay(100);
  }
}

// ---- the comparison

/**
 * Writes out every dirty page first (`sync`), so a run does not pay for what came before it: the
 * workload just made (2 GiB for the big one) or the previous run's files, whose pages the kernel
 * would otherwise write while this run waits on its own fsyncs.
 */
function settleDisk() {
  spawnSync('sync');
}

/** Seconds `dd` takes to copy `file` into the temp folder (where the servers keep their data) and fdatasync it. */
async function durableWriteSeconds(file) {
  const folder = temp('disk-floor');
  try {
    const started = performance.now();
    await new Promise((resolve, reject) =>
      execFile('dd', [`if=${file}`, `of=${path.join(folder, 'copy')}`, 'bs=8M', 'conv=fdatasync', 'status=none'], (error) => (error ? reject(error) : resolve())),
    );
    return (performance.now() - started) / 1000;
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
}

/** The machine's load average over the last 1, 5 and 15 minutes (other work on a shared machine moves every figure). */
const loadAverage = () => os.loadavg().map((load) => load.toFixed(1)).join(' / ');

async function compare(name) {
  const made = performance.now();
  const workload = makeWorkload(name);
  console.log(`\n${name}: ${workload.files.length.toLocaleString('en-US')} files, ${(workload.bytes / MiB).toFixed(0)} MiB (made in ${((performance.now() - made) / 1000).toFixed(1)} s)`);
  // The workload's files are older than the engine's settle time when its runs start, as a day's scans are.
  await delay(2500);
  const sides = ['engine', ...(args['skip-rclone'] ? [] : ['rclone']), ...(BASELINE || BASELINE_SERVER ? ['baseline'] : [])];
  const runs = Object.fromEntries(sides.map((side) => [side, []]));
  const perFile = (value) => (value / workload.files.length).toFixed(1);
  const steal = measureSteal();
  for (let round = 0; round < RUNS; round += 1) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      settleDisk();
      const result = side === 'rclone' ? await rcloneRun(workload) : await patientDocsRun(workload, side === 'baseline' ? (BASELINE ?? ROOT) : ROOT, side === 'baseline' ? (BASELINE_SERVER ?? ROOT) : ROOT);
      runs[side].push(result);
      const threads = result.serverThreads;
      const main = threads
        ? ` (main thread ${threads.main.toFixed(2)}, worker threads ${threads.others.toFixed(2)}, V8/Node helpers ${threads.helpers.toFixed(2)}, libuv pool ${threads.pool.toFixed(2)})`
        : '';
      const journal = result.journal ? `   journal per file: ${perFile(result.journal.commits)} commits, ${perFile(result.journal.statements)} statements` : '';
      console.log(
        `  run ${round + 1} ${side.padEnd(8)} ${result.seconds.toFixed(2).padStart(7)} s   client CPU ${result.cpu.toFixed(2).padStart(6)} s (${perFile(result.cpu * 1000)} ms per file)   server CPU ${result.serverCpu.toFixed(2).padStart(6)} s${main}${journal}   (every byte checked)`,
      );
    }
  }
  if (name === 'big') {
    // What the disk takes to make the same bytes durable (a copy of the file, then fdatasync), the
    // least an upload that keeps the durability promise can take here; rclone's server keeps no
    // such promise (it never fsyncs), so on a fast network its floor is the CPUs instead.
    const floors = [];
    for (let round = 0; round < RUNS; round += 1) {
      settleDisk();
      floors.push(await durableWriteSeconds(path.join(workload.folder, workload.files[0].relativePath)));
    }
    console.log(`  the disk's floor: ${floors.map((seconds) => seconds.toFixed(2)).join(', ')} s to copy the file and fdatasync it (dd conv=fdatasync); median ${median(floors).toFixed(2)} s`);
  }
  const ratios = runs.rclone ? runs.engine.map((run, index) => run.seconds / runs.rclone[index].seconds) : [];
  const line = (side) => {
    const list = runs[side];
    const journal = list[0].journal
      ? `, journal ${perFile(median(list.map((run) => run.journal.commits)))} commits and ${perFile(median(list.map((run) => run.journal.statements)))} writing statements per file`
      : '';
    const threads = list[0].serverThreads
      ? ` (medians: main thread ${median(list.map((run) => run.serverThreads.main)).toFixed(2)}, worker threads ${median(list.map((run) => run.serverThreads.others)).toFixed(2)}, V8/Node helpers ${median(list.map((run) => run.serverThreads.helpers)).toFixed(2)}, libuv pool ${median(list.map((run) => run.serverThreads.pool)).toFixed(2)})`
      : '';
    return `median ${median(list.map((run) => run.seconds)).toFixed(2)} s, client CPU ${median(list.map((run) => run.cpu)).toFixed(2)} s (${perFile(median(list.map((run) => run.cpu)) * 1000)} ms per file)${journal}, server CPU ${median(list.map((run) => run.serverCpu)).toFixed(2)} s (${((median(list.map((run) => run.serverCpu)) * 1000) / workload.files.length).toFixed(2)} ms per file)${threads}`;
  };
  console.log(`  Patient Docs: ${line('engine')}`);
  if (BASELINE) console.log(`  baseline:     ${line('baseline')}`);
  if (runs.rclone) console.log(`  rclone:       ${line('rclone')}`);
  const conditions = `(steal ${steal().toFixed(1)}%, load average ${loadAverage()})`;
  if (runs.rclone) console.log(`  ratio Patient Docs / rclone per pair: ${ratios.map((ratio) => ratio.toFixed(2)).join(', ')}; median ${median(ratios).toFixed(2)}×   ${conditions}`);
  else console.log(`  ${conditions}`);
}

try {
  console.log(`peer-rclone: patient-docs-sync run --once vs ${rcloneVersion} (copy → serve webdav), ${TRANSFERS} transfers each, ${RUNS} alternating runs per side${quick ? ', quick workloads' : ''}; ${os.cpus().length} CPUs, load average ${loadAverage()}`);
  for (const name of Object.keys(WORKLOADS)) if (only.includes(name)) await compare(name);
} finally {
  for (const step of cleanup.reverse()) await Promise.resolve().then(step).catch(() => undefined);
}
