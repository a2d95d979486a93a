/**
 * Start-up and shutdown as IT meets them: the built server (test/global-setup.ts builds it) as real processes.
 * A failed first start keeps no admin token hash (the next start prints a token that works); a bad
 * token file, host, port or database file stops the start with one line naming what to fix (exit
 * 2); the first SIGTERM lets an upload in flight finish within the grace period and cuts it off
 * after it, leaving no content and no temp file; a second signal stops at once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLIENT, ORG, PATIENT, SEED_FILE, tempDir } from './helpers/server.js';

import { ROOT, SERVER_MAIN as MAIN } from './helpers/processes.js';
const TOKEN_FILE = 'admin-token.sha256';

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

function dataDir(prefix: string): string {
  const dir = tempDir(prefix);
  dirs.push(dir);
  return dir;
}

interface Server {
  child: ChildProcess;
  url: string;
  output(): string;
  exited: Promise<{ code: number | null; at: number }>;
}

function spawnServer(env: Record<string, string>, options: { uid?: number; gid?: number } = {}): { child: ChildProcess; output(): string; exited: Server['exited'] } {
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: { ...process.env, HOST: '127.0.0.1', PORT: '0', PATIENT_DOCS_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...options });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; at: number }>((resolve) => child.once('exit', (code) => resolve({ code, at: Date.now() })));
  return { child, output: () => output, exited };
}

async function waitFor(predicate: () => boolean, what: () => string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting; ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function start(env: Record<string, string>): Promise<Server> {
  const server = spawnServer(env);
  let gone = false;
  void server.exited.then(() => (gone = true));
  // The bound of a start, as startServerProcess's: the cases above start their servers at once, beside another file's.
  await waitFor(() => /listening on http:\/\/\S+;/.test(server.output()) || gone, () => server.output(), 30_000);
  const match = /listening on (http:\/\/[^\s;]+)/.exec(server.output());
  if (!match?.[1]) throw new Error(`server exited:\n${server.output()}`);
  return { ...server, url: match[1] };
}

/** A start expected to fail: exit code and everything printed. */
async function refused(env: Record<string, string>, options: { uid?: number; gid?: number } = {}): Promise<{ code: number | null; output: string }> {
  const server = spawnServer(env, options);
  const { code } = await server.exited;
  return { code, output: server.output() };
}

async function stop(server: Server, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (server.child.exitCode === null) server.child.kill(signal);
  return (await server.exited).code;
}

async function adminStatus(url: string, token: string): Promise<number> {
  return (await fetch(`${url}/admin/v1/organizations`, { headers: { authorization: `Bearer ${token}` } })).status;
}

function printedToken(output: string): string | undefined {
  return /Admin token \(shown once[^)]*\): (pdadm_\S+)/.exec(output)?.[1];
}

