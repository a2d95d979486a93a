/**
 * An optional upload bandwidth limit shared by every upload of the engine (a token bucket), and the
 * file reader that respects it and reports progress. Reading is paced, never buffered: memory stays
 * at one chunk per upload whatever the file size.
 */
import { createReadStream } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import type { SentBytesHash } from './hash.js';

const MAX_CHUNK_BYTES = 256 * 1024;
const MIN_CHUNK_BYTES = 1024;
/**
 * Without a limit, a range of at least LARGE_RANGE_BYTES (a resumable piece, a large one-shot
 * upload) is read in chunks of LARGE_CHUNK_BYTES: each chunk costs a read, a hash update, a socket
 * write and a few promises whatever its size, and a 1 MiB chunk takes about half the CPU per byte
 * of a 256 KiB one. A smaller file keeps 256 KiB chunks (finer progress).
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

export interface FileChunksOptions {
  start?: number;
  /** Exclusive. */
  end?: number;
  limiter?: BandwidthLimiter | undefined;
  signal?: AbortSignal | undefined;
  onBytes?: ((bytes: number) => void) | undefined;
  /** Awaited before the last chunk is handed out (it may throw to stop the upload short of its end). */
  beforeLastChunk?: (() => Promise<void>) | undefined;
  /** Fed each chunk as it is handed out, with its offset in the file (the file is hashed as it is sent). */
  hash?: SentBytesHash | undefined;
}

/** The bytes of a file from disk, paced by the limiter, reporting each chunk as it leaves. */
export async function* fileChunks(filePath: string, options: FileChunksOptions = {}): AsyncGenerator<Buffer> {
  // An empty range is no bytes (a read stream's `end` is inclusive: end 0 would be one byte, -1 an error).
  if (options.end !== undefined && options.end <= (options.start ?? 0)) {
    await options.beforeLastChunk?.();
    return;
  }
  const stream = createReadStream(filePath, {
    start: options.start ?? 0,
    ...(options.end !== undefined ? { end: options.end - 1 } : {}),
    highWaterMark: chunkBytesFor(options),
  });
  // With beforeLastChunk, each chunk is held back until the next one is read (or the end is seen).
  let held: Buffer | undefined;
  let offset = options.start ?? 0;
  const handOut = (buffer: Buffer): Buffer => {
    options.hash?.add(offset, buffer);
    offset += buffer.length;
    return buffer;
  };
  try {
    for await (const chunk of stream) {
      const buffer = chunk as Buffer;
      options.signal?.throwIfAborted();
      if (options.limiter) await options.limiter.take(buffer.length, options.signal);
      if (!options.beforeLastChunk) {
        yield handOut(buffer);
        options.onBytes?.(buffer.length);
        continue;
      }
      if (held) {
        yield handOut(held);
        options.onBytes?.(held.length);
      }
      held = buffer;
    }
    if (held) {
      await options.beforeLastChunk?.();
      yield handOut(held);
      options.onBytes?.(held.length);
    }
  } finally {
    stream.destroy();
  }
}

/** How much fileChunks reads at once: the limiter's pace when there is a limit, else by the range's length. */
function chunkBytesFor(options: FileChunksOptions): number {
  if (options.limiter && options.limiter.limit > 0) return options.limiter.chunkBytes;
  const length = (options.end ?? Number.POSITIVE_INFINITY) - (options.start ?? 0);
  return length >= LARGE_RANGE_BYTES ? LARGE_CHUNK_BYTES : MAX_CHUNK_BYTES;
}
