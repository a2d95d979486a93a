// The messages between renderThumbnail and its worker; kept in one place so both sides agree.
import type { ThumbnailFailureReason } from './errors.js';

export type ThumbnailKind = 'mesh' | 'pdf' | 'image';

/** What one worker renders. `filePath` is read inside the worker so a huge file never enters the main heap. */
export interface ThumbnailJob {
  filePath: string;
  fileType: string;
  size: number;
  maxInputBytes: number;
}

export type WorkerReply =
  | { ok: true; png: Uint8Array }
  | { ok: false; reason: ThumbnailFailureReason; message: string };

