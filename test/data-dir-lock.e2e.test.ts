/**
 * One server per data directory, as IT meets it: the built server as real processes on a real
 * data directory. A second server refuses in one line naming the directory and the first one's pid;
 * kill -9 leaves no lock behind; the admin CLI works beside the running server; and in one process
 * a closed server can be started again (the desktop app and tests restart in-process).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../server/config.js';
import { startServer } from '../server/start.js';
import { ADMIN_TOKEN, tempDir } from './helpers/server.js';
import { ADMIN_CLI, ROOT, SERVER_MAIN as MAIN, stderrBesidesBusyWait } from './helpers/processes.js';

const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0b01';

interface Running {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

const started: ChildProcess[] = [];
let dataDir: string;

function env(): NodeJS.ProcessEnv {
  return { ...process.env, HOST: '127.0.0.1', PORT: '0', PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN, PATIENT_DOCS_LOG_LEVEL: 'warn' };
}

/** The built server; resolves once it listens. */
async function start(): Promise<Running> {
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = /listening on (http:\/\/[^\s;]+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
  return { child, url, exited };
}

/** The built server expected to refuse: its exit code and what it printed. */
async function startRefused(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr };
}

function refusal(pid: number): string {
  return `patient-docs-server: PATIENT_DOCS_DATA_DIR=${dataDir} is in use by another Patient Docs server (pid ${pid}); stop it first, or give this server its own data directory`;
}

async function healthy(url: string): Promise<boolean> {
  const response = await fetch(`${url}/healthz`);
  return response.status === 200;
}

beforeAll(() => {
  if (!fs.existsSync(MAIN) || !fs.existsSync(ADMIN_CLI)) throw new Error(`${MAIN} is missing: run npm run build:node first`);
});

beforeEach(() => {
  dataDir = tempDir('lock');
});

afterEach(async () => {
  for (const child of started.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('one server per data directory', () => {
  it('refuses a second server on the same data directory in one line naming the directory and the running pid (exit 2); the first keeps serving', async () => {
    const first = await start();
    const second = await startRefused();
    expect(second.code).toBe(2);
    expect(second.stderr.trim()).toBe(refusal(first.child.pid!));
    expect(second.stdout).toBe('');
    expect(await healthy(first.url)).toBe(true);
  });

  it('after kill -9 of the server a new one starts on the same data directory at once, with nothing to clean up', async () => {
    const first = await start();
    first.child.kill('SIGKILL');
    await first.exited;
    expect(fs.existsSync(path.join(dataDir, 'server.lock'))).toBe(true);
    expect(fs.existsSync(path.join(dataDir, 'server.lock-journal'))).toBe(false);
    const second = await start();
    expect(await healthy(second.url)).toBe(true);
    expect((await startRefused()).stderr.trim()).toBe(refusal(second.child.pid!));
    // A clean stop exits 0 and leaves no pid behind.
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'server.pid'))).toBe(false);
  });

  it('lets the admin CLI work on the same data directory while the server runs', async () => {
    const server = await start();
    const added = spawnSync(process.execPath, [ADMIN_CLI, 'organization', 'add', '--name', 'Lock Clinic', '--id', ORG], { cwd: ROOT, env: env(), encoding: 'utf8' });
    expect(stderrBesidesBusyWait(added.stderr)).toBe('');
    expect(added.status).toBe(0);
    const listed = await fetch(`${server.url}/admin/v1/organizations`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(((await listed.json()) as { id: string }[]).map((organization) => organization.id)).toContain(ORG);
    expect(await healthy(server.url)).toBe(true);
  });

  it('in one process: a second start on the same data directory is refused, and a start after close works', async () => {
    const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN, PATIENT_DOCS_LOG_LEVEL: 'silent' });
    const first = await startServer(config, { logger: false });
    try {
      const refused = await startServer(config, { logger: false }).then(
        async (server) => {
          await server.close();
          return undefined;
        },
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(ConfigError);
      expect((refused as Error).message).toBe(refusal(process.pid).replace('patient-docs-server: ', ''));
      expect(await healthy(first.url)).toBe(true);
    } finally {
      await first.close();
    }
    const again = await startServer(config, { logger: false });
    expect(await healthy(again.url)).toBe(true);
    await again.close();
  });
});
