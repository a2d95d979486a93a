/**
 * An optional upload bandwidth limit shared by every upload of the engine (a token bucket), and the
 * file reader that respects it and reports progress. Reading is paced, never buffered: memory stays
 * at one chunk per upload whatever the file size.
 */
import { createReadStream } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

export class BandwidthLimiter {
  private available = 0;
  private lastRefill: number;

  constructor(
    private bytesPerSecond: number,
    private readonly now: () => number = Date.now,
  ) {
    this.lastRefill = now();
  }

  /** 0 means unlimited. */
  setLimit(bytesPerSecond: number): void {
    this.bytesPerSecond = Math.max(0, bytesPerSecond);
  }

  get limit(): number {
    return this.bytesPerSecond;
  }

  /** Waits until `bytes` may be sent. */
  async take(bytes: number, signal?: AbortSignal): Promise<void> {
    while (this.bytesPerSecond > 0) {
      this.refill();
      if (this.available >= bytes || this.available >= this.bytesPerSecond) {
        this.available -= bytes;
        return;
      }
      const missing = Math.min(bytes, this.bytesPerSecond) - this.available;
      await delay(Math.max(5, Math.ceil((missing / this.bytesPerSecond) * 1000)), undefined, signal ? { signal } : undefined);
    }
  }

  private refill(): void {
    const now = this.now();
    // At most one second of burst, so a long idle period does not allow a flood.
    this.available = Math.min(this.bytesPerSecond, this.available + ((now - this.lastRefill) / 1000) * this.bytesPerSecond);
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
}

const CHUNK_BYTES = 256 * 1024;

/** The bytes of a file from disk, paced by the limiter, reporting each chunk as it leaves. */
export async function* fileChunks(filePath: string, options: FileChunksOptions = {}): AsyncGenerator<Buffer> {
  const stream = createReadStream(filePath, {
    start: options.start ?? 0,
    ...(options.end !== undefined ? { end: options.end - 1 } : {}),
    highWaterMark: CHUNK_BYTES,
  });
  try {
    for await (const chunk of stream) {
      const buffer = chunk as Buffer;
      options.signal?.throwIfAborted();
      if (options.limiter) await options.limiter.take(buffer.length, options.signal);
      yield buffer;
      options.onBytes?.(buffer.length);
    }
  } finally {
    stream.destroy();
  }
}
