/**
 * What a render reads: a scratch file of its own (a hard link to the stored object on the local
 * disk, a copy where no link can be made), whatever happens to the stored object while it renders.
 * A real server's database records the versions; their bytes sit in a local content store of this
 * test's own (the same keys), so the links are made whatever storage the server itself runs on.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeArchStl } from '../../test/fixtures/scans.js';
import { PATIENT, startTestServer, tempDir, type TestServer } from '../../test/helpers/server.js';
import type { DocumentVersionRecord } from '../db/types.js';
import { LocalDiskStorage } from '../storage/local-disk.js';
import { hasThumbnail, renderThumbnail } from '../thumbnails/index.js';
import { RENDER_INPUT_LIMIT, ThumbnailJobs, type ThumbnailRenderer } from './thumbnail-jobs.js';

const SCAN = makeArchStl({ triangles: 2_000 });
const PNG_SIGNATURE = '89504e47';
let server: TestServer;
let root: string;
let storage: LocalDiskStorage;
let otherFileSystem: string;

beforeAll(async () => {
  server = await startTestServer();
  root = tempDir('render-scratch');
  storage = new LocalDiskStorage(path.join(root, 'content'));
  // tmpfs, while the test's content store is on the disk of the system's temp folder.
  otherFileSystem = fs.mkdtempSync(path.join('/dev/shm', 'patient-docs-render-'));
});

afterAll(async () => {
  await server?.close();
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(otherFileSystem, { recursive: true, force: true });
});

/** An uploaded scan whose thumbnail is pending again, its bytes in this test's store under the version's key. */
async function pendingScan(fileName: string, bytes: Buffer = SCAN): Promise<DocumentVersionRecord> {
  const created = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName, path: '/render' } });
  expect(created.status).toBe(201);
  const form = new FormData();
  form.append('Id', created.body.id);
  form.append('Type', 'STL');
  form.append('file', new Blob([new Uint8Array(bytes)]), fileName);
  const uploaded = await fetch(`${created.body.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${await server.token()}` }, body: form });
  expect(uploaded.status).toBe(201);
  const { context } = server.server;
  await context.content.thumbnails.idle();
  await context.store.content.setThumbnail(created.body.id, 1, { status: 'pending', key: null, error: null });
  const version = (await context.store.content.version(created.body.id, 1))!;
  await storage.put(version.contentKey, bytes);
  return version;
}

/** Renders the version with its own jobs (scratch folder given), the renderer running `during` first. */
async function render(version: DocumentVersionRecord, scratchDir: string, during: (file: string) => Promise<void> = async () => undefined): Promise<DocumentVersionRecord> {
  const renderer: ThumbnailRenderer = {
    hasThumbnail,
    renderThumbnail: async (source, fileType, options) => {
      if (typeof source !== 'string') throw new Error('a version enqueued without its bytes is rendered from a file');
      await during(source);
      return renderThumbnail(source, fileType, options);
    },
  };
  const jobs = new ThumbnailJobs(server.server.context.store, storage, renderer, { size: 64, timeoutMs: 20_000, concurrency: 1, retryDelayMs: 60_000, scratchDir });
  try {
    jobs.enqueue(version);
    await jobs.idle();
  } finally {
    await jobs.close();
  }
  return (await server.server.context.store.content.version(version.documentId, version.version))!;
}

/** Renders the version with its own jobs, given `content` as an upload hands it over; returns what the renderer was given. */
async function renderWithContent(version: DocumentVersionRecord, scratchDir: string, content: readonly Uint8Array[]): Promise<{ rendered: DocumentVersionRecord; sources: Array<string | readonly Uint8Array[]> }> {
  const sources: Array<string | readonly Uint8Array[]> = [];
  const renderer: ThumbnailRenderer = {
    hasThumbnail,
    renderThumbnail: async (source, fileType, options) => {
      sources.push(source);
      return renderThumbnail(source, fileType, options);
    },
  };
  const jobs = new ThumbnailJobs(server.server.context.store, storage, renderer, { size: 64, timeoutMs: 20_000, concurrency: 1, retryDelayMs: 60_000, scratchDir });
  try {
    jobs.enqueue(version, content);
    await jobs.idle();
  } finally {
    await jobs.close();
  }
  return { rendered: (await server.server.context.store.content.version(version.documentId, version.version))!, sources };
}

