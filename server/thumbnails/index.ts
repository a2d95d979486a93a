// Thumbnails of uploaded scans, PDFs and images (DESIGN §3 "Documents"). Each render runs in a
// worker thread with a heap limit and a wall-clock timeout (a few warm workers, see pool.ts):
// uploaded files are hostile until parsed, and a parser stuck on one must never take the server
// with it.
import { stat } from 'node:fs/promises';
import { startModuleWorker } from '../worker-threads.js';
import { ThumbnailError } from './errors.js';
import { ThumbnailPool } from './pool.js';
import type { ThumbnailJob } from './protocol.js';

export { ThumbnailError } from './errors.js';
export type { ThumbnailFailureReason } from './errors.js';

export const THUMBNAIL_TYPES: readonly string[] = Object.freeze(['STL', 'PLY', 'OBJ', 'PDF', 'PNG', 'JPG', 'JPEG']);

export interface ThumbnailOptions {
  /** Width and height of the PNG in pixels (default 256, 16–1024). */
  size?: number;
  /** Wall-clock limit for the whole render (default 20 s); the worker is terminated when it passes. */
  timeoutMs?: number;
  /** Larger files are refused without being read (default 256 MiB). */
  maxInputBytes?: number;
}

const DEFAULT_SIZE = 256;
const MIN_SIZE = 16;
const MAX_SIZE = 1024;
const DEFAULT_TIMEOUT_MS = 20_000;
const DEFAULT_MAX_INPUT_BYTES = 256 * 1024 * 1024;
/** Heap for one render: plenty for 5 M triangles (kept in typed arrays, outside this limit) and pdfjs. */
const WORKER_HEAP_MB = 256;

export function hasThumbnail(fileType: string): boolean {
  return THUMBNAIL_TYPES.includes(fileType.toUpperCase());
}

/**
 * Renders a PNG thumbnail of the file (`source`: its path, or its content as chunks): meshes as a
 * shaded three-quarter view, PDFs' first page, images scaled to fit. Rejects only with ThumbnailError.
 */
export async function renderThumbnail(source: string | readonly Uint8Array[], fileType: string, options: ThumbnailOptions = {}): Promise<Buffer> {
  const type = fileType.toUpperCase();
  if (!hasThumbnail(type)) throw new ThumbnailError('unsupported', `no thumbnails for ${fileType} files`);
  const common = {
    fileType: type === 'JPG' ? 'JPEG' : type,
    size: checkedSize(options.size ?? DEFAULT_SIZE),
    maxInputBytes: options.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES,
  };
  let job: ThumbnailJob;
  if (typeof source === 'string') {
    await assertReadableAndSmallEnough(source, common.maxInputBytes);
    job = { ...common, filePath: source };
  } else {
    const bytes = source.reduce((sum, chunk) => sum + chunk.length, 0);
    if (bytes > common.maxInputBytes) throw new ThumbnailError('too-large', `the file is ${bytes} bytes, more than ${common.maxInputBytes}`);
    job = { ...common, content: source };
  }
  return runInWorker(job, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
}

function checkedSize(size: number): number {
  if (!Number.isInteger(size) || size < MIN_SIZE || size > MAX_SIZE) {
    throw new ThumbnailError('unsupported', `thumbnail size must be an integer from ${MIN_SIZE} to ${MAX_SIZE}`);
  }
  return size;
}

/** Refuses oversized files before paying for a worker. */
async function assertReadableAndSmallEnough(filePath: string, maxInputBytes: number): Promise<void> {
  const info = await stat(filePath).catch((error: unknown) => {
    throw new ThumbnailError('malformed', `cannot read the file (${error instanceof Error ? error.message : String(error)})`);
  });
  if (!info.isFile()) throw new ThumbnailError('malformed', 'not a regular file');
  if (info.size > maxInputBytes) throw new ThumbnailError('too-large', `the file is ${info.size} bytes, more than ${maxInputBytes}`);
}

/** Workers kept warm: as many as renders run at once (DEFAULT_THUMBNAIL_OPTIONS.concurrency). */
const POOL_WORKERS = 2;
/** An idle worker ends after this long: a quiet server holds no render memory. */
const WORKER_IDLE_MS = 60_000;
/**
 * Jobs per worker before it is replaced, so nothing a file left behind lasts long. A replacement
 * costs about 0.3 CPU-seconds to start and 0.3 more to load pdfjs at its first PDF: at 1,000 jobs
 * that is under 1 ms a file (at 200 it would be about 3 ms, a third of a small file's server CPU).
 * Memory stays bounded by the heap check below, whatever the count.
 */
const JOBS_PER_WORKER = 1000;
/**
 * A worker whose heap (garbage included: pdfjs alone leaves ~120 MB until a collection) is above
 * three quarters of its limit after a job is replaced, so the next file starts with room to spare.
 */
const RETIRE_ABOVE_HEAP_BYTES = WORKER_HEAP_MB * 1024 * 1024 * 0.75;

/**
 * How far the server's resident memory, less the main thread's own heap and buffers, may grow while
 * renders run before they are ended (see pool.ts): room for the largest honest scans and PDFs (a
 * 5 M-triangle mesh, a page of camera photos, with their worker heaps), while two renders at once
 * never take a clinic's server past about a gigabyte more than it needs otherwise.
 */
export const RENDER_MEMORY_BUDGET_BYTES = 768 * 1024 * 1024;

export const thumbnailPool = new ThumbnailPool({
  start: () => startModuleWorker(import.meta.url, 'worker', null, { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 32 }),
  maxWorkers: POOL_WORKERS,
  idleMs: WORKER_IDLE_MS,
  maxJobsPerWorker: JOBS_PER_WORKER,
  retireAboveHeapBytes: RETIRE_ABOVE_HEAP_BYTES,
  memoryBudgetBytes: RENDER_MEMORY_BUDGET_BYTES,
});

function runInWorker(job: ThumbnailJob, timeoutMs: number): Promise<Buffer> {
  return thumbnailPool.run(job, timeoutMs);
}
