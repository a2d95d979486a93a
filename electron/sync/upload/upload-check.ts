/** The check both upload routes run before the last bytes of a file leave. */
import { stat } from 'node:fs/promises';
import { PLAIN_MESSAGES } from '../../../shared/bridge-errors.js';
import { FileChangedDuringUploadError } from '../api/api-errors.js';
import type { UploadRequest } from '../api/document-api.js';

/**
 * Checked before the last bytes leave: a file that changed since the upload began (a scanner still
 * writing) fails the upload before the server can make the half-written bytes the document's
 * content. A file deleted meanwhile is not a change: the open file reads on, whole.
 */
export function unchangedSinceStart(request: UploadRequest): (() => Promise<void>) | undefined {
  const mtimeMs = request.mtimeMs;
  if (mtimeMs === undefined) return undefined;
  return async () => {
    const now = await stat(request.filePath).catch(() => undefined);
    if (now && (now.size !== request.size || now.mtimeMs !== mtimeMs)) {
      throw new FileChangedDuringUploadError(`the file changed during the upload (${request.size} bytes announced, ${now.size} now)`);
    }
  };
}

/**
 * The file is larger than the server's upload limit (its tus `Tus-Max-Size`): found before anything
 * is created on the server, so no empty document is left in the patient's tree.
 */
export class FileTooLargeError extends Error {
  override name = 'FileTooLargeError';
  constructor(
    readonly size: number,
    readonly limit: number,
  ) {
    super(`the server's upload limit is ${limit} bytes (Tus-Max-Size); this file has ${size} bytes`);
  }

  /** What clinic staff read: both sizes in plain words (the app adds what to do: ask IT, then Retry). */
  get plainMessage(): string {
    let [file, limit] = [formatSize(this.size), formatSize(this.limit)];
    if (file === limit) [file, limit] = [`${this.size.toLocaleString('en-US')} bytes`, `${this.limit.toLocaleString('en-US')} bytes`];
    return `${PLAIN_MESSAGES.TOO_LARGE} This file is ${file}; the server accepts up to ${limit} per file. Nothing was uploaded for it.`;
  }
}

/** 3.1 MB, 1.5 GB, 700 KB: decimal units (1 MB = 1,000,000 bytes), as the app and the operating system show sizes. */
export function formatSize(bytes: number): string {
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  if (unit === 0) return `${bytes} bytes`;
  const rounded = value >= 100 ? Math.round(value) : Math.round(value * 10) / 10;
  return `${rounded} ${units[unit]}`;
}
