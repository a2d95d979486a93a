/**
 * Document content against the server as a separate process: its memory while a 200 MB upload
 * streams through, and `kill -9` with 20 uploads in flight (issue 3, "What it must show").
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { clientToken, freePort, ROOT, SERVER_MAIN } from './helpers/processes.js';
import { ORG, PATIENT, SEED_FILE, tempDir } from './helpers/server.js';

const MiB = 1024 * 1024;

interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const cleanup: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

/** The built server, as `npm run server` runs it. */
async function startProcess(dataDir: string, port: number, env: Record<string, string> = {}): Promise<ServerProcess> {
  let output = '';
  const child = spawn(process.execPath, [SERVER_MAIN], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: SEED_FILE, PATIENT_DOCS_ADMIN_TOKEN: 'process-admin-token-0123456789', PATIENT_DOCS_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let exited = false;
  child.once('exit', () => (exited = true));
  const deadline = Date.now() + 60_000;
  while (!output.includes('listening on')) {
    if (exited || Date.now() > deadline) throw new Error(`server did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const stop = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    if (exited) return;
    const done = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await done;
  };
  cleanup.push(() => stop('SIGKILL'));
  return { child, url: `http://127.0.0.1:${port}`, output: () => output, stop };
}

async function createDocument(url: string, bearer: string, fileName: string): Promise<{ id: string; storageUrl: string }> {
  const response = await fetch(`${url}/v1/patients/${PATIENT}/documents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG, 'content-type': 'application/json' },
    body: JSON.stringify({ fileName, path: '/process' }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { id: string; storageUrl: string };
}

function rssBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

async function sha256OfResponse(response: Response): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(Readable.fromWeb(response.body as never), hash);
  return hash.digest('hex');
}

/**
 * A multipart upload over a raw socket: the body is written in `chunkBytes` pieces with a pause
 * between them, so that uploads are truly in flight when the server dies.
 */
function slowUpload(document: { id: string; storageUrl: string }, bearer: string, size: number, chunkBytes: number, pauseMs: number): Promise<number> {
  const boundary = `----patient-docs-${document.id}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="Id"\r\n\r\n${document.id}\r\n--${boundary}\r\nContent-Disposition: form-data; name="Type"\r\n\r\nBIN\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const piece = randomBytes(chunkBytes);
  return new Promise((resolve) => {
    const request = http.request(`${document.storageUrl}/file`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + size + tail.length) },
    });
    request.on('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', () => resolve(0));
    request.write(head);
    let sent = 0;
    const next = (): void => {
      if (request.destroyed) return;
      if (sent >= size) {
        request.end(tail);
        return;
      }
      const length = Math.min(chunkBytes, size - sent);
      sent += length;
      request.write(piece.subarray(0, length));
      setTimeout(next, pauseMs);
    };
    next();
  });
}

describe('the server process', () => {
  it('streams a 200 MB upload without holding it: RSS grows far less than the file', async () => {
    const dataDir = tempDir('memory');
    cleanup.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const server = await startProcess(dataDir, await freePort());
    const bearer = await clientToken(server.url);
    const document = await createDocument(server.url, bearer, 'large-scan.stl');
    const file = path.join(dataDir, 'source.bin');
    const hash = createHash('sha256');
    const writer = fs.createWriteStream(file);
    for (let index = 0; index < 200; index += 1) {
      const chunk = randomBytes(MiB);
      hash.update(chunk);
      if (!writer.write(chunk)) await new Promise<void>((resolve) => writer.once('drain', () => resolve()));
    }
    await new Promise<void>((resolve) => writer.end(() => resolve()));
    const expected = hash.digest('hex');

    const baseline = rssBytes(server.child.pid!);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(server.child.pid!))), 20);
    const form = new FormData();
    form.append('Id', document.id);
    form.append('FileName', 'large-scan.stl');
    form.append('Type', 'STL');
    form.append('file', await fs.openAsBlob(file), 'large-scan.stl');
    const started = performance.now();
    const response = await fetch(`${document.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` }, body: form });
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    expect(response.status).toBe(201);
    const body = (await response.json()) as { sha256: string; fileSize: number; storageDownloadUri: string };
    expect(body).toMatchObject({ sha256: expected, fileSize: 200 * MiB });
    const growth = peak - baseline;
    console.log(`200 MiB upload: ${(200 / seconds).toFixed(0)} MiB/s, server RSS ${(baseline / MiB).toFixed(0)} → peak ${(peak / MiB).toFixed(0)} MiB (growth ${(growth / MiB).toFixed(1)} MiB)`);
    expect(growth).toBeLessThan(64 * MiB);
    const download = await fetch(body.storageDownloadUri);
    expect(await sha256OfResponse(download)).toBe(expected);
    await server.stop();
  }, 180_000);

  it('a server that has run a full garbage collection receives 128 MiB with at most 2 more (server/heap-headroom.ts)', async () => {
    // Its data in memory where there is room: the collections are what is counted here, and the
    // disk is shared with other tests.
    const shmFree = fs.existsSync('/dev/shm') ? fs.statfsSync('/dev/shm') : undefined;
    const shm = shmFree !== undefined && shmFree.bavail * shmFree.bsize > 512 * MiB;
    const dataDir = fs.mkdtempSync(path.join(shm ? '/dev/shm' : os.tmpdir(), 'patient-docs-gc-headroom-'));
    cleanup.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const countFile = path.join(dataDir, 'gc-count');
    const server = await startProcess(dataDir, await freePort(), { NODE_OPTIONS: `--require ${JSON.stringify(path.join(ROOT, 'test/fixtures/gc-count.cjs'))}`, GC_COUNT_FILE: countFile });
    /** Runs a full collection in the server and answers how many it has run, that one included. */
    const collectAndCount = async (): Promise<number> => {
      fs.rmSync(countFile, { force: true });
      server.child.kill('SIGUSR2');
      while (!fs.existsSync(countFile)) {
        if (server.child.exitCode !== null) throw new Error(`the server ended before counting:\n${server.output()}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return Number(fs.readFileSync(countFile, 'utf8'));
    };
    const bearer = await clientToken(server.url);
    const document = await createDocument(server.url, bearer, 'cbct.dcm');
    const before = await collectAndCount();
    const form = new FormData();
    form.append('file', new Blob(Array.from({ length: 128 }, (_, index) => new Uint8Array(MiB).fill(index))), 'cbct.dcm');
    const response = await fetch(`${document.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` }, body: form });
    expect(response.status).toBe(201);
    const during = (await collectAndCount()) - before - 1;
    console.log(`128 MiB received after a full garbage collection: ${during} more`);
    // Without the headroom V8 may fall into running one after every young collection the upload's
    // buffers cause (5–10 for 128–256 MiB here, in about a third of the runs); with it none was seen.
    expect(during).toBeLessThanOrEqual(2);
    await server.stop();
  }, 120_000);

  it('after kill -9 with 20 uploads in flight, no document claims content it lacks and temp files are gone', async () => {
    const dataDir = tempDir('crash');
    cleanup.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    const first = await startProcess(dataDir, port);
    const bearer = await clientToken(first.url);
    const documents = await Promise.all(Array.from({ length: 20 }, (_, index) => createDocument(first.url, bearer, `crash-${index}.bin`)));
    // Five small uploads finish before the kill; fifteen large ones are cut mid-stream.
    const uploads = documents.map((document, index) => (index < 5 ? slowUpload(document, bearer, 64 * 1024, 64 * 1024, 0) : slowUpload(document, bearer, 64 * MiB, 256 * 1024, 20)));
    const finished = await Promise.all(uploads.slice(0, 5));
    expect(finished).toEqual([201, 201, 201, 201, 201]);
    await new Promise((resolve) => setTimeout(resolve, 800));
    const tmpDir = path.join(dataDir, 'content', 'tmp');
    expect(fs.readdirSync(tmpDir).length).toBeGreaterThan(0);
    await first.stop('SIGKILL');
    const cut = await Promise.all(uploads.slice(5));
    expect(cut.every((status) => status === 0)).toBe(true);

    const second = await startProcess(dataDir, port);
    const fresh = await clientToken(second.url);
    expect(fs.readdirSync(tmpDir)).toEqual([]);
    const search = await fetch(`${second.url}/v1/patients/${PATIENT}/documents/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fresh}`, 'organization-id': ORG, 'content-type': 'application/json' },
      body: JSON.stringify({ path: '/process', hasContent: true, offset: 0, limit: 100 }),
    });
    const found = (await search.json()) as { total: number; documents: Array<{ id: string; sha256: string; fileSize: number; storageDownloadUri: string }> };
    expect(found.total).toBeGreaterThanOrEqual(5);
    for (const document of found.documents) {
      const download = await fetch(document.storageDownloadUri);
      expect(download.status).toBe(200);
      expect(Number(download.headers.get('content-length'))).toBe(document.fileSize);
      expect(await sha256OfResponse(download)).toBe(document.sha256);
    }
    await second.stop();
  }, 180_000);
});
