// Thumbnails of uploaded scans, PDFs and images (DESIGN §3 "Documents"). Each render runs in its own
// worker thread with a heap limit and a wall-clock timeout: uploaded files are hostile until parsed,
// and a parser stuck on one must never take the server with it.
import { stat } from 'node:fs/promises';
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../worker-threads.js';
import { isThumbnailFailureReason, ThumbnailError } from './errors.js';
import type { ThumbnailJob, WorkerReply } from './protocol.js';

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
 * Renders a PNG thumbnail of the file: meshes as a shaded three-quarter view, PDFs' first page,
 * images scaled to fit. Rejects only with ThumbnailError.
 */
export async function renderThumbnail(filePath: string, fileType: string, options: ThumbnailOptions = {}): Promise<Buffer> {
  const type = fileType.toUpperCase();
  if (!hasThumbnail(type)) throw new ThumbnailError('unsupported', `no thumbnails for ${fileType} files`);
  const job: ThumbnailJob = {
    filePath,
    fileType: type === 'JPG' ? 'JPEG' : type,
    size: checkedSize(options.size ?? DEFAULT_SIZE),
    maxInputBytes: options.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES,
  };
  await assertReadableAndSmallEnough(filePath, job.maxInputBytes);
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

function runInWorker(job: ThumbnailJob, timeoutMs: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    let worker: Worker;
    try {
      worker = startWorker(job);
    } catch (error) {
      reject(new ThumbnailError('malformed', `could not start the thumbnail worker (${String(error)})`));
      return;
    }
    let settled = false;
    const settle = (outcome: Buffer | ThumbnailError): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      if (outcome instanceof ThumbnailError) reject(outcome);
      else resolve(outcome);
    };
    const timer = setTimeout(() => settle(new ThumbnailError('timeout', `rendering took longer than ${timeoutMs} ms`)), timeoutMs);
    worker.on('message', (reply: WorkerReply) => settle(fromReply(reply)));
    worker.on('error', (error: Error) => settle(fromWorkerError(error)));
    worker.on('exit', (code) => settle(new ThumbnailError('malformed', `the thumbnail worker exited (${code}) without an answer`)));
  });
}

function startWorker(job: ThumbnailJob): Worker {
  return startModuleWorker(import.meta.url, 'worker', job, { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 32 });
}

function fromReply(reply: WorkerReply): Buffer | ThumbnailError {
  if (reply.ok) return Buffer.from(reply.png.buffer, reply.png.byteOffset, reply.png.byteLength);
  return new ThumbnailError(isThumbnailFailureReason(reply.reason) ? reply.reason : 'malformed', reply.message);
}

/** An uncaught error in the worker; running out of heap means the file was too big to render. */
function fromWorkerError(error: Error): ThumbnailError {
  const code = (error as Error & { code?: unknown }).code;
  if (code === 'ERR_WORKER_OUT_OF_MEMORY') return new ThumbnailError('too-large', 'rendering needed more memory than a thumbnail may use');
  return new ThumbnailError('malformed', `the thumbnail worker failed (${error.message})`);
}
