/**
 * Content storage on the local disk, under one root in the data directory:
 *   tmp/      bytes being received (`<uuid>.part`), never read by downloads
 *   objects/  committed objects by key, written only by rename from tmp/ (same file system, atomic)
 * A crash leaves at worst a temp file or an object no record names; garbage collection removes both.
 */
import { execFile } from 'node:child_process';
import { createHash, randomUUID, type Hash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { HEAD_BYTES, KEPT_CONTENT_BYTES, SizeLimitError, type ByteRange, type ContentStorage, type ReceivedContent, type TempObject } from './types.js';
import { PRIVATE_DIR, PRIVATE_FILE, privateDirectory } from '../private-files.js';

const execFileAsync = promisify(execFile);
const KEY_PATTERN = /^[a-z0-9][a-z0-9._-]*(\/[a-z0-9][a-z0-9._-]*)*$/;
/** Large writes mean fewer syscalls on multi-GB scans, at a bounded memory cost per upload. */
export const WRITE_HIGH_WATER_MARK = 4 * 1024 * 1024;
/** Received chunks are written once this many bytes have gathered. */
const WRITE_BATCH_BYTES = 1024 * 1024;
/**
 * Writeback (fdatasync, not waited for) is started every this many bytes, so the disk writes while
 * the network receives and the fsync before the answer finds most of the bytes written already. A
 * tus piece is 64 MiB: a flush every 64 MiB would start each piece's writeback at its last byte,
 * and the disk and the network would take turns.
 */
export const BACKGROUND_FLUSH_BYTES = 8 * 1024 * 1024;

/** fsync a file or directory: what rename-based atomicity needs to survive a power cut. */
export async function syncPath(target: string, mode: 'r' | 'r+' = 'r'): Promise<void> {
  const handle = await fsp.open(target, mode);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes every byte of `buffers`: a file write may be short. */
async function writeAll(handle: FileHandle, buffers: Buffer[]): Promise<void> {
  let pending = buffers;
  while (pending.length > 0) {
    let { bytesWritten } = pending.length === 1 ? await handle.write(pending[0]!) : await handle.writev(pending);
    const rest: Buffer[] = [];
    for (const buffer of pending) {
      if (bytesWritten >= buffer.length) bytesWritten -= buffer.length;
      else {
        rest.push(bytesWritten > 0 ? buffer.subarray(bytesWritten) : buffer);
        bytesWritten = 0;
      }
    }
    pending = rest;
  }
}

export interface DurableWriterOptions {
  /** More bytes than this fail the stream with SizeLimitError; the bytes before the chunk that crossed it are written. */
  maxBytes?: number;
  /** Also fed every byte written (a resumable upload's running hash of the whole file). */
  alsoFeed?: Hash;
  /**
   * False when the caller needs no hash of its own for these bytes (a tus chunk without
   * Upload-Checksum only feeds the upload's running hash): one SHA-256 pass instead of two.
   */
  ownHash?: boolean;
  /** Keep the chunks written as long as they add up to at most this many bytes (see `content`). */
  keepUpTo?: number;
}

/**
 * Writes a stream to a file, counting and SHA-256 hashing exactly the bytes it writes, and fsyncs
 * before 'finish'. One stage instead of a hashing Transform piped into a writer: each batch of
 * buffered chunks goes to the disk in one writev, and is hashed on the main thread while that
 * write runs on the thread pool (hash is CPU, the write is I/O: they overlap). Every
 * BACKGROUND_FLUSH_BYTES it starts writeback (fdatasync) without waiting for it, so the dirty
 * pages of a multi-GB upload do not all wait for the final fsync.
 */
export class DurableFileWriter extends Writable {
  readonly hash = createHash('sha256');
  /** Bytes written to the file (and hashed). */
  bytes = 0;
  /** True once the hashes were fed bytes a failed write may not have stored: they cannot be trusted. */
  tainted = false;
  private flushing: Promise<unknown> | undefined;
  private writing: Promise<unknown> | undefined;
  private unflushed = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** A copy of the first HEAD_BYTES bytes written, kept as they pass (see head). */
  private headBytes: Buffer | undefined;
  /** Every chunk written, while they add up to at most options.keepUpTo (see content). */
  private keptChunks: Buffer[] | undefined;

  constructor(
    private readonly handle: FileHandle,
    private readonly options: DurableWriterOptions = {},
  ) {
    super({ highWaterMark: WRITE_HIGH_WATER_MARK });
    if (options.keepUpTo !== undefined) this.keptChunks = [];
  }

  private flushInBackground(): void {
    if (this.flushing || this.unflushed < BACKGROUND_FLUSH_BYTES) return;
    this.unflushed = 0;
    this.flushing = this.handle.datasync().then(
      () => (this.flushing = undefined),
      () => (this.flushing = undefined),
    );
  }

  private async writeBatch(chunks: Buffer[]): Promise<void> {
    const maxBytes = this.options.maxBytes ?? Number.POSITIVE_INFINITY;
    let accepted = chunks;
    let size = 0;
    for (let index = 0; index < chunks.length; index += 1) {
      size += chunks[index]!.length;
      if (this.bytes + size > maxBytes) {
        accepted = chunks.slice(0, index);
        break;
      }
    }
    if (accepted.length > 0) {
      const written = writeAll(this.handle, accepted);
      this.writing = written.catch(() => undefined);
      // The buffers are only read by the write in flight: hashing them meanwhile is safe.
      this.tainted = true;
      let batchBytes = 0;
      for (const chunk of accepted) {
        if (this.options.ownHash !== false) this.hash.update(chunk);
        this.options.alsoFeed?.update(chunk);
        this.keepHead(chunk, this.bytes + batchBytes);
        batchBytes += chunk.length;
        this.keepChunk(chunk, this.bytes + batchBytes);
      }
      await written;
      this.tainted = false;
      this.bytes += batchBytes;
      this.unflushed += batchBytes;
      this.flushInBackground();
    }
    if (accepted !== chunks) throw new SizeLimitError(maxBytes);
  }

  /** The chunk written at `offset`, as far as it lies within the first HEAD_BYTES. */
  private keepHead(chunk: Buffer, offset: number): void {
    if (offset >= HEAD_BYTES) return;
    this.headBytes ??= Buffer.alloc(HEAD_BYTES);
    chunk.copy(this.headBytes, offset, 0, Math.min(chunk.length, HEAD_BYTES - offset));
  }

  /** Keeps the chunk while everything written up to its end (`end`) fits options.keepUpTo; drops them all once it does not. */
  private keepChunk(chunk: Buffer, end: number): void {
    if (!this.keptChunks) return;
    if (end > (this.options.keepUpTo ?? 0)) this.keptChunks = undefined;
    else this.keptChunks.push(chunk);
  }

  /**
   * Every byte this writer wrote, as the chunks it was given (not copied), when it was given
   * keepUpTo and wrote no more than that; undefined otherwise.
   */
  get content(): readonly Buffer[] | undefined {
    return this.keptChunks;
  }

  /**
   * The first HEAD_BYTES bytes this writer wrote (fewer when it wrote fewer): for a file written
   * whole, its head, to tell its type without opening it again.
   */
  get head(): Uint8Array {
    return (this.headBytes ?? Buffer.alloc(0)).subarray(0, Math.min(this.bytes, HEAD_BYTES));
  }

  /**
   * Chunks arrive as the socket reads them (64 KiB); they are gathered into writes of at least
   * WRITE_BATCH_BYTES, sixteen times fewer syscalls and promises than writing each one.
   */
  private gather(chunks: Buffer[], callback: (error?: Error | null) => void): void {
    for (const chunk of chunks) {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
    }
    const overLimit = this.bytes + this.pendingBytes > (this.options.maxBytes ?? Number.POSITIVE_INFINITY);
    if (this.pendingBytes < WRITE_BATCH_BYTES && !overLimit) {
      callback();
      return;
    }
    this.writePending().then(() => callback(), callback);
  }

  private writePending(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    return batch.length === 0 ? Promise.resolve() : this.writeBatch(batch);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.gather([chunk], callback);
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, callback: (error?: Error | null) => void): void {
    this.gather(
      chunks.map(({ chunk }) => chunk),
      callback,
    );
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.writePending()
      .then(() => this.flushing)
      .then(() => this.handle.sync())
      .then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // A write still in flight ends before the file is closed and the stream reports 'close'; the
    // bytes gathered but not yet written are written too (an interrupted resumable upload keeps
    // every byte that arrived).
    Promise.all([this.writing, this.flushing])
      .then(() => this.writePending())
      .catch(() => undefined)
      .then(() => this.flushing)
      .then(() => this.handle.close())
      .then(
        () => callback(error),
        () => callback(error),
      );
  }
}

/** The first `HEAD_BYTES` bytes of a file (fewer when it is shorter). */
export async function readFileHead(file: string): Promise<Uint8Array> {
  const handle = await fsp.open(file, 'r');
  try {
    const buffer = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEAD_BYTES, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

export class LocalDiskStorage implements ContentStorage {
  readonly tmpDir: string;
  readonly objectsDir: string;
  readonly shared = false;

  /** `create: false` only reads what is there (verify, backup): a folder not mounted stays missing. */
  constructor(
    readonly root: string,
    options: { create?: boolean } = {},
  ) {
    this.tmpDir = path.join(root, 'tmp');
    this.objectsDir = path.join(root, 'objects');
    if (options.create !== false) {
      privateDirectory(root);
      privateDirectory(this.tmpDir);
      privateDirectory(this.objectsDir);
    }
  }

  get location(): string {
    return this.objectsDir;
  }

  /** The data directory was made and checked at start: nothing more to probe. */
  async check(): Promise<void> {}

  newTemp(): TempObject {
    return { id: randomUUID() };
  }

  /** The file holding a temp object's bytes (the resumable uploads' store moves finished uploads here). */
  tempPath(temp: TempObject): string {
    if (!/^[a-f0-9-]{36}$/.test(temp.id)) throw new Error(`invalid temp object id ${JSON.stringify(temp.id)}`);
    return path.join(this.tmpDir, `${temp.id}.part`);
  }

  async receive(source: Readable, maxBytes: number): Promise<ReceivedContent> {
    const temp = this.newTemp();
    let writer: DurableFileWriter;
    try {
      writer = new DurableFileWriter(await fsp.open(this.tempPath(temp), 'wx', PRIVATE_FILE), { maxBytes, keepUpTo: KEPT_CONTENT_BYTES });
      await pipeline(source, writer);
    } catch (error) {
      await this.discard(temp);
      throw error;
    }
    // The writer fsync'ed the file before the pipeline finished: commit's rename needs no second one.
    // It kept the first bytes it wrote too: the type check needs no second open of the file; and
    // all of a small file's: its thumbnail is rendered from them, with no read of the stored object.
    const content = writer.content;
    return { temp: { ...temp, durable: true }, size: writer.bytes, sha256: writer.hash.digest('hex'), head: writer.head, ...(content ? { content } : {}) };
  }

  /** fsync unless the temp file is already durable, rename, fsync of the folder. */
  async commit(temp: TempObject, key: string): Promise<void> {
    if (!temp.durable) await syncPath(this.tempPath(temp), 'r+');
    await syncPath(await this.place(temp, key));
  }

  /** Renames a temp file to its key (atomic: a reader sees the whole file or none); returns the key's folder. */
  private async place(temp: TempObject, key: string): Promise<string> {
    const target = this.localPath(key);
    await fsp.mkdir(path.dirname(target), { recursive: true, mode: PRIVATE_DIR });
    await fsp.rename(this.tempPath(temp), target);
    return path.dirname(target);
  }

  /** A rename costs nothing here: the bytes always go under `key`. */
  async keep(temp: TempObject, key: string): Promise<string> {
    await this.commit(temp, key);
    return key;
  }

  async uncommit(key: string, temp: TempObject): Promise<void> {
    await fsp.rename(this.localPath(key), this.tempPath(temp));
  }

  async discard(temp: TempObject): Promise<void> {
    await fsp.rm(this.tempPath(temp), { force: true });
  }

  async put(key: string, bytes: Buffer, options: { durable?: boolean } = {}): Promise<void> {
    const temp = this.newTemp();
    try {
      await fsp.writeFile(this.tempPath(temp), bytes, { flag: 'wx', mode: PRIVATE_FILE });
      if (options.durable === false) await this.place(temp, key);
      else await this.commit(temp, key);
    } catch (error) {
      await this.discard(temp);
      throw error;
    }
  }

  /**
   * One syncfs(2) of the file system the objects are on: a single journal commit for a whole
   * batch, where an fsync of each file and of its folder costs two per file (a thousand 4 KiB files:
   * 0.2 s instead of 2 s on this project's test machine). Where syncfs is not available, each file
   * and every folder above it is fsync'ed.
   */
  async sync(keys: readonly string[]): Promise<void> {
    if (keys.length === 0 || (await syncFileSystem(this.objectsDir))) return;
    const folders = new Set<string>();
    for (const key of keys) {
      for (let folder = path.dirname(this.localPath(key)); folder.startsWith(this.objectsDir); folder = path.dirname(folder)) folders.add(folder);
    }
    await eachAtMost(SYNCS_IN_FLIGHT, keys, (key) => syncPath(this.localPath(key)));
    await eachAtMost(SYNCS_IN_FLIGHT, [...folders], (folder) => syncPath(folder));
  }

  /** A hard link; false on any failure, the caller's copy then finds what is wrong, as it would have. */
  async linkAs(key: string, file: string): Promise<boolean> {
    try {
      await fsp.link(this.localPath(key), file);
      return true;
    } catch {
      return false;
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

  /**
   * Node's file stream takes a buffer of min(highWaterMark, bytes left in the range) for each read:
   * a caller that knows the size of a small object passes a range, or each read costs 4 MiB.
   */
  read(key: string, range?: ByteRange): Readable {
    return fs.createReadStream(this.localPath(key), range ? { start: range.start, end: range.end, highWaterMark: WRITE_HIGH_WATER_MARK } : { highWaterMark: WRITE_HIGH_WATER_MARK });
  }

  /** The file of a committed object: this backend's own, for its tests and tools (not part of ContentStorage). */
  localPath(key: string): string {
    if (!KEY_PATTERN.test(key) || key.split('/').some((segment) => segment === '.' || segment === '..')) {
      throw new Error(`invalid storage key ${JSON.stringify(key)}`);
    }
    return path.join(this.objectsDir, ...key.split('/'));
  }

  async remove(key: string): Promise<void> {
    await fsp.rm(this.localPath(key), { force: true });
  }

  hasObjects(): Promise<boolean> {
    return holdsAnyFile(this.objectsDir);
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

/** fsyncs in flight at once when a batch is made durable file by file (libuv's thread pool runs 4). */
const SYNCS_IN_FLIGHT = 8;

async function eachAtMost<T>(limit: number, items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await work(items[(next += 1) - 1]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * syncfs(2) of the file system holding `folder`, through coreutils' `sync --file-system` (Node has
 * no binding for it). False where it is not available (not Linux, no such option), so the caller
 * syncs file by file; a failure of the sync itself (an I/O error) rejects.
 */
async function syncFileSystem(folder: string): Promise<boolean> {
  if (process.platform !== 'linux') return false;
  try {
    await execFileAsync('sync', ['--file-system', folder]);
    return true;
  } catch (error) {
    const failure = error as { code?: string | number; stderr?: string };
    if (failure.code === 'ENOENT' || /unrecognized|invalid|unknown|usage/i.test(failure.stderr ?? '')) return false;
    throw new Error(`the file system of ${folder} could not be synced: ${(failure.stderr ?? String(error)).trim()}`, { cause: error });
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

/** True when `dir` or a folder below it holds a file; stops at the first one. */
async function holdsAnyFile(dir: string): Promise<boolean> {
  let entries: fs.Dirent[];
  try {
    entries = await fsp.readdir(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  for (const entry of entries) if (entry.isFile()) return true;
  for (const entry of entries) if (entry.isDirectory() && (await holdsAnyFile(path.join(dir, entry.name)))) return true;
  return false;
}

async function* walkFiles(directory: string): AsyncGenerator<string> {
  const entries = await fsp.readdir(directory, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) yield* walkFiles(full);
    else if (entry.isFile()) yield full;
  }
}
