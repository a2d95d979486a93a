import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BandwidthLimiter, fileChunks, LARGE_CHUNK_BYTES } from './bandwidth.js';

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

describe('fileChunks', () => {
  let folder: string | undefined;
  afterEach(() => {
    if (folder) rmSync(folder, { recursive: true, force: true });
    folder = undefined;
  });

  it('yields every byte of a file under a limit, in limit-sized chunks, reporting each', async () => {
    folder = mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bandwidth-'));
    const file = path.join(folder, 'scan.stl');
    writeFileSync(file, Buffer.alloc(100_000, 3));
    const { limiter } = fakeLimiter(80_000);
    const sizes: number[] = [];
    let reported = 0;
    for await (const chunk of fileChunks(file, { limiter, onBytes: (bytes) => (reported += bytes) })) sizes.push(chunk.length);
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(100_000);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(10_000);
    expect(reported).toBe(100_000);
  });

  it('reads a large range without a limit in 1 MiB chunks, a small file in 256 KiB ones, every byte once', async () => {
    folder = mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bandwidth-'));
    const file = path.join(folder, 'arch.stl');
    const size = 17 * 1024 * 1024 + 5;
    writeFileSync(file, Buffer.alloc(size, 7));
    const read = async (options: { start?: number; end: number }) => {
      const sizes: number[] = [];
      for await (const chunk of fileChunks(file, { ...options, limiter: new BandwidthLimiter(0) })) sizes.push(chunk.length);
      return sizes;
    };
    const large = await read({ end: size });
    expect(large.reduce((sum, length) => sum + length, 0)).toBe(size);
    expect(Math.max(...large)).toBe(LARGE_CHUNK_BYTES);
    const small = await read({ start: size - 600_000, end: size });
    expect(small.reduce((sum, length) => sum + length, 0)).toBe(600_000);
    expect(Math.max(...small)).toBe(256 * 1024);
  });

  it('yields nothing for an empty range (an empty file)', async () => {
    folder = mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bandwidth-'));
    const file = path.join(folder, 'empty.stl');
    writeFileSync(file, '');
    const chunks: Buffer[] = [];
    for await (const chunk of fileChunks(file, { end: 0 })) chunks.push(chunk);
    expect(chunks).toEqual([]);
  });
});
