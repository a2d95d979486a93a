/**
 * The data disk fills up under a running server (a real tmpfs of 16 MiB as the data directory):
 * every answer is a 503 problem with Retry-After, no document claims content it does not have,
 * nothing half-written stays behind eating the space, and freeing space is all it takes to go on.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../server/config.js';
import { ThumbnailJobs } from '../server/domain/thumbnail-jobs.js';
import { startServer } from '../server/start.js';
import { hasThumbnail, renderThumbnail } from '../server/thumbnails/index.js';
import { makeArchStl } from './fixtures/scans.js';
import { fillDisk } from './helpers/disk.js';
import { ADMIN_TOKEN, expectProblem, PATIENT, SEED_FILE, startTestServer, type TestServer } from './helpers/server.js';

const MiB = 1024 * 1024;
const mountPoint = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-srv-full-'));
const filler = path.join(mountPoint, 'filler');
let mounted = false;
let contentBound = false;
let server: TestServer;

beforeAll(async () => {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mountPoint]);
  mounted = true;
  server = await startTestServer({ PATIENT_DOCS_DATA_DIR: path.join(mountPoint, 'data') });
});

afterAll(async () => {
  try {
    await server?.close();
  } finally {
    if (contentBound) execFileSync('umount', ['-l', path.join(mountPoint, 'data', 'content')]);
    if (mounted) execFileSync('umount', ['-l', mountPoint]);
    fs.rmSync(mountPoint, { recursive: true, force: true });
  }
});


function freeDisk(): void {
  fs.rmSync(filler, { force: true });
}

function expectStorageFull(response: { status: number; body: any; headers: Headers }): void {
  const problem = expectProblem(response, 503);
  expect(problem.messageKey).toBe('SERVICE_UNAVAILABLE');
  expect(problem.detail).toMatch(/no free disk space/);
  expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
}

function leftovers(): string[] {
  const content = path.join(mountPoint, 'data', 'content');
  return [...fs.readdirSync(path.join(content, 'tmp')), ...fs.readdirSync(path.join(content, 'uploads'))];
}

async function createDocument(fileName: string): Promise<{ id: string; storageUrl: string }> {
  const created = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName, path: '/disk-full' } });
  expect(created.status).toBe(201);
  return created.body;
}

async function upload(document: { id: string; storageUrl: string }, bytes: Buffer, type = 'STL'): Promise<{ status: number; body: any; headers: Headers }> {
  const form = new FormData();
  form.append('Id', document.id);
  form.append('Type', type);
  form.append('file', new Blob([new Uint8Array(bytes)]), `scan.${type.toLowerCase()}`);
  const response = await fetch(`${document.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${await server.token()}` }, body: form });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

/** The document's first version once its thumbnail is no longer pending (or after 15 s). */
async function thumbnailOnceSettled(documentId: string): Promise<Awaited<ReturnType<typeof server.server.context.store.content.version>>> {
  const versions = server.server.context.store.content;
  const deadline = Date.now() + 15_000;
  while ((await versions.version(documentId, 1))?.thumbnailStatus === 'pending' && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return versions.version(documentId, 1);
}

async function documentOf(id: string): Promise<any> {
  const response = await server.api('GET', `/v1/patients/${PATIENT}/documents/${id}`);
  expect(response.status).toBe(200);
  return response.body;
}

async function tus(method: string, url: string, headers: Record<string, string> = {}, body?: Buffer): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${await server.token()}`, 'tus-resumable': '1.0.0', ...headers },
    body: body ? new Uint8Array(body) : undefined,
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

describe('the data disk is full', () => {
  it('a one-shot upload answers 503 with Retry-After, stores nothing, and succeeds once space is freed', async () => {
    const document = await createDocument('full-oneshot.stl');
    fillDisk(filler, MiB);
    try {
      const refused = await upload(document, Buffer.alloc(3 * MiB, 7));
      expectStorageFull(refused);
      expect((await documentOf(document.id)).hasContent).toBe(false);
      expect(leftovers()).toEqual([]);
    } finally {
      freeDisk();
    }
    const stored = await upload(document, Buffer.alloc(3 * MiB, 7));
    expect(stored.status).toBe(201);
    expect(await documentOf(document.id)).toMatchObject({ hasContent: true, fileSize: 3 * MiB });
  });

  it('a placeholder create answers 503 with Retry-After while the database cannot grow, 201 after', async () => {
    fillDisk(filler);
    let refused: { status: number; body: any; headers: Headers } | undefined;
    try {
      // The database has some free pages of its own: keep creating until it must grow.
      for (let index = 0; index < 500 && !refused; index += 1) {
        const created = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: `full-${index}-${'x'.repeat(200)}.pdf`, path: '/disk-full/many' } });
        if (created.status !== 201) refused = created;
      }
      expect(refused).toBeDefined();
      expectStorageFull(refused!);
    } finally {
      freeDisk();
    }
    await createDocument('after-full.pdf');
  });

  it('tus: creation refused without leaving files, a chunk keeps what reached the disk and the upload resumes once space is freed', async () => {
    const document = await createDocument('full-tus.stl');
    const length = 3 * MiB;
    fillDisk(filler);
    try {
      expectStorageFull(await tus('POST', `${document.storageUrl}/uploads`, { 'upload-length': String(length) }));
      expect(leftovers()).toEqual([]);
    } finally {
      freeDisk();
    }
    const created = await tus('POST', `${document.storageUrl}/uploads`, { 'upload-length': String(length) });
    expect(created.status).toBe(201);
    const location = created.headers.get('location')!;
    const bytes = Buffer.alloc(length, 9);
    fillDisk(filler, MiB);
    let offset: number;
    try {
      expectStorageFull(await tus('PATCH', location, { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, bytes));
      const head = await tus('HEAD', location);
      expect(head.status).toBe(200);
      offset = Number(head.headers.get('upload-offset'));
      expect(offset).toBeLessThan(length);
      // Only the upload's own two files: no half-written description beside them.
      expect(leftovers().sort()).toEqual([`${location.split('/').pop()}.bin`, `${location.split('/').pop()}.json`].sort());
      expect((await documentOf(document.id)).hasContent).toBe(false);
    } finally {
      freeDisk();
    }
    const rest = await tus('PATCH', location, { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, bytes.subarray(offset));
    expect(rest.status).toBe(204);
    expect(await documentOf(document.id)).toMatchObject({ hasContent: true, fileSize: length });
    expect(leftovers()).toEqual([]);
  });

  it('a thumbnail that cannot be stored stays pending and is rendered once space is freed', async () => {
    const { context } = server.server;
    const document = await createDocument('full-thumbnail.stl');
    expect((await upload(document, makeArchStl({ triangles: 2_000 }))).status).toBe(201);
    await context.content.thumbnails.idle();
    let version = await context.store.content.version(document.id, 1);
    expect(version?.thumbnailStatus).toBe('ready');
    // As a full disk at render time would find it: pending, no thumbnail stored yet.
    await context.content.storage.remove(version!.thumbnailKey!);
    await context.store.content.setThumbnail(document.id, 1, { status: 'pending', key: null, error: null });
    const jobs = new ThumbnailJobs(context.store, context.content.storage, { hasThumbnail, renderThumbnail }, { size: 64, timeoutMs: 20_000, concurrency: 1, retryDelayMs: 100 });
    try {
      fillDisk(filler);
      try {
        expect(await jobs.resumePending()).toBe(1);
        await jobs.idle();
        version = await context.store.content.version(document.id, 1);
        expect(version).toMatchObject({ thumbnailStatus: 'pending', thumbnailError: null });
        expect(leftovers()).toEqual([]);
      } finally {
        freeDisk();
      }
      expect(await thumbnailOnceSettled(document.id)).toMatchObject({ thumbnailStatus: 'ready' });
    } finally {
      await jobs.close();
    }
  });

  it('a render that fails while the disk is full stays pending and is marked failed once space is freed', async () => {
    const { context } = server.server;
    const document = await createDocument('full-malformed.stl');
    // Not an STL: its render fails, whatever the disk.
    expect((await upload(document, Buffer.alloc(4096, 0xff))).status).toBe(201);
    await context.content.thumbnails.idle();
    expect(await context.store.content.version(document.id, 1)).toMatchObject({ thumbnailStatus: 'failed' });
    await context.store.content.setThumbnail(document.id, 1, { status: 'pending', key: null, error: null });
    const jobs = new ThumbnailJobs(context.store, context.content.storage, { hasThumbnail, renderThumbnail }, { size: 64, timeoutMs: 20_000, concurrency: 1, retryDelayMs: 100 });
    try {
      fillDisk(filler);
      try {
        jobs.enqueue((await context.store.content.version(document.id, 1))!);
        await jobs.idle();
        // The render failed, and the database had no room to say so.
        expect(await context.store.content.version(document.id, 1)).toMatchObject({ thumbnailStatus: 'pending' });
      } finally {
        freeDisk();
      }
      expect(await thumbnailOnceSettled(document.id)).toMatchObject({ thumbnailStatus: 'failed' });
    } finally {
      await jobs.close();
    }
  });

  it('the content folder turns read-only at run time: an upload answers 503 with Retry-After, and succeeds once it is writable again', async () => {
    const document = await createDocument('read-only.stl');
    // Root ignores permissions, and a file system with open files refuses `remount,ro`: a read-only
    // bind mount of the content folder is what a failing disk remounted read-only looks like here.
    const content = path.join(mountPoint, 'data', 'content');
    execFileSync('mount', ['--bind', content, content]);
    contentBound = true;
    execFileSync('mount', ['-o', 'remount,ro,bind', content]);
    try {
      const refused = await upload(document, Buffer.alloc(100_000, 3));
      const problem = expectProblem(refused, 503);
      expect(problem.detail).toMatch(/cannot write to its data folder right now/);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await documentOf(document.id)).hasContent).toBe(false);
    } finally {
      execFileSync('umount', ['-l', content]);
      contentBound = false;
    }
    expect((await upload(document, Buffer.alloc(100_000, 3))).status).toBe(201);
  });

  it('a server (re)started on a full disk says the disk is full, not "disk I/O error", and starts once space is freed', async () => {
    const config = loadConfig({ PORT: '0', PATIENT_DOCS_DATA_DIR: path.join(mountPoint, 'second'), PATIENT_DOCS_SEED: SEED_FILE, PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN, PATIENT_DOCS_LOG_LEVEL: 'silent' });
    await (await startServer(config, { logger: false })).close();
    fillDisk(filler);
    try {
      await expect(startServer(config, { logger: false })).rejects.toThrow(/^the disk holding .*second is full \(\d+ bytes free\), so the database .* cannot be opened; free space on that disk and start the server again$/);
    } finally {
      freeDisk();
    }
    await (await startServer(config, { logger: false })).close();
  });

  it('tus: when the final commit cannot be written, the upload stays resumable (all but its last byte) and the retry commits', async () => {
    const document = await createDocument('full-tus-final.stl');
    const bytes = Buffer.alloc(2 * MiB, 4);
    const created = await tus('POST', `${document.storageUrl}/uploads`, { 'upload-length': String(bytes.length) });
    const location = created.headers.get('location')!;
    // The bytes fit, the database cannot grow at the last moment (its WAL needs pages the disk no longer has).
    const content = server.server.context.store.content;
    const commitVersion = content.commitVersion.bind(content);
    content.commitVersion = async () => {
      content.commitVersion = commitVersion;
      throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    };
    try {
      expectStorageFull(await tus('PATCH', location, { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, bytes));
    } finally {
      content.commitVersion = commitVersion;
    }
    expect((await documentOf(document.id)).hasContent).toBe(false);
    const head = await tus('HEAD', location);
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('upload-offset'))).toBe(bytes.length - 1);
    const last = await tus('PATCH', location, { 'upload-offset': String(bytes.length - 1), 'content-type': 'application/offset+octet-stream' }, bytes.subarray(bytes.length - 1));
    expect(last.status).toBe(204);
    expect(await documentOf(document.id)).toMatchObject({ hasContent: true, fileSize: bytes.length });
    expect(leftovers()).toEqual([]);
  });
});