async function thumbnailHead(version: DocumentVersionRecord): Promise<string> {
  return (await buffer(storage.read(version.thumbnailKey!))).subarray(0, 4).toString('hex');
}

describe('the file a render reads', () => {
  it('is the stored object under a second name (no byte copied), and keeps its bytes when the object is removed while rendering', async () => {
    const version = await pendingScan('removed.stl');
    const scratch = path.join(root, 'content', 'render');
    const object = fs.statSync(storage.localPath(version.contentKey));
    let read: fs.Stats | undefined;
    const rendered = await render(version, scratch, async (file) => {
      read = fs.statSync(file);
      await storage.remove(version.contentKey);
    });
    expect(read?.ino).toBe(object.ino);
    expect(rendered).toMatchObject({ thumbnailStatus: 'ready', thumbnailError: null });
    expect(await thumbnailHead(rendered)).toBe(PNG_SIGNATURE);
    expect(fs.readdirSync(scratch)).toEqual([]);
  });

  it('keeps the uploaded bytes when another file is renamed over the object while rendering', async () => {
    const version = await pendingScan('replaced.stl');
    const scratch = path.join(root, 'content', 'render');
    const rendered = await render(version, scratch, async () => {
      const garbage = path.join(root, 'garbage.stl');
      await fsp.writeFile(garbage, Buffer.alloc(SCAN.length, 0xff));
      await fsp.rename(garbage, storage.localPath(version.contentKey));
    });
    expect(rendered).toMatchObject({ thumbnailStatus: 'ready', thumbnailError: null });
    expect(await thumbnailHead(rendered)).toBe(PNG_SIGNATURE);
  });

  it('is a copy where the scratch folder is on another file system, removed after the render', async () => {
    const version = await pendingScan('copied.stl');
    const object = fs.statSync(storage.localPath(version.contentKey));
    let read: fs.Stats | undefined;
    const rendered = await render(version, otherFileSystem, async (file) => {
      read = fs.statSync(file);
    });
    expect(read?.dev).not.toBe(object.dev);
    expect(read?.size).toBe(SCAN.length);
    expect(rendered).toMatchObject({ thumbnailStatus: 'ready', thumbnailError: null });
    expect(fs.readdirSync(otherFileSystem)).toEqual([]);
  });

  it('fails only the thumbnail of an object larger than a render may read, at once and without reading it', async () => {
    const version = await pendingScan('huge.stl');
    // Sparse: a file past the limit that costs no disk.
    fs.truncateSync(storage.localPath(version.contentKey), RENDER_INPUT_LIMIT + 4096);
    const started = performance.now();
    const rendered = await render(version, path.join(root, 'content', 'render'));
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(rendered).toMatchObject({ thumbnailStatus: 'failed', thumbnailKey: null });
    expect(rendered.thumbnailError).toMatch(/too-large/);
    // The server goes on rendering.
    expect(await render(await pendingScan('after-huge.stl'), path.join(root, 'content', 'render'))).toMatchObject({ thumbnailStatus: 'ready' });
  });
});

describe('a small file just received', () => {
  it('is rendered from the bytes its upload kept: no scratch file, no read of the stored object', async () => {
    const version = await pendingScan('kept.stl');
    const scratch = path.join(root, 'content', 'kept-render');
    const chunks = [SCAN.subarray(0, 1000), SCAN.subarray(1000)];
    // The stored object is gone: only the kept bytes can make this thumbnail.
    await storage.remove(version.contentKey);
    const { rendered, sources } = await renderWithContent(version, scratch, chunks);
    expect(sources).toEqual([chunks]);
    expect(rendered).toMatchObject({ thumbnailStatus: 'ready', thumbnailError: null });
    expect(await thumbnailHead(rendered)).toBe(PNG_SIGNATURE);
    expect(fs.existsSync(scratch)).toBe(false);
  });

  it('is rendered from the stored object when the bytes handed over are not the whole version', async () => {
    const version = await pendingScan('partial.stl');
    const { rendered, sources } = await renderWithContent(version, path.join(root, 'content', 'render'), [SCAN.subarray(0, 1000)]);
    expect(sources).toHaveLength(1);
    expect(typeof sources[0]).toBe('string');
    expect(rendered).toMatchObject({ thumbnailStatus: 'ready', thumbnailError: null });
  });
});
