/**
 * Another process (the admin CLI, a backup script, a DB browser IT left open) holds the database's
 * write lock while the server is under load: writes answer 503 with Retry-After at once, reads keep
 * flowing, nothing waits for seconds, and the admin CLI says that it waits and when it gives up.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_CLI, ROOT, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT } from './helpers/server.js';

let server: ServerProcess;
let bearer: string;
const holders: ChildProcess[] = [];

beforeAll(async () => {
  server = await startServerProcess();
  const response = await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) });
  bearer = ((await response.json()) as { access_token: string }).access_token;
}, 60_000);

afterAll(async () => {
  for (const holder of holders) holder.kill('SIGKILL');
  await server?.stop();
});

/** A separate process that holds a write transaction on the server's database until released. */
async function holdWriteLock(): Promise<{ release(): Promise<void> }> {
  const file = path.join(server.dataDir, 'patient-docs.sqlite');
  const holder = spawn(
    process.execPath,
    ['-e', `const db = new (require('better-sqlite3'))(${JSON.stringify(file)}); db.exec('BEGIN IMMEDIATE'); console.log('held'); process.stdin.on('end', () => { db.exec('COMMIT'); db.close(); }); process.stdin.resume();`],
    { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] },
  );
  holders.push(holder);
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.once('data', () => resolve());
    holder.once('exit', (code) => reject(new Error(`the lock holder exited with ${code}`)));
  });
  return {
    release: async () => {
      const exited = new Promise((resolve) => holder.once('exit', resolve));
      holder.stdin!.end();
      await exited;
    },
  };
}

function createDocument(fileName: string): Promise<Response> {
  return fetch(`${server.url}/v1/patients/${PATIENT}/documents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG, 'content-type': 'application/json' },
    body: JSON.stringify({ fileName, path: '/busy' }),
  });
}

interface AdminResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The admin CLI as IT runs it; `waiting` resolves when it says that it waits. */
function admin(args: string[]): { waiting: Promise<void>; done: Promise<AdminResult> } {
  const child = spawn(process.execPath, [ADMIN_CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, PATIENT_DOCS_DATA_DIR: server.dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let onWaiting: () => void = () => undefined;
  const waiting = new Promise<void>((resolve) => (onWaiting = resolve));
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.includes('waiting')) onWaiting();
  });
  const done = new Promise<AdminResult>((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
  return { waiting, done };
}

describe('the database is held by another process', () => {
  it('writes answer 503 with Retry-After at once, reads go on, and writes succeed once it lets go', async () => {
    const lock = await holdWriteLock();
    try {
      const started = Date.now();
      const creates = await Promise.all(Array.from({ length: 8 }, (_, index) => createDocument(`busy-${index}.pdf`)));
      const search = await fetch(`${server.url}/v1/patients/${PATIENT}/documents/search`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG, 'content-type': 'application/json' },
        body: JSON.stringify({ path: '/', offset: 0, limit: 5 }),
      });
      // Before: each write froze the whole server for the 5 s busy timeout, one after the other (40 s here).
      expect(Date.now() - started).toBeLessThan(12_000);
      expect(search.status).toBe(200);
      for (const response of creates) {
        expect(response.status).toBe(503);
        expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(((await response.json()) as { detail: string }).detail).toMatch(/database is busy/);
      }
    } finally {
      await lock.release();
    }
    expect((await createDocument('after-busy.pdf')).status).toBe(201);
  }, 30_000);

  it('an upload whose bytes have all arrived waits out a short lock instead of throwing them away', async () => {
    const created = await createDocument('busy-upload.stl');
    expect(created.status).toBe(201);
    const document = (await created.json()) as { id: string; storageUrl: string };
    const lock = await holdWriteLock();
    const form = new FormData();
    form.append('Id', document.id);
    form.append('Type', 'STL');
    form.append('file', new Blob([new Uint8Array(Buffer.alloc(256 * 1024, 5))]), 'scan.stl');
    const upload = fetch(`${document.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` }, body: form });
    // The bytes are received and the commit is waiting for the database.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await lock.release();
    const response = await upload;
    expect(response.status).toBe(201);
    expect(((await response.json()) as { fileSize: number }).fileSize).toBe(256 * 1024);
  }, 30_000);

  it('the admin CLI says it waits, and goes on once the lock is released', async () => {
    const lock = await holdWriteLock();
    const run = admin(['organization', 'add', '--name', 'Waited Clinic']);
    const first = await Promise.race([run.waiting.then(() => 'waiting' as const), run.done]);
    await lock.release();
    expect(first).toBe('waiting');
    const done = await run.done;
    expect(done.stderr).toMatch(/the database is busy \(another process is writing to it\); waiting up to 30 s/);
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ name: 'Waited Clinic' });
  }, 30_000);

  it('the admin CLI gives up after --wait with a plain message and changes nothing', async () => {
    const lock = await holdWriteLock();
    try {
      const result = await admin(['organization', 'add', '--name', 'Never Clinic', '--wait', '1']).done;
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/stayed busy for 1 s .*nothing was changed/);
      expect(result.stderr).not.toMatch(/SqliteError|at Database/);
    } finally {
      await lock.release();
    }
    const list = await admin(['organization', 'list']).done;
    expect(list.stdout).not.toMatch(/Never Clinic/);
  }, 30_000);
});