// The start-up cases have no timing to keep: they run side by side.
describe.concurrent('the admin token', () => {
  it('is not kept when the first start cannot listen: the next start prints one, and deleting the file gets a new one', async () => {
    const dir = dataDir('token-first');
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as net.AddressInfo;
    const busy = await refused({ PORT: String(port), PATIENT_DOCS_DATA_DIR: dir });
    await new Promise((resolve) => blocker.close(resolve));
    expect(busy.code).toBe(2);
    expect(busy.output.trim()).toBe(`patient-docs-server: port ${port} on 127.0.0.1 is already in use; stop the other process or set PORT`);
    expect(fs.existsSync(path.join(dir, TOKEN_FILE))).toBe(false);

    const first = await start({ PATIENT_DOCS_DATA_DIR: dir });
    const token = printedToken(first.output());
    expect(token).toBeDefined();
    expect(await adminStatus(first.url, token!)).toBe(200);
    expect(fs.readFileSync(path.join(dir, TOKEN_FILE), 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    expect(await stop(first)).toBe(0);

    const second = await start({ PATIENT_DOCS_DATA_DIR: dir });
    expect(printedToken(second.output())).toBeUndefined();
    expect(await adminStatus(second.url, token!)).toBe(200);
    expect(await stop(second)).toBe(0);

    // The reset of docs/operations.md (lost admin token): stop the server, delete the file, start it again.
    fs.rmSync(path.join(dir, TOKEN_FILE));
    const third = await start({ PATIENT_DOCS_DATA_DIR: dir });
    const fresh = printedToken(third.output());
    expect(fresh).toBeDefined();
    expect(fresh).not.toBe(token);
    expect(await adminStatus(third.url, fresh!)).toBe(200);
    expect(await adminStatus(third.url, token!)).toBe(401);
    expect(await stop(third)).toBe(0);
  });

  it('in a file that is empty, cut short or not hex stops the start with one line naming the file and what to do', async () => {
    const contents = ['', 'a93240199893', `${'z'.repeat(64)}\n`];
    const dirs = contents.map((content) => {
      const dir = dataDir('token-bad');
      fs.writeFileSync(path.join(dir, TOKEN_FILE), content);
      return dir;
    });
    const results = await Promise.all(dirs.map((dir) => refused({ PATIENT_DOCS_DATA_DIR: dir })));
    results.forEach((result, index) => {
      const file = path.join(dirs[index]!, TOKEN_FILE);
      expect({ code: result.code, output: result.output.trim() }).toEqual({
        code: 2,
        output: `patient-docs-server: ${file} does not hold an admin token hash (64 hex digits); delete it and start the server again to have a new admin token printed, or set PATIENT_DOCS_ADMIN_TOKEN`,
      });
    });
  });
});

describe.concurrent('bad start-up settings', () => {
  it('each stop the start with one line naming the variable or the file (exit 2)', async () => {
    const dir = (name: string): string => path.join(dataDir('settings'), name);
    const readOnly = dataDir('read-only-db');
    const database = path.join(readOnly, 'patient-docs.sqlite');
    fs.writeFileSync(database, '');
    // As root every file is writable: the server then runs as nobody, on a database file root owns.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) fs.chownSync(readOnly, 65534, 65534);
    fs.chmodSync(database, 0o444);
    const cases: Array<[Record<string, string>, RegExp | string, { uid?: number; gid?: number }?]> = [
      [{ HOST: '10.255.255.1', PORT: '0', PATIENT_DOCS_DATA_DIR: dir('a') }, 'HOST=10.255.255.1 is not an address of this machine'],
      [{ HOST: '10.255.255.1', PORT: '18080', PATIENT_DOCS_DATA_DIR: dir('b') }, 'HOST=10.255.255.1 is not an address of this machine'],
      [
        { HOST: 'no.such.host.invalid', PORT: '0', PATIENT_DOCS_DATA_DIR: dir('c') },
        /^HOST=no\.such\.host\.invalid cannot be resolved to an address \((ENOTFOUND|EAI_AGAIN|EAI_NONAME)\); use an IP address of this machine or a name that resolves to one$/,
      ],
      [{ PATIENT_DOCS_DATABASE_URL: 'sqlite:', PATIENT_DOCS_DATA_DIR: dir('d') }, 'PATIENT_DOCS_DATABASE_URL="sqlite:" names no file; use sqlite:<file> (relative to PATIENT_DOCS_DATA_DIR) or unset it for patient-docs.sqlite there'],
      [{ PATIENT_DOCS_DATABASE_URL: 'sqlite:.', PATIENT_DOCS_DATA_DIR: dir('e') }, /^PATIENT_DOCS_DATABASE_URL=sqlite:\.: the database file \S+ cannot be opened \(unable to open database file\); /],
      [
        { PATIENT_DOCS_DATA_DIR: readOnly, PATIENT_DOCS_ADMIN_TOKEN: 'read-only-admin-token-0123456789' },
        `PATIENT_DOCS_DATA_DIR=${readOnly}: the database file ${database} cannot be written (attempt to write a readonly database); give the user the server runs as write access to it and its folder`,
        asRoot ? { uid: 65534, gid: 65534 } : {},
      ],
      [{ PORT: ' ', PATIENT_DOCS_DATA_DIR: dir('f') }, 'PORT=" " must be an integer from 0 to 65535'],
      // A file where a folder of the path should be; and a folder that cannot hold folders (Node's
      // own recursive mkdir never returns there: the server used to hang at start).
      [{ PATIENT_DOCS_DATA_DIR: path.join(database, 'data') }, `PATIENT_DOCS_DATA_DIR=${path.join(database, 'data')} cannot be created or is not writable (ENOTDIR: not a directory, mkdir '${path.join(database, 'data')}')`],
      [{ PATIENT_DOCS_DATA_DIR: '/proc/patient-docs/data' }, "PATIENT_DOCS_DATA_DIR=/proc/patient-docs/data cannot be created or is not writable (ENOENT: no such file or directory, mkdir '/proc/patient-docs')"],
      [
        { PATIENT_DOCS_DATABASE_URL: 'sqlite:/proc/patient-docs/db.sqlite', PATIENT_DOCS_DATA_DIR: dir('i') },
        "PATIENT_DOCS_DATABASE_URL=sqlite:/proc/patient-docs/db.sqlite: the database file /proc/patient-docs/db.sqlite cannot be opened (ENOENT: no such file or directory, mkdir '/proc/patient-docs'); it must name a Patient Docs database file, or none yet, in a writable folder",
      ],
      [{ PORT: '0x50', PATIENT_DOCS_DATA_DIR: dir('g') }, 'PORT="0x50" must be an integer from 0 to 65535'],
      [{ PATIENT_DOCS_TOKEN_LIFETIME: '9999999999h', PATIENT_DOCS_DATA_DIR: dir('h') }, 'PATIENT_DOCS_TOKEN_LIFETIME="9999999999h" must be between 1s and 24h'],
    ];
    const results = await Promise.all(cases.map(([env, , options]) => refused(env, options)));
    results.forEach((result, index) => {
      const [env, expected] = cases[index]!;
      const line = result.output.trim();
      expect({ env, code: result.code, lines: line.split('\n').length }).toEqual({ env, code: 2, lines: 1 });
      expect(line.startsWith('patient-docs-server: ')).toBe(true);
      const message = line.slice('patient-docs-server: '.length);
      if (typeof expected === 'string') expect(message).toBe(expected);
      else expect(message).toMatch(expected);
    });
  });
});

// --- shutdown with an upload in flight ---

const MiB = 1024 * 1024;

async function clientToken(url: string): Promise<string> {
  const response = await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) });
  return ((await response.json()) as { access_token: string }).access_token;
}

