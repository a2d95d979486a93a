// Worker entry: renders the jobs the pool hands it, one at a time, and answers each with one
// WorkerReply. Everything hostile input can do to a parser (throw, recurse, allocate, spin) happens
// here, behind the pool's limits; the parsers' modules stay compiled between jobs.
import { getHeapStatistics } from 'node:v8';
import { parentPort } from 'node:worker_threads';
import { ThumbnailError } from './errors.js';
import type { WorkerJob, WorkerReply } from './protocol.js';
import { renderJob } from './render-job.js';

function toReply(error: unknown): WorkerReply {
  if (error instanceof ThumbnailError) return { ok: false, reason: error.reason, message: error.message, heapUsed: heapUsed() };
  // Stack overflows (deeply nested input) and parser exceptions alike mean the file made no sense.
  const message = error instanceof Error ? error.message : String(error);
  return { ok: false, reason: 'malformed', message, heapUsed: heapUsed() };
}

function heapUsed(): number {
  return getHeapStatistics().used_heap_size;
}

async function answer(job: WorkerJob): Promise<WorkerReply> {
  try {
    const png = await renderJob(job);
    return { ok: true, png: new Uint8Array(png.buffer, png.byteOffset, png.byteLength), heapUsed: heapUsed() };
  } catch (error) {
    return toReply(error);
  }
}

parentPort?.on('message', (job: WorkerJob) => {
  void answer(job).then((reply) => parentPort?.postMessage(reply));
});
