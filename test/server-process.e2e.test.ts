/** Issue 2: `npm run server` as a real process with a seed file; token → create → search over real HTTP. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { ADMIN_CLI, freePort, SERVER_MAIN } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, SEED_FILE, tempDir } from './helpers/server.js';

const ROOT = path.resolve(import.meta.dirname, '..');
let child: ChildProcess;
let output = '';
let baseUrl = '';
let dataDir = '';

async function waitFor(predicate: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out; output so far:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function runServer(env: Record<string, string>): ChildProcess {
  // Its own process group: npm runs the server through a shell, and a signal to npm alone would leave the server running.
  const process_ = spawn('npm', ['run', '--silent', 'server'], { cwd: ROOT, env: { ...process.env, PATIENT_DOCS_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  process_.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  process_.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return process_;
}

beforeAll(async () => {
  dataDir = tempDir('process');
  const port = String(await freePort());
  child = runServer({ PORT: port, PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: SEED_FILE });
  let exited = false;
  child.once('exit', () => (exited = true));
  await waitFor(() => output.includes('listening on') || exited, 240_000);
  if (exited) throw new Error(`npm run server exited:\n${output}`);
  baseUrl = /listening on (http:\/\/\S+?);?\s/.exec(output)![1]!.replace(/;$/, '');
}, 250_000);

afterAll(async () => {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  process.kill(-child.pid!, 'SIGTERM');
  await exited;
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('npm run server', () => {
  it('prints where it listens and the generated admin token once', () => {
    expect(output).toMatch(/Patient Docs server listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(output).toMatch(/Admin token \(shown once.*\): pdadm_\S+/);
  });

  it('walks token → create → search over real HTTP', async () => {
    const tokenResponse = await fetch(`${baseUrl}/oauth2/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }),
    });
    expect(tokenResponse.status).toBe(200);
    const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
    const headers = { authorization: `Bearer ${token}`, 'organization-id': ORG, 'content-type': 'application/json' };
    const created = await fetch(`${baseUrl}/v1/patients/${PATIENT}/documents`, { method: 'POST', headers, body: JSON.stringify({ fileName: 'upper-jaw.stl', path: '/Scans/2026-11-21' }) });
    expect(created.status).toBe(201);
    const document = (await created.json()) as { id: string; storageUrl: string; path: string };
    expect(document.path).toBe('/Scans/2026-11-21');
    expect(document.storageUrl.startsWith(baseUrl)).toBe(true);
    const search = await fetch(`${baseUrl}/v1/patients/${PATIENT}/documents/search`, { method: 'POST', headers, body: JSON.stringify({ offset: 0, limit: 10, path: '/scans' }) });
    expect(search.status).toBe(200);
    const result = (await search.json()) as { documents: Array<{ id: string }>; total: number };
    expect(result.total).toBe(1);
    expect(result.documents[0]!.id).toBe(document.id);
  });

  it('refuses bad configuration with one clear line', async () => {
    let failedOutput = '';
    const failing = spawn('node', [SERVER_MAIN], { cwd: ROOT, env: { ...process.env, PORT: 'eighty' }, stdio: ['ignore', 'pipe', 'pipe'] });
    failing.stderr!.on('data', (chunk: Buffer) => (failedOutput += chunk.toString()));
    const code = await new Promise((resolve) => failing.once('exit', resolve));
    expect(code).toBe(2);
    expect(failedOutput.trim()).toBe('patient-docs-server: PORT="eighty" must be an integer from 0 to 65535');
  });

  it('says so when the port is in use', async () => {
    const port = /:(\d+)/.exec(baseUrl.replace('http://', ''))![1]!;
    let failedOutput = '';
    const busyDir = tempDir('busy');
    onTestFinished(() => fs.rmSync(busyDir, { recursive: true, force: true }));
    const failing = spawn('node', [SERVER_MAIN], { cwd: ROOT, env: { ...process.env, PORT: port, PATIENT_DOCS_DATA_DIR: busyDir }, stdio: ['ignore', 'pipe', 'pipe'] });
    failing.stderr!.on('data', (chunk: Buffer) => (failedOutput += chunk.toString()));
    const code = await new Promise((resolve) => failing.once('exit', resolve));
    expect(code).toBe(2);
    expect(failedOutput).toContain(`port ${port} on 127.0.0.1 is already in use`);
  });

  it('re-applies the seed file without changing anything', async () => {
    const { stdout } = await import('node:child_process').then(({ execFileSync }) => ({
      stdout: execFileSync('node', [ADMIN_CLI, 'seed', '--file', SEED_FILE], { cwd: ROOT, env: { ...process.env, PATIENT_DOCS_DATA_DIR: dataDir } }).toString(),
    }));
    expect(JSON.parse(stdout)).toEqual({ created: 0, updated: 0 });
  });
});
