// The messages between the thumbnail pool and its workers; kept in one place so both sides agree.
import type { ThumbnailFailureReason } from './errors.js';

export type ThumbnailKind = 'mesh' | 'pdf' | 'image';

/** What every render is asked for, whichever way its bytes come. */
interface RenderRequest {
  fileType: string;
  size: number;
  maxInputBytes: number;
}

/**
 * What one worker renders: `filePath` is read inside the worker so a huge file never enters the
 * main heap; a small file the caller holds comes as `content` instead (see WorkerJob).
 */
export type ThumbnailJob = RenderRequest & ({ filePath: string } | { content: readonly Uint8Array[] });

/**
 * A job as the worker receives it: `content` copied into the first `length` bytes of `shared`, a
 * buffer the pool keeps for that worker (no copy into the message and out of it, no fresh memory).
 */
export type WorkerJob = RenderRequest & ({ filePath: string } | { shared: SharedArrayBuffer; length: number });

/** One answer per job; `heapUsed` is the worker's heap after it (a worker grown too large is retired). */
export type WorkerReply =
  | { ok: true; png: Uint8Array; heapUsed: number }
  | { ok: false; reason: ThumbnailFailureReason; message: string; heapUsed: number };

