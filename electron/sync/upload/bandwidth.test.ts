import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileChangedDuringUploadError } from '../api/api-errors.js';
import { BandwidthLimiter, LARGE_CHUNK_BYTES, sendFileRange, type ByteSink } from './bandwidth.js';
import { SentBytesHash } from './hash.js';

/** A limiter on a fake clock: sleeping moves the clock, so seconds of pacing take no time. */
function fakeLimiter(bytesPerSecond: number) {
  const clock = { now: 1_000_000, slept: 0 };
  const limiter = new BandwidthLimiter(
    bytesPerSecond,
    () => clock.now,
    async (ms) => {
      clock.now += ms;
      clock.slept += ms;
    },
  );
  const timed = async (bytes: number): Promise<number> => {
    const before = clock.now;
    await limiter.take(bytes);
    return clock.now - before;
  };
  return { limiter, clock, timed };
}

describe('BandwidthLimiter', () => {
  it('lets a small file through at once when the bucket has room', async () => {
    const { clock, timed } = fakeLimiter(400 * 1024);
    clock.now += 1000; // a second idle: the bucket is full
    expect(await timed(717)).toBe(0);
  });

  it('paces a large upload at the limit', async () => {
    const { timed } = fakeLimiter(100_000);
    let elapsed = 0;
    for (let sent = 0; sent < 1_000_000; sent += 12_500) elapsed += await timed(12_500);
    expect(elapsed).toBeGreaterThanOrEqual(9_900);
    expect(elapsed).toBeLessThanOrEqual(10_200);
  });

  it('leaves no debt behind a chunk larger than the limit: a 717-byte file after it waits milliseconds, not seconds', async () => {
    const { timed } = fakeLimiter(100_000);
    expect(await timed(262_144)).toBeGreaterThanOrEqual(2_600); // 2.6 s of bytes at 100 kB/s
    expect(await timed(717)).toBeLessThanOrEqual(10);
  });

  it('applies a new limit to a take that is already waiting, and 0 lifts it', async () => {
    const { limiter, clock } = fakeLimiter(1_000);
    const waiting = limiter.take(50_000);
    limiter.setLimit(0);
    await waiting;
    expect(clock.slept).toBeLessThanOrEqual(1_000);
  });

  it('reads in pieces of a fraction of a second at low limits (smooth progress), whole chunks without a limit', async () => {
    expect(new BandwidthLimiter(0).chunkBytes).toBe(256 * 1024);
    expect(new BandwidthLimiter(80_000).chunkBytes).toBe(10_000);
    expect(new BandwidthLimiter(100).chunkBytes).toBe(1024);
  });
});

/**
 * A sink that takes each chunk late (a few milliseconds on) and copies it only then, as a slow
 * socket does: a buffer read into again before the sink called back would show as wrong bytes.
 */
function lateSink() {
  const sizes: number[] = [];
  const copies: Buffer[] = [];
  const sink: ByteSink = {
    write(chunk, callback) {
      sizes.push(chunk.length);
      setTimeout(() => {
        copies.push(Buffer.from(chunk));
        callback();
      }, 5);
      return false;
    },
  };
  return { sink, sizes, bytes: () => Buffer.concat(copies) };
}

describe('sendFileRange', () => {
  let folder: string | undefined;
  afterEach(() => {
    if (folder) rmSync(folder, { recursive: true, force: true });
    folder = undefined;
  });
  const scanFile = (name: string, bytes: Buffer) => {
    folder ??= mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bandwidth-'));
    const file = path.join(folder, name);
    writeFileSync(file, bytes);
    return file;
  };

  it('sends every byte of a file under a limit, in limit-sized chunks, reporting each', async () => {
    const bytes = randomBytes(100_000);
    const file = scanFile('scan.stl', bytes);
    const { limiter } = fakeLimiter(80_000);
    const sink = lateSink();
    let reported = 0;
    await sendFileRange(sink.sink, { filePath: file, end: bytes.length, limiter, onBytes: (count) => (reported += count) });
    expect(sink.bytes().equals(bytes)).toBe(true);
    expect(Math.max(...sink.sizes)).toBeLessThanOrEqual(10_000);
    expect(reported).toBe(100_000);
  });

  it('sends a large range without a limit in 1 MiB chunks, a small one in 256 KiB ones, every byte once and as on disk, hashed as sent', async () => {
    const size = 17 * 1024 * 1024 + 5;
    const bytes = randomBytes(size);
    const file = scanFile('arch.stl', bytes);
    const large = lateSink();
    const hash = new SentBytesHash(size);
    await sendFileRange(large.sink, { filePath: file, end: size, limiter: new BandwidthLimiter(0), hash });
    expect(large.bytes().equals(bytes)).toBe(true);
    expect(Math.max(...large.sizes)).toBe(LARGE_CHUNK_BYTES);
    expect(hash.digest()).toBe(createHash('sha256').update(bytes).digest('hex'));
    const small = lateSink();
    await sendFileRange(small.sink, { filePath: file, start: size - 600_000, end: size });
    expect(small.bytes().equals(bytes.subarray(size - 600_000))).toBe(true);
    expect(Math.max(...small.sizes)).toBe(256 * 1024);
  });

  it('sends nothing for an empty range (an empty file)', async () => {
    const file = scanFile('empty.stl', Buffer.alloc(0));
    const sink = lateSink();
    await sendFileRange(sink.sink, { filePath: file, end: 0 });
    expect(sink.sizes).toEqual([]);
  });

  it('fails as a change during the upload when the file ends before the bytes announced, and runs the last check before the last chunk', async () => {
    const file = scanFile('short.stl', randomBytes(300_000));
    await expect(sendFileRange(lateSink().sink, { filePath: file, end: 400_000 })).rejects.toBeInstanceOf(FileChangedDuringUploadError);
    const sink = lateSink();
    const refused = sendFileRange(sink.sink, {
      filePath: file,
      end: 300_000,
      beforeLastChunk: () => Promise.reject(new FileChangedDuringUploadError('changed')),
    });
    await expect(refused).rejects.toBeInstanceOf(FileChangedDuringUploadError);
    // Everything but the last chunk left; the last one never did.
    expect(sink.sizes.reduce((sum, size) => sum + size, 0)).toBe(256 * 1024);
  });
});
