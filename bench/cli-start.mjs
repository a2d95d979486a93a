// How long IT waits for the admin CLI and the sync CLI (and how long cron, monitoring and the
// test suite spend starting them): wall time of whole runs, start to exit, beside `node -e 0`
// (the floor any Node command pays) in the same run. The commands run round-robin, so load from
// other processes falls on all of them alike.
//   node bench/cli-start.mjs [--runs N]       (after npm run build; N defaults to 15)
// Prepared first, as a clinic's would be: a server's data folder with the test seed and the audit
// entries of a real sync, and a sync home connected to that server with one synced folder.
// The sync home keeps its secret in the encrypted file (no D-Bus session is passed on), so no
// keyring of whoever runs the bench is touched.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, listeningUrl } from './lib/server.mjs';

const ROOT = path.resolve(import.meta.dirname, '..');
const ADMIN = path.join(ROOT, 'dist/server/admin/cli.js');
const SYNC = path.join(ROOT, 'dist/electron/sync/cli/cli.js');
const SEED = path.join(ROOT, 'test/fixtures/seed.json');
const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const CLIENT = { id: 'scanner-pc-1', secret: 'scanner-pc-1-secret-0123456789' };
const runsFlag = process.argv.indexOf('--runs');
const RUNS = runsFlag === -1 ? 15 : Number(process.argv[runsFlag + 1]);

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bench-cli-'));
const dataDir = path.join(scratch, 'data');
const home = path.join(scratch, 'sync-home');
const scans = path.join(scratch, 'scans');
const { DBUS_SESSION_BUS_ADDRESS: _bus, ...baseEnv } = process.env;
const env = { ...baseEnv, PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SYNC_HOME: home, PATIENT_DOCS_LOG_LEVEL: 'warn' };

function must(command, args, extraEnv = {}) {
  const result = spawnSync(process.execPath, [command, ...args], { env: { ...env, ...extraEnv }, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${path.basename(command)} ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return result.stdout;
}

async function prepare() {
  const port = await freePort();
  const server = spawn(process.execPath, [path.join(ROOT, 'dist/server/main.js')], {
    env: { ...env, PORT: String(port), PATIENT_DOCS_SEED: SEED, PATIENT_DOCS_ADMIN_TOKEN: 'bench-admin-token-0123456789' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const url = await listeningUrl(server);
    fs.mkdirSync(scans, { recursive: true });
    for (let index = 0; index < 10; index += 1) fs.writeFileSync(path.join(scans, `scan-${index}.stl`), `solid scan${index}\nendsolid scan${index}\n`);
    must(SYNC, ['connect', '--server', url, '--client-id', CLIENT.id, '--organization', ORG], { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret });
    must(SYNC, ['config', '--settle-ms', '200']);
    must(SYNC, ['add-pair', '--folder', scans, '--patient', PATIENT, '--path', '/bench']);
    must(SYNC, ['run', '--once', '--timeout', '120']);
  } finally {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
}

const COMMANDS = [
  { label: 'node -e 0 (baseline)', args: ['-e', '0'] },
  { label: 'admin --help', args: [ADMIN, '--help'] },
  { label: 'admin organization list', args: [ADMIN, 'organization', 'list'] },
  { label: 'admin audit --limit 1', args: [ADMIN, 'audit', '--limit', '1'] },
  { label: 'sync --help', args: [SYNC, '--help'] },
  { label: 'sync status --json', args: [SYNC, 'status', '--json'] },
];

function timeOnce(args) {
  const start = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { env, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.status !== 0) throw new Error(`node ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return ms;
}

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
};

try {
  await prepare();
  // What each command prints is checked once, so a broken build is not timed as a fast one.
  if (!/Smile Clinic/.test(must(ADMIN, ['organization', 'list']))) throw new Error('organization list did not list the seeded organization');
  if (!/1 of \d+ audit entries/.test(must(ADMIN, ['audit', '--limit', '1']))) throw new Error('audit --limit 1 did not show one entry');
  if (JSON.parse(must(SYNC, ['status', '--json'])).pairs[0]?.files.length !== 10) throw new Error('status --json did not list the 10 synced files');
  for (const command of COMMANDS) timeOnce(command.args); // warm the file cache
  const times = COMMANDS.map(() => []);
  for (let run = 0; run < RUNS; run += 1) COMMANDS.forEach((command, index) => times[index].push(timeOnce(command.args)));
  const baseline = quantile(times[0], 0.5);
  console.log(`CLI start, ${RUNS} runs each, round-robin (wall time, start to exit; ${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)}):`);
  console.log(`${'command'.padEnd(26)} ${'median'.padStart(8)} ${'p90'.padStart(8)} ${'median − baseline'.padStart(18)}`);
  COMMANDS.forEach((command, index) => {
    const median = quantile(times[index], 0.5);
    const p90 = quantile(times[index], 0.9);
    const over = index === 0 ? '' : `${(median - baseline).toFixed(0)} ms`;
    console.log(`${command.label.padEnd(26)} ${`${median.toFixed(0)} ms`.padStart(8)} ${`${p90.toFixed(0)} ms`.padStart(8)} ${over.padStart(18)}`);
  });
} finally {
  fs.rmSync(scratch, { recursive: true, force: true });
}
