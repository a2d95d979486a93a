/**
 * The admin CLI and the sync CLI load what the command asked for, not the whole server or engine:
 * IT's scripts, cron and monitoring (`status --json` every minute) start them often, and each
 * start paid for modules it never used. Checked through a trace of every module the process loads
 * (test/helpers/module-trace.mjs), on the built CLIs as `tsc -b` writes them (one module file per
 * source file), with a real database and a real sync home; and on the bins' bundle
 * (scripts/build-bins.mjs), which keeps the native and optional packages out until used.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openJournal } from '../electron/sync/journal/open-journal.js';
import { openSettings } from '../electron/sync/home/settings.js';
import { ADMIN_CLI, MODULES, ROOT, startServerProcess, SYNC_CLI } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, SEED_FILE, tempDir } from './helpers/server.js';

const TRACE_HOOK = path.join(ROOT, 'test/helpers/module-trace.mjs');
/** TypeBox as the processes load it: one file (scripts/build-typebox.mjs), never the package's 373. */
const TYPEBOX_FILE = 'dist/vendor/typebox.mjs';
const scratch = tempDir('cli-start');
let traces = 0;

/** The modules a traced process loaded, from its trace file: paths under the project, or package names. */
function tracedModules(traceFile: string): string[] {
  const urls = fs.existsSync(traceFile) ? fs.readFileSync(traceFile, 'utf8').split('\n').filter(Boolean) : [];
  const modules = urls
    .filter((url) => url.startsWith('file:'))
    .map((url) => {
      const file = new URL(url).pathname;
      const inPackage = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
      return inPackage ? inPackage[1]! : path.relative(ROOT, file);
    });
  return [...new Set(modules)];
}

/** Runs `node <cli> <args>` with the module trace; what it printed, its exit code and the modules it loaded (paths under the project, or package names). */
async function traced(cli: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string; modules: string[] }> {
  const traceFile = path.join(scratch, `trace-${(traces += 1)}.txt`);
  // No D-Bus session: the sync home keeps its secret in its encrypted file, never in the keyring of whoever runs the tests.
  const { DBUS_SESSION_BUS_ADDRESS: _bus, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--import', TRACE_HOOK, cli, ...args], { cwd: ROOT, env: { ...inherited, ...env, MODULE_TRACE_FILE: traceFile }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr, modules: tracedModules(traceFile) };
}

afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe('the admin CLI', () => {
  const dataDir = path.join(scratch, 'data');
  const env = { PATIENT_DOCS_DATA_DIR: dataDir };

  it('prints its usage without opening the database or loading the schemas', async () => {
    const result = await traced(MODULES.admin, ['--help'], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Usage: patient-docs-admin <command> [options]');
    expect(result.modules).toContain('dist/server/admin/cli.js');
    for (const heavy of ['better-sqlite3', 'typebox', TYPEBOX_FILE, 'ajv', 'jose', 'fastify', 'fastify-plugin', 'dist/server/admin/commands.js', 'dist/server/context.js']) expect(result.modules).not.toContain(heavy);
    expect(fs.existsSync(dataDir)).toBe(false);
  });

  it('answers a command on the database without loading the HTTP side of the server', async () => {
    const seeded = await traced(MODULES.admin, ['seed', '--file', SEED_FILE], env);
    expect(seeded.code, seeded.stderr).toBe(0);
    // The same first start as the server's: a signing key and the content folders.
    for (const folder of ['content/objects', 'content/tmp', 'content/uploads']) expect(fs.statSync(path.join(dataDir, folder)).isDirectory()).toBe(true);
    const listed = await traced(MODULES.admin, ['organization', 'list'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ id: ORG, name: 'Smile Clinic' })]));
    expect(listed.modules).toContain('better-sqlite3');
    const http = listed.modules.filter((module) => /^(fastify|@fastify\/|@tus\/|pino|got|@napi-rs\/canvas)/.test(module) || /^dist\/server\/(routes|plugins|thumbnails|webhooks)\//.test(module) || module === 'dist/server/context.js');
    expect(http).toEqual([]);
    // Nor the schemas and validator (a fifth of a second), nor jose (the signing key exists): a list checks no flag.
    for (const unused of ['typebox', TYPEBOX_FILE, 'ajv', 'jose']) expect(listed.modules).not.toContain(unused);
    // `audit` checks its flags by the admin API's rules, without the schemas' library.
    const audit = await traced(MODULES.admin, ['audit', '--limit', '1'], env);
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.stdout.trim()).toBe('no audit entries match');
    for (const schemas of ['typebox', TYPEBOX_FILE]) expect(audit.modules).not.toContain(schemas);
    const refused = await traced(MODULES.admin, ['audit', '--limit', '1001'], env);
    expect([refused.code, refused.stderr.trim()]).toEqual([2, 'patient-docs-admin: --limit 1001 must be <= 1000']);
    // A command that checks its flags by the schemas loads TypeBox as one file.
    const shown = await traced(MODULES.admin, ['patient', 'show', '--id', PATIENT], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual(expect.objectContaining({ id: PATIENT, name: 'Jane Roe' }));
    expect(shown.modules).toContain(TYPEBOX_FILE);
    expect(shown.modules).not.toContain('typebox');
    const keys = await traced(MODULES.admin, ['keys', 'list'], env);
    expect(keys.code, keys.stderr).toBe(0);
    expect(JSON.parse(keys.stdout)).toHaveLength(1);
  });
});

