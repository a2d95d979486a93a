/**
 * Content storage on the local disk, under one root in the data directory:
 *   tmp/      bytes being received (`<uuid>.part`), never read by downloads
 *   objects/  committed objects by key, written only by rename from tmp/ (same file system, atomic)
 * A crash leaves at worst a temp file or an object no record names; garbage collection removes both.
 */
import { createHash, randomUUID, type Hash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { Transform, Writable, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SizeLimitError, type ByteRange, type ContentStorage, type ReceivedContent, type TempObject } from './types.js';

const KEY_PATTERN = /^[a-z0-9][a-z0-9._-]*(\/[a-z0-9][a-z0-9._-]*)*$/;
/** Large writes mean fewer syscalls on multi-GB scans, at a bounded memory cost per upload. */
export const WRITE_HIGH_WATER_MARK = 1024 * 1024;
const BACKGROUND_FLUSH_MS = 250;

/**
 * Counts and hashes the bytes flowing through, failing as soon as they pass `maxBytes`.
 * `alsoFeed` receives the same bytes (a resumable upload's running hash of the whole file).
 */
export class MeteredHash extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly alsoFeed?: Hash,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      callback(new SizeLimitError(this.maxBytes));
      return;
    }
    this.hash.update(chunk);
    this.alsoFeed?.update(chunk);
    callback(null, chunk);
  }
}

/** fsync a file or directory: what rename-based atomicity needs to survive a power cut. */
export async function syncPath(target: string, mode: 'r' | 'r+' = 'r'): Promise<void> {
  const handle = await fsp.open(target, mode);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes a stream to a file and fsyncs it before 'finish'. While bytes still arrive it flushes
 * in the background, so the final fsync of a multi-GB upload has little left to wait for.
 */
export class DurableFileWriter extends Writable {
  private flushing: Promise<unknown> | undefined;
  private flushedAt = Date.now();

  constructor(private readonly handle: FileHandle) {
    super({ highWaterMark: WRITE_HIGH_WATER_MARK });
  }

  private flushInBackground(): void {
    if (this.flushing || Date.now() - this.flushedAt < BACKGROUND_FLUSH_MS) return;
    this.flushedAt = Date.now();
    this.flushing = this.handle.datasync().then(
      () => (this.flushing = undefined),
      () => (this.flushing = undefined),
    );
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.handle.write(chunk).then(() => {
      this.flushInBackground();
      callback();
    }, callback);
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, callback: (error?: Error | null) => void): void {
    this.handle.writev(chunks.map(({ chunk }) => chunk)).then(() => {
      this.flushInBackground();
      callback();
    }, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    Promise.resolve(this.flushing)
      .then(() => this.handle.sync())
      .then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    Promise.resolve(this.flushing)
      .then(() => this.handle.close())
      .then(
        () => callback(error),
        () => callback(error),
      );
  }
}

export class LocalDiskStorage implements ContentStorage {
  readonly tmpDir: string;
  readonly objectsDir: string;

  constructor(readonly root: string) {
    this.tmpDir = path.join(root, 'tmp');
    this.objectsDir = path.join(root, 'objects');
    fs.mkdirSync(this.tmpDir, { recursive: true });
    fs.mkdirSync(this.objectsDir, { recursive: true });
  }

  newTemp(): TempObject {
    const id = randomUUID();
    return { id, path: path.join(this.tmpDir, `${id}.part`) };
  }

  async receive(source: Readable, maxBytes: number): Promise<ReceivedContent> {
    const temp = this.newTemp();
    const meter = new MeteredHash(maxBytes);
    try {
      await pipeline(source, meter, new DurableFileWriter(await fsp.open(temp.path, 'wx')));
    } catch (error) {
      await this.discard(temp);
      throw error;
    }
    return { temp, size: meter.bytes, sha256: meter.hash.digest('hex') };
  }

  async commit(temp: TempObject, key: string): Promise<void> {
    const target = this.localPath(key);
    await syncPath(temp.path, 'r+');
    await fsp.mkdir(path.dirname(target), { recursive: true });
    await fsp.rename(temp.path, target);
    await syncPath(path.dirname(target));
  }

  async discard(temp: TempObject): Promise<void> {
    await fsp.rm(temp.path, { force: true });
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    const temp = this.newTemp();
    try {
      await fsp.writeFile(temp.path, bytes, { flag: 'wx' });
      await this.commit(temp, key);
    } catch (error) {
      await this.discard(temp);
      throw error;
    }
  }

  async size(key: string): Promise<number | undefined> {
    try {
      const stat = await fsp.stat(this.localPath(key));
      return stat.isFile() ? stat.size : undefined;
    } catch {
      return undefined;
    }
  }

  read(key: string, range?: ByteRange): Readable {
    return fs.createReadStream(this.localPath(key), range ? { start: range.start, end: range.end, highWaterMark: WRITE_HIGH_WATER_MARK } : { highWaterMark: WRITE_HIGH_WATER_MARK });
  }

  localPath(key: string): string {
    if (!KEY_PATTERN.test(key) || key.split('/').some((segment) => segment === '.' || segment === '..')) {
      throw new Error(`invalid storage key ${JSON.stringify(key)}`);
    }
    return path.join(this.objectsDir, ...key.split('/'));
  }

  async remove(key: string): Promise<void> {
    await fsp.rm(this.localPath(key), { force: true });
  }

  async collectGarbage(options: {
    tempOlderThanMs: number;
    isReferenced?: (key: string) => Promise<boolean>;
    orphanOlderThanMs?: number;
  }): Promise<{ tempFiles: number; orphanObjects: number }> {
    const tempFiles = await removeOlderThan(this.tmpDir, Date.now() - options.tempOlderThanMs);
    let orphanObjects = 0;
    if (options.isReferenced) {
      const cutoff = Date.now() - (options.orphanOlderThanMs ?? 60 * 60_000);
      for await (const file of walkFiles(this.objectsDir)) {
        const key = path.relative(this.objectsDir, file).split(path.sep).join('/');
        const stat = await fsp.stat(file).catch(() => undefined);
        // Young objects may belong to a commit whose record is being written right now.
        if (!stat || stat.mtimeMs > cutoff) continue;
        if (!(await options.isReferenced(key))) {
          await fsp.rm(file, { force: true });
          orphanObjects += 1;
        }
      }
    }
    return { tempFiles, orphanObjects };
  }
}

async function removeOlderThan(directory: string, cutoffMs: number): Promise<number> {
  let removed = 0;
  for (const name of await fsp.readdir(directory).catch(() => [] as string[])) {
    const file = path.join(directory, name);
    const stat = await fsp.stat(file).catch(() => undefined);
    if (stat?.isFile() && stat.mtimeMs <= cutoffMs) {
      await fsp.rm(file, { force: true });
      removed += 1;
    }
  }
  return removed;
}

async function* walkFiles(directory: string): AsyncGenerator<string> {
  const entries = await fsp.readdir(directory, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) yield* walkFiles(full);
    else if (entry.isFile()) yield full;
  }
}
