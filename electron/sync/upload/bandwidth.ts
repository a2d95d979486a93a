/**
 * An optional upload bandwidth limit shared by every upload of the engine (a token bucket), and the
 * file sender that respects it and reports progress. Reading is paced, never buffered: memory stays
 * at two chunks per upload whatever the file size.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { FileChangedDuringUploadError } from '../api/api-errors.js';
import type { SentBytesHash } from './hash.js';

const MAX_CHUNK_BYTES = 256 * 1024;
const MIN_CHUNK_BYTES = 1024;
/**
 * Without a limit, a range of at least LARGE_RANGE_BYTES (a resumable piece, a large one-shot
 * upload) is read in chunks of LARGE_CHUNK_BYTES: each chunk costs a read, a hash update, a socket
 * write and a few promises whatever its size. A smaller file keeps 256 KiB chunks (finer progress).
 */
export const LARGE_CHUNK_BYTES = 1024 * 1024;
const LARGE_RANGE_BYTES = 16 * 1024 * 1024;

/** Waits `ms` (or until the signal aborts). Injected in tests to run on a fake clock. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

const realSleep: Sleep = (ms, signal) => delay(ms, undefined, signal ? { signal } : undefined);

export class BandwidthLimiter {
  private available = 0;
  private lastRefill: number;

  constructor(
    private bytesPerSecond: number,
    private readonly now: () => number = Date.now,
    private readonly sleep: Sleep = realSleep,
  ) {
    this.lastRefill = now();
  }

  /** 0 means unlimited. */
  setLimit(bytesPerSecond: number): void {
    this.refill();
    this.bytesPerSecond = Math.max(0, bytesPerSecond);
    this.available = Math.min(this.available, this.capacity);
  }

  /**
   * The bucket: a quarter second's worth. A larger burst (say a whole second after an idle spell)
   * makes the first second of every upload run at twice the limit, and the speed shown with it.
   */
  private get capacity(): number {
    return Math.max(1, this.bytesPerSecond / 4);
  }

  get limit(): number {
    return this.bytesPerSecond;
  }

  /** How much to read at once: a fraction of a second's worth, so pacing and progress stay smooth. */
  get chunkBytes(): number {
    if (this.bytesPerSecond === 0) return MAX_CHUNK_BYTES;
    return Math.min(MAX_CHUNK_BYTES, Math.max(MIN_CHUNK_BYTES, Math.floor(this.bytesPerSecond / 8)));
  }

  /**
   * Waits until `bytes` may be sent. They are taken at most one bucketful at a time and never on
   * credit: a chunk larger than the limit must not leave a debt that every
   * upload behind it (a 717-byte PDF included) has to wait out first.
   */
  async take(bytes: number, signal?: AbortSignal): Promise<void> {
    let owed = bytes;
    while (owed > 0 && this.bytesPerSecond > 0) {
      this.refill();
      const piece = Math.min(owed, this.capacity);
      if (this.available >= piece) {
        this.available -= piece;
        owed -= piece;
        continue;
      }
      await this.sleep(Math.max(5, Math.ceil(((piece - this.available) / this.bytesPerSecond) * 1000)), signal);
    }
  }

  private refill(): void {
    const now = this.now();
    if (this.bytesPerSecond > 0) this.available = Math.min(this.capacity, this.available + ((now - this.lastRefill) / 1000) * this.bytesPerSecond);
    this.lastRefill = now;
  }
}

export interface FileRangeOptions {
  filePath: string;
  start?: number;
  /** Exclusive: the bytes announced. A file that ends before it changed during the upload. */
  end: number;
  limiter?: BandwidthLimiter | undefined;
  /** Stops the reading; its reason is what sendFileRange rejects with. */
  signal?: AbortSignal | undefined;
  onBytes?: ((bytes: number) => void) | undefined;
  /** Awaited before the last chunk is handed out (it may throw to stop the upload short of its end). */
  beforeLastChunk?: (() => Promise<void>) | undefined;
  /** Fed each chunk as it is handed out, with its offset in the file (the file is hashed as it is sent). */
  hash?: SentBytesHash | undefined;
}

/** Where the bytes go (an HTTP request): it calls back once it has taken a chunk, after which the chunk's buffer is free. */
export interface ByteSink {
  write(chunk: Buffer, callback: (error?: Error | null) => void): boolean;
}

/** Buffers a range is read into in turn: one is on its way out while the next is read. */
const RANGE_BUFFERS = 2;

/**
 * Sends a range of a file to `sink`, paced by the limiter, each chunk hashed and reported as it
 * leaves. The chunks are read into the same two buffers in turn, a buffer refilled only once the
 * sink has taken what it held: a fresh buffer per chunk (2,048 of 1 MiB for a 2 GiB scan) costs
 * more CPU in allocation, page faults and garbage collection than the SHA-256 of its bytes.
 * Resolves once the sink has taken every byte; a file shorter than `end` is a change during the
 * upload.
 */
export async function sendFileRange(sink: ByteSink, options: FileRangeOptions): Promise<void> {
  const start = options.start ?? 0;
  const end = options.end;
  if (end <= start) {
    await options.beforeLastChunk?.();
    return;
  }
  const chunkBytes = Math.min(chunkBytesFor(options), end - start);
  const handle = await open(options.filePath, 'r');
  const buffers = Array.from({ length: RANGE_BUFFERS }, () => Buffer.allocUnsafeSlow(chunkBytes));
  /** Per buffer: settles once the sink has taken the chunk it holds. */
  const taken: Array<Promise<void> | undefined> = [];
  try {
    for (let offset = start, turn = 0; offset < end; turn = (turn + 1) % RANGE_BUFFERS) {
      options.signal?.throwIfAborted();
      const length = Math.min(chunkBytes, end - offset);
      if (options.limiter) await options.limiter.take(length, options.signal);
      await taken[turn];
      const chunk = await readExactly(handle, buffers[turn]!, length, offset);
      if (chunk.length < length) throw new FileChangedDuringUploadError(`the file has ${offset + chunk.length} bytes, ${end} were announced`);
      if (offset + length === end) await options.beforeLastChunk?.();
      options.hash?.add(offset, chunk);
      taken[turn] = written(sink, chunk, options.signal);
      options.onBytes?.(length);
      offset += length;
    }
    await Promise.all(taken);
  } finally {
    await handle.close();
  }
}

/** Hands `chunk` to the sink; settles when it has taken it (or the signal stops the wait). Never an unobserved rejection. */
export function written(sink: ByteSink, chunk: Buffer, signal?: AbortSignal): Promise<void> {
  const done = new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal!.reason as Error);
    signal?.addEventListener('abort', onAbort, { once: true });
    sink.write(chunk, (error) => {
      signal?.removeEventListener('abort', onAbort);
      if (error) reject(error);
      else resolve();
    });
  });
  done.catch(() => undefined);
  return done;
}

/** `length` bytes at `position` into `buffer` (fewer only at the end of the file). */
async function readExactly(handle: FileHandle, buffer: Buffer, length: number, position: number): Promise<Buffer> {
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

/** How much sendFileRange reads at once: the limiter's pace when there is a limit, else by the range's length. */
function chunkBytesFor(options: FileRangeOptions): number {
  if (options.limiter && options.limiter.limit > 0) return options.limiter.chunkBytes;
  const length = options.end - (options.start ?? 0);
  return length >= LARGE_RANGE_BYTES ? LARGE_CHUNK_BYTES : MAX_CHUNK_BYTES;
}
