// The messages between the thumbnail pool and its workers; kept in one place so both sides agree.
import type { ThumbnailFailureReason } from './errors.js';

export type ThumbnailKind = 'mesh' | 'pdf' | 'image';

/** What one worker renders. `filePath` is read inside the worker so a huge file never enters the main heap. */
export interface ThumbnailJob {
  filePath: string;
  fileType: string;
  size: number;
  maxInputBytes: number;
}

/** One answer per job; `heapUsed` is the worker's heap after it (a worker grown too large is retired). */
export type WorkerReply =
  | { ok: true; png: Uint8Array; heapUsed: number }
  | { ok: false; reason: ThumbnailFailureReason; message: string; heapUsed: number };