async function createDocument(url: string, bearer: string): Promise<string> {
  const response = await fetch(`${url}/v1/patients/${PATIENT}/documents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG, 'content-type': 'application/json' },
    body: JSON.stringify({ fileName: `scan-${Date.now()}.stl`, path: '/shutdown' }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

async function hasContent(url: string, bearer: string, documentId: string): Promise<boolean> {
  const response = await fetch(`${url}/v1/patients/${PATIENT}/documents/${documentId}`, { headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { hasContent: boolean }).hasContent;
}

interface SlowUpload {
  /** Sends the rest of the body at once. */
  finish(): void;
  result: Promise<{ status: number; body: string } | { error: string }>;
}

/** A 2 MiB multipart upload of which only the first 256 KiB are sent until finish(). */
function slowUpload(url: string, bearer: string, documentId: string): SlowUpload {
  const boundary = 'lifecycle-boundary';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="Id"\r\n\r\n${documentId}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="scan.stl"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const content = Buffer.alloc(2 * MiB, 7);
  const target = new URL(`${url}/storage/v1/documents/${documentId}/file`);
  const request = http.request({
    host: target.hostname,
    port: target.port,
    path: target.pathname,
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + content.length + tail.length) },
  });
  const result = new Promise<{ status: number; body: string } | { error: string }>((resolve) => {
    request.once('error', (error) => resolve({ error: (error as NodeJS.ErrnoException).code ?? error.message }));
    request.once('response', (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.once('end', () => resolve({ status: response.statusCode ?? 0, body }));
      response.once('error', (error) => resolve({ error: error.message }));
    });
  });
  request.write(head);
  request.write(content.subarray(0, 256 * 1024));
  return {
    finish: () => {
      request.write(content.subarray(256 * 1024));
      request.end(tail);
    },
    result,
  };
}

function tempFiles(dir: string): string[] {
  return fs.existsSync(path.join(dir, 'content/tmp')) ? fs.readdirSync(path.join(dir, 'content/tmp')) : [];
}

describe('shutdown with an upload in flight', () => {
  const serverEnv = (dir: string, grace: string): Record<string, string> => ({
    PATIENT_DOCS_DATA_DIR: dir,
    PATIENT_DOCS_SEED: SEED_FILE,
    PATIENT_DOCS_ADMIN_TOKEN: 'lifecycle-admin-token-0123456789',
    PATIENT_DOCS_SHUTDOWN_GRACE: grace,
  });

  /** A server with the given grace period, and an upload to it that is streaming (its temp file exists). */
  async function uploadInFlight(dir: string, grace: string) {
    const server = await start(serverEnv(dir, grace));
    const bearer = await clientToken(server.url);
    const documentId = await createDocument(server.url, bearer);
    const upload = slowUpload(server.url, bearer, documentId);
    await waitFor(() => tempFiles(dir).length === 1, () => `no temp file in ${dir}`);
    return { server, documentId, upload };
  }

  it('SIGTERM lets an upload that finishes within the grace period complete, refuses new connections, and exits at once after it', async () => {
    const dir = dataDir('grace-finish');
    const { server, documentId, upload } = await uploadInFlight(dir, '8s');
    server.child.kill('SIGTERM');
    await waitFor(() => server.output().includes('stopping'), () => server.output());
    expect(server.output()).toContain('Patient Docs server stopping (SIGTERM): waiting up to 8 s for 1 upload(s) in flight; SIGTERM again stops at once');
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    upload.finish();
    const result = await upload.result;
    const answeredAt = Date.now();
    expect(result).toMatchObject({ status: 201 });
    expect(JSON.parse((result as { body: string }).body)).toMatchObject({ id: documentId, hasContent: true, fileSize: 2 * MiB });
    const { code, at } = await server.exited;
    expect(code).toBe(0);
    // Not held open for the rest of the grace period by the kept-alive connection.
    expect(at - answeredAt).toBeLessThan(2000);
  });

  it('SIGTERM cuts off an upload still running after the grace period: no content, no temp file', async () => {
    const dir = dataDir('grace-cut');
    const { server, documentId, upload } = await uploadInFlight(dir, '1s');
    const signalledAt = Date.now();
    server.child.kill('SIGTERM');
    const { code, at } = await server.exited;
    expect(code).toBe(0);
    expect(at - signalledAt).toBeGreaterThanOrEqual(1000);
    expect(at - signalledAt).toBeLessThan(4000);
    expect(await upload.result).toHaveProperty('error');
    expect(tempFiles(dir)).toEqual([]);
    expect(fs.readdirSync(path.join(dir, 'content/objects'), { recursive: true }).filter((name) => fs.statSync(path.join(dir, 'content/objects', String(name))).isFile())).toEqual([]);

    const again = await start(serverEnv(dir, '1s'));
    expect(await hasContent(again.url, await clientToken(again.url), documentId)).toBe(false);
    expect(await stop(again)).toBe(0);
  });

  it('a second SIGTERM stops at once, keeping the audit entries of what was answered; the next start sweeps what it left and the document has no content', async () => {
    const dir = dataDir('second-signal');
    const { server, documentId, upload } = await uploadInFlight(dir, '60s');
    // Answered a moment before the signals: its audit entry is still in memory (written every 200 ms).
    const bearer = await clientToken(server.url);
    const searched = await fetch(`${server.url}/v1/patients/${PATIENT}/documents/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG, 'content-type': 'application/json' },
      body: JSON.stringify({ path: '/shutdown', limit: 5 }),
    });
    expect(searched.status).toBe(200);
    server.child.kill('SIGTERM');
    await waitFor(() => server.output().includes('stopping'), () => server.output());
    const secondAt = Date.now();
    server.child.kill('SIGTERM');
    const { code, at } = await server.exited;
    expect(code).toBe(1);
    // At once: seconds at most on a loaded machine, where the drain would have waited its 60 s.
    expect(at - secondAt).toBeLessThan(5000);
    expect(server.output()).toContain('Patient Docs server stopping at once (SIGTERM again); uploads and requests in flight are cut off');
    expect(await upload.result).toHaveProperty('error');
    expect(tempFiles(dir)).toHaveLength(1);

    const again = await start(serverEnv(dir, '1s'));
    expect(tempFiles(dir)).toEqual([]);
    expect(await hasContent(again.url, await clientToken(again.url), documentId)).toBe(false);
    const audit = await fetch(`${again.url}/admin/v1/audit?patientId=${PATIENT}&limit=1000`, { headers: { authorization: `Bearer ${serverEnv(dir, '1s').PATIENT_DOCS_ADMIN_TOKEN}` } });
    const entries = ((await audit.json()) as { entries: Array<{ action: string; outcome: string; documentId: string | null }> }).entries;
    expect(entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: 'create', outcome: 'allowed', documentId }),
        expect.objectContaining({ action: 'search', outcome: 'allowed' }),
      ]),
    );
    expect(await stop(again)).toBe(0);
  });
});
