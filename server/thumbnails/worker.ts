// Worker entry: renders the job in workerData and posts one WorkerReply. Everything hostile input can
// do to a parser (throw, recurse, allocate, spin) happens here, behind the parent's limits.
import { parentPort, workerData } from 'node:worker_threads';
import { ThumbnailError } from './errors.js';
import type { WorkerBoot } from '../worker-threads.js';
import type { ThumbnailJob, WorkerReply } from './protocol.js';
import { renderJob } from './render-job.js';

function toReply(error: unknown): WorkerReply {
  if (error instanceof ThumbnailError) return { ok: false, reason: error.reason, message: error.message };
  // Stack overflows (deeply nested input) and parser exceptions alike mean the file made no sense.
  const message = error instanceof Error ? error.message : String(error);
  return { ok: false, reason: 'malformed', message };
}

async function main(): Promise<void> {
  const { data: job } = workerData as WorkerBoot<ThumbnailJob>;
  let reply: WorkerReply;
  try {
    const png = await renderJob(job);
    reply = { ok: true, png: new Uint8Array(png.buffer, png.byteOffset, png.byteLength) };
  } catch (error) {
    reply = toReply(error);
  }
  parentPort?.postMessage(reply);
}

await main();