describe('patient-docs-sync', () => {
  it('prints its usage and the status without loading the engine, the watcher or the HTTP client', async () => {
    const home = path.join(scratch, 'sync-home');
    const scans = path.join(scratch, 'scans');
    fs.mkdirSync(scans, { recursive: true });
    fs.mkdirSync(home, { recursive: true });
    // A connected home with one folder and one file waiting, as `connect`, `add-pair` and a run leave it.
    const settings = openSettings(home);
    settings.set('serverUrl', 'https://docs.example.org');
    settings.set('tokenUrl', 'https://docs.example.org/oauth2/token');
    settings.set('clientId', CLIENT.id);
    settings.set('organizationId', ORG);
    settings.set('pairs', [{ id: 'pair-1', folder: scans, patientId: PATIENT, patientName: 'Jane Roe', remoteBasePath: '/scans', paused: false }]);
    const journal = openJournal(path.join(home, 'journal.db'));
    journal.observe('pair-1', 'crown.stl', { size: 12, mtimeMs: Date.now(), remotePath: '/scans', fileName: 'crown.stl' });
    journal.close();
    const env = { PATIENT_DOCS_SYNC_HOME: home };

    const help = await traced(MODULES.sync, ['--help'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('usage: patient-docs-sync <command> [options]');
    expect(help.stdout).toContain(`now: ${home}`);
    // The usage opens nothing: neither the settings (conf) nor the journal (SQLite).
    for (const unused of ['conf', 'better-sqlite3', 'keytar']) expect(help.modules).not.toContain(unused);

    const status = await traced(MODULES.sync, ['status', '--json'], env);
    expect(status.code, status.stderr).toBe(0);
    const shown = JSON.parse(status.stdout) as { mode: string; server: string; pairs: Array<{ pair: { folder: string }; files: Array<{ relativePath: string; state: string }> }> };
    expect(shown.mode).toBe('remote');
    expect(shown.server).toBe('https://docs.example.org');
    expect(shown.pairs[0]!.pair.folder).toBe(scans);
    expect(shown.pairs[0]!.files.map((file) => [file.relativePath, file.state])).toEqual([['crown.stl', 'queued']]);

    for (const result of [help, status]) {
      const heavy = result.modules.filter((module) => ['chokidar', 'got', 'tus-js-client'].includes(module) || /^dist\/electron\/sync\/(sync-app|engine|watcher|pair-watch|pipeline|api-client|tus-upload|webhook-listener)\.js$/.test(module));
      expect(heavy).toEqual([]);
      // Nor the bridge's schemas (TypeBox).
      for (const schemas of ['typebox', TYPEBOX_FILE]) expect(result.modules).not.toContain(schemas);
    }
  });
});

describe('the server', () => {
  it('on the embedded default (SQLite, a local folder) starts and answers without the S3 client or the PostgreSQL driver', async () => {
    const traceFile = path.join(scratch, 'trace-server.txt');
    const dataDir = path.join(scratch, 'server-data');
    // Traced, every module load goes through the hook thread: the start takes several times its usual time.
    const child = spawn(process.execPath, ['--import', TRACE_HOOK, MODULES.server], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: SEED_FILE, PATIENT_DOCS_ADMIN_TOKEN: 'cli-start-admin-token-0123456789', PATIENT_DOCS_LOG_LEVEL: 'warn', MODULE_TRACE_FILE: traceFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      let output = '';
      const url = await new Promise<string>((resolve, reject) => {
        const onData = (chunk: Buffer): void => {
          output += chunk.toString();
          const match = /listening on (http:\/\/[^\s;]+)/.exec(output);
          if (match) resolve(match[1]!);
        };
        child.stdout.on('data', onData);
        child.stderr.on('data', onData);
        child.once('exit', (code) => reject(new Error(`server exited (${code}):\n${output}`)));
      });
      // The content side (storage, resumable uploads) is built before the server listens.
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    const modules = tracedModules(traceFile);
    expect(modules).toContain('dist/server/storage/index.js');
    expect(modules).toContain('better-sqlite3');
    // The route schemas' TypeBox as one file, not the package's module files.
    expect(modules).toContain(TYPEBOX_FILE);
    expect(modules).not.toContain('typebox');
    // The AWS SDK alone is a quarter of a second of CPU at every start.
    const unused = modules.filter((module) => /^(@aws-sdk\/|@smithy\/|pg$|pg-|hash-wasm$)/.test(module) || /^dist\/server\/(storage\/s3|db\/postgres\/)/.test(module));
    expect(unused).toEqual([]);
  }, 120_000);
});

describe("the bins' bundle", () => {
  it('prints the CLIs\' usage without loading SQLite, and starts the server without the S3 client or the PostgreSQL driver', async () => {
    const dataDir = path.join(scratch, 'bundle-data');
    const admin = await traced(ADMIN_CLI, ['--help'], { PATIENT_DOCS_DATA_DIR: dataDir });
    expect(admin.code).toBe(0);
    expect(admin.stdout).toContain('Usage: patient-docs-admin <command> [options]');
    expect(admin.modules).toContain('dist/bins/node/patient-docs-admin.js');
    for (const heavy of ['better-sqlite3', 'keytar', 'pg', '@aws-sdk/client-s3']) expect(admin.modules).not.toContain(heavy);
    expect(fs.existsSync(dataDir)).toBe(false);
    const sync = await traced(SYNC_CLI, ['--help'], { PATIENT_DOCS_SYNC_HOME: path.join(scratch, 'bundle-home') });
    expect(sync.code).toBe(0);
    expect(sync.stdout).toContain('usage: patient-docs-sync <command> [options]');
    for (const heavy of ['better-sqlite3', 'keytar']) expect(sync.modules).not.toContain(heavy);
    const server = await startServerProcess({ NODE_OPTIONS: `--import ${TRACE_HOOK}`, MODULE_TRACE_FILE: path.join(scratch, 'trace-bundle-server.txt'), PATIENT_DOCS_DATA_DIR: path.join(scratch, 'bundle-server') });
    try {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await server.stop();
    }
    const modules = tracedModules(path.join(scratch, 'trace-bundle-server.txt'));
    expect(modules).toContain('dist/bins/node/patient-docs-server.js');
    expect(modules).toContain('better-sqlite3');
    expect(modules.filter((module) => /^(@aws-sdk\/|@smithy\/|pg$|pg-|pdfjs-dist$)/.test(module))).toEqual([]);
  }, 120_000);
});
