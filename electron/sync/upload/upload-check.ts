/** The check both upload routes run before the last bytes of a file leave. */
import { stat, statfs } from 'node:fs/promises';
import { PLAIN_MESSAGES } from '../../../shared/bridge-errors.js';
import { FileChangedDuringUploadError } from '../api/api-errors.js';
import type { UploadRequest } from '../api/document-api.js';

/**
 * What tells one state of a file's bytes from another without reading them: size, mtime, ctime
 * (any write, and any utimes that resets the mtime, moves it) and the file id (a file replaced by
 * a rename is another file). Nanoseconds, as bigints: the number form rounds them.
 */
export interface FileStamp {
  size: number;
  mtimeMs: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  dev: bigint;
  ino: bigint;
  /** When the stamp was taken (this computer's clock, ms). */
  takenAt: number;
}

/**
 * How long a file must have been left alone (mtime and ctime this far before the stamp) for its
 * stamp to stand for its bytes: a write in the same clock tick as the change before it can leave
 * the times as they were, and FAT keeps times to 2 s.
 */
export const STAMP_QUIET_MS = 2000;

/** The file's stamp now, undefined when it is gone. */
export async function fileStamp(filePath: string, now: () => number = Date.now): Promise<FileStamp | undefined> {
  const takenAt = now();
  try {
    const stats = await stat(filePath, { bigint: true });
    return { size: Number(stats.size), mtimeMs: msOf(stats.mtimeNs), mtimeNs: stats.mtimeNs, ctimeNs: stats.ctimeNs, dev: stats.dev, ino: stats.ino, takenAt };
  } catch {
    return undefined;
  }
}

/** Milliseconds as fs.stat's number form computes them (seconds × 1e3 + nanoseconds / 1e6), so both forms agree. */
function msOf(ns: bigint): number {
  // Whole seconds rounded down and a non-negative remainder, as the kernel hands them (times before 1970 too).
  let seconds = ns / 1_000_000_000n;
  let rest = ns % 1_000_000_000n;
  if (rest < 0n) [seconds, rest] = [seconds - 1n, rest + 1_000_000_000n];
  return Number(seconds) * 1e3 + Number(rest) / 1e6;
}

export function sameStamp(a: FileStamp, b: FileStamp): boolean {
  return a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.dev === b.dev && a.ino === b.ino;
}

/** The file was left alone long enough before `stamp` was taken for an unchanged stamp to prove unchanged bytes. */
export function stampIsQuiet(stamp: FileStamp): boolean {
  const latestMs = Number((stamp.mtimeNs > stamp.ctimeNs ? stamp.mtimeNs : stamp.ctimeNs) / 1_000_000n);
  return latestMs + STAMP_QUIET_MS <= stamp.takenAt;
}

/**
 * Linux file system types whose attributes another computer changes and this one may see late
 * (client-side attribute caches): on them a file is hashed from disk after its upload, whatever
 * its stamp says. NFS, SMB/CIFS, FUSE (sshfs and the like), 9P, Ceph, AFS, Coda, NCP.
 */
const SHARED_FILE_SYSTEMS = new Set([0x6969, 0x517b, 0xff534d42, 0xfe534d42, 0x65735546, 0x01021997, 0x00c36400, 0x5346414f, 0x73757245, 0x564c]);

/**
 * Whether this file's stamp can be trusted to show a change made by anyone: false on a network
 * share (a Windows UNC path, or one of the Linux types above), where a change made on another
 * computer may reach this one's attributes only later.
 */
export async function stampsAreLocal(filePath: string, platform: NodeJS.Platform = process.platform): Promise<boolean> {
  if (platform === 'win32') return !/^[\\/]{2}/.test(filePath);
  if (platform !== 'linux') return true;
  try {
    const info = await statfs(filePath);
    return !SHARED_FILE_SYSTEMS.has(Number(info.type) >>> 0);
  } catch {
    return false;
  }
}

/**
 * Checked before the last bytes leave: a file that changed since the upload began (a scanner still
 * writing) fails the upload before the server can make the half-written bytes the document's
 * content. With the stamp taken before the first byte was read, a change that kept size and mtime
 * counts too. A file deleted meanwhile is not a change: the open file reads on, whole.
 */
export function unchangedSinceStart(request: UploadRequest): (() => Promise<void>) | undefined {
  const mtimeMs = request.mtimeMs;
  const before = request.stamp;
  if (mtimeMs === undefined && !before) return undefined;
  return async () => {
    if (before) {
      const now = await fileStamp(request.filePath);
      if (now && !sameStamp(before, now)) {
        throw new FileChangedDuringUploadError(`the file changed during the upload (${request.size} bytes announced, ${now.size} now)`);
      }
      return;
    }
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
