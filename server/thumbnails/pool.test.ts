/**
 * The warm thumbnail workers, with real worker threads and real files: workers are reused across
 * files, never more run than the pool allows, and a hostile or huge file fails only its own
 * thumbnail (a timeout or a heap overrun ends that worker, a fresh one renders the next file).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BroadcastChannel, Worker } from 'node:worker_threads';
import { PNG } from 'pngjs';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { garbageBytes, makeArchStl, makePdf, manyImagesPdf, pdfBomb } from '../../test/fixtures/scans.js';
import { startModuleWorker } from '../worker-threads.js';
import { ThumbnailError } from './errors.js';
import { RENDER_MEMORY_BUDGET_BYTES, renderThumbnail, thumbnailPool } from './index.js';
import { ThumbnailPool, type ThumbnailPoolOptions } from './pool.js';
import type { ThumbnailJob } from './protocol.js';

let dir: string;
const pools: ThumbnailPool[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'thumbnail-pool-'));
});
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function fixture(name: string, bytes: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

function job(filePath: string, fileType: string): ThumbnailJob {
  return { filePath, fileType, size: 64, maxInputBytes: 256 * 1024 * 1024 };
}

/** A pool of the real thumbnail workers with a heap limit of its own. */
function pool(options: Partial<ThumbnailPoolOptions> & { heapMb?: number } = {}): ThumbnailPool {
  const heapMb = options.heapMb ?? 256;
  const created = new ThumbnailPool({
    start: () => startModuleWorker(import.meta.url, 'worker', null, { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: 16 }),
    maxWorkers: 2,
    idleMs: 60_000,
    maxJobsPerWorker: 200,
    retireAboveHeapBytes: heapMb * 1024 * 1024 * 0.75,
    memoryBudgetBytes: RENDER_MEMORY_BUDGET_BYTES,
    ...options,
  });
  pools.push(created);
  return created;
}

async function failure(promise: Promise<unknown>): Promise<ThumbnailError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ThumbnailError);
  return error as ThumbnailError;
}

describe('warm thumbnail workers', () => {
  it('the server renders file after file in the same few workers, not a new thread per file', async () => {
    const before = thumbnailPool.started;
    const files = Array.from({ length: 8 }, (_, index) => fixture(`scan-${index}.stl`, makeArchStl({ triangles: 2_000 + index })));
    for (const file of files) expect(PNG.sync.read(await renderThumbnail(file, 'STL')).width).toBe(256);
    expect(thumbnailPool.started - before).toBeLessThanOrEqual(1);
    expect(thumbnailPool.size).toBeLessThanOrEqual(2);
  });

  it('renders at most maxWorkers files at once; the rest wait their turn and all get an answer', async () => {
    const workers = pool({ maxWorkers: 2 });
    const files = Array.from({ length: 6 }, (_, index) => fixture(`parallel-${index}.stl`, makeArchStl({ triangles: 3_000 + index })));
    let largest = 0;
    const sampler = setInterval(() => (largest = Math.max(largest, workers.size)), 5);
    const results = await Promise.all(files.map((file) => workers.run(job(file, 'STL'), 60_000)));
    clearInterval(sampler);
    expect(results.every((png) => PNG.sync.read(png).width === 64)).toBe(true);
    expect(largest).toBeLessThanOrEqual(2);
    expect(workers.started).toBeLessThanOrEqual(2);
  });

  it('a render past its time ends its worker; the next file renders in a fresh one', async () => {
    const workers = pool({ maxWorkers: 1 });
    const good = fixture('good.stl', makeArchStl({ triangles: 2_000 }));
    await workers.run(job(good, 'STL'), 60_000);
    const slow = fixture('slow.stl', makeArchStl({ triangles: 500_000 }));
    const started = performance.now();
    expect((await failure(workers.run(job(slow, 'STL'), 50))).reason).toBe('timeout');
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(workers.size).toBe(0);
    const startedBefore = workers.started;
    expect(PNG.sync.read(await workers.run(job(good, 'STL'), 60_000)).width).toBe(64);
    expect(workers.started - startedBefore).toBe(1);
  });

  // A heap of 12 MB holds the mesh renderer but not pdfjs: the PDF is the file too big to render here.
  it('a file that overruns the heap fails as too large, only its own thumbnail; the worker is replaced', async () => {
    const workers = pool({ maxWorkers: 1, heapMb: 12 });
    const good = fixture('before-and-after.stl', makeArchStl({ triangles: 2_000 }));
    await workers.run(job(good, 'STL'), 60_000);
    const hungry = fixture('hungry.pdf', makePdf('A letter too big for this heap'));
    const started = performance.now();
    const error = await failure(workers.run(job(hungry, 'PDF'), 60_000));
    expect(error.reason).toBe('too-large');
    expect(performance.now() - started).toBeLessThan(10_000);
    // The worker that ran out of heap is gone; the next file starts exactly one fresh worker. (Under
    // a heap this small the good file's worker may itself be retired after its job for its heap
    // size, so the count before the failure is not fixed.)
    expect(workers.size).toBe(0);
    const startedBefore = workers.started;
    expect(PNG.sync.read(await workers.run(job(good, 'STL'), 60_000)).width).toBe(64);
    expect(workers.started - startedBefore).toBe(1);
  });

  it('hostile files one after another in a warm worker each fail on their own, and a good file still renders after them', async () => {
    const workers = pool({ maxWorkers: 1 });
    const letter = fixture('letter.pdf', makePdf('Referral letter'));
    // Warm: the worker has rendered a PDF before (pdfjs compiled), as a server's workers have.
    expect(PNG.sync.read(await workers.run(job(letter, 'PDF'), 60_000)).width).toBe(64);
    const hostile: Array<[string, string, Buffer]> = [
      ['bomb.pdf', 'PDF', pdfBomb()],
      ['garbage.stl', 'STL', garbageBytes(10_000)],
      ['garbage.pdf', 'PDF', garbageBytes(10_000)],
    ];
    // Bounded by the render timeout (the server's 20 s) whatever the machine's load; a timeout is a failure like any other.
    for (const [name, type, bytes] of hostile) {
      const started = performance.now();
      await failure(workers.run(job(fixture(name, bytes), type), 20_000));
      expect(performance.now() - started).toBeLessThan(21_000);
    }
    expect(PNG.sync.read(await workers.run(job(letter, 'PDF'), 60_000)).width).toBe(64);
    expect(workers.started).toBe(1);
  });

  it('a worker is replaced after its number of jobs, and idle workers end', async () => {
    const workers = pool({ maxWorkers: 1, maxJobsPerWorker: 2, idleMs: 200 });
    const file = fixture('repeat.stl', makeArchStl({ triangles: 1_000 }));
    for (let round = 0; round < 4; round += 1) await workers.run(job(file, 'STL'), 60_000);
    expect(workers.started).toBe(2);
    const deadline = Date.now() + 5_000;
    while (workers.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(workers.size).toBe(0);
  });
});

describe('memory outside the workers\' heaps', () => {
  const MiB = 1024 * 1024;
  // The server's budget is larger; a smaller one is passed sooner by the same file, so the test stays short.
  const budget = 256 * MiB;
  // How far past the budget the process may get before the renders end: one sample's worth of
  // decoding plus a decoded image allocated at once (6000 × 6000 RGBA is 137 MiB).
  const margin = 192 * MiB;

  let images: string;
  beforeAll(() => {
    images = fixture('ten-images.pdf', manyImagesPdf());
  });

  /** Peak growth of this process's resident memory (the workers' included) while `work` runs. */
  async function peakGrowth<T>(work: () => Promise<T>): Promise<{ value: T; growth: number }> {
    const base = process.memoryUsage.rss();
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
    try {
      const value = await work();
      return { value, growth: Math.max(peak, process.memoryUsage.rss()) - base };
    } finally {
      clearInterval(sampler);
    }
  }

  it('a PDF of ten 6000 × 6000 images fails as too large before the server grows much past the budget; the next file renders', async () => {
    const workers = pool({ maxWorkers: 1, memoryBudgetBytes: budget });
    const { value: error, growth } = await peakGrowth(() => failure(workers.run(job(images, 'PDF'), 60_000)));
    expect(growth).toBeLessThan(budget + margin);
    expect(error.reason).toBe('too-large');
    expect(error.message).toMatch(/too much memory/);
    expect(workers.size).toBe(0);
    const scan = fixture('after-images.stl', makeArchStl({ triangles: 2_000 }));
    expect(PNG.sync.read(await workers.run(job(scan, 'STL'), 60_000)).width).toBe(64);
  });

  // Whether the scan is still rendering when the PDF passes the budget (both end, each is tried
  // again alone) or done before (the PDF ends alone) depends on the machine's load; either way the
  // PDF fails and the scan renders.
  it('of two renders at once, the one that passes the budget fails and the other still renders', async () => {
    // A budget the cold worker and the scan fit in alone.
    const pairBudget = 192 * MiB;
    const workers = pool({ maxWorkers: 2, memoryBudgetBytes: pairBudget });
    const scan = fixture('alongside.stl', makeArchStl({ triangles: 500_000 }));
    const { value, growth } = await peakGrowth(() =>
      Promise.all([failure(workers.run(job(images, 'PDF'), 60_000)), workers.run(job(scan, 'STL'), 60_000)]),
    );
    const [error, png] = value;
    expect(error.reason).toBe('too-large');
    expect(PNG.sync.read(png).width).toBe(64);
    expect(growth).toBeLessThan(pairBudget + margin);
  });

  // The same path made certain: a stand-in worker (a real thread) that holds real memory outside
  // its heap for one kind of job, and takes its time over the other, so both are rendering when the
  // budget is passed.
  it('two renders at once that pass the budget both end; each is tried again alone, and only the one that grows fails', async () => {
    const starts: string[] = [];
    const busy = new Set<number>();
    let together = 0;
    // The stand-ins tell when they start and answer a job on a channel of their own (their port carries replies only).
    const channel = new BroadcastChannel(HOLDING_CHANNEL);
    channel.onmessage = (event) => {
      const { started, answered, thread } = (event as { data: { started?: string; answered?: boolean; thread: number } }).data;
      if (answered) {
        busy.delete(thread);
        return;
      }
      starts.push(started!);
      busy.add(thread);
      if (starts.length > 2 && busy.size > 1) together += 1;
      // From the third start on, each runs alone: a SLOW job may answer now (never in the first round).
      if (starts.length > 2) channel.postMessage({ release: true });
    };
    onTestFinished(() => channel.close());
    const start = () => {
      const worker = new Worker(HOLDING_WORKER, { eval: true });
      const thread = worker.threadId;
      worker.once('exit', () => busy.delete(thread));
      return worker;
    };
    const workers = pool({ maxWorkers: 2, memoryBudgetBytes: 96 * MiB, start });
    const slow = workers.run({ filePath: 'slow', fileType: 'SLOW', size: 64, maxInputBytes: 1 }, 30_000);
    const grows = failure(workers.run({ filePath: 'grows', fileType: 'GROWS', size: 64, maxInputBytes: 1 }, 30_000));
    const error = await grows;
    expect(error.reason).toBe('too-large');
    expect(error.message).toMatch(/too much memory/);
    expect(Buffer.from(await slow).toString()).toBe('slow rendered');
    // Both started together, then each again alone, in the order they were first given out.
    expect(starts.slice(0, 2).sort()).toEqual(['grows', 'slow']);
    expect(starts.slice(2)).toEqual(['slow', 'grows']);
    expect(together).toBe(0);
  }, 20_000);
});

/**
 * A stand-in thumbnail worker: a GROWS job fills 64 MiB outside its heap every 50 ms and never
 * answers; a SLOW job answers 100 ms after the test releases it (once jobs run alone), however
 * long the first round takes on a busy machine. It tells HOLDING_CHANNEL when it starts a job and
 * when it answers one, so the test sees what ran at once.
 */
const HOLDING_CHANNEL = 'thumbnail-pool-test';
const HOLDING_WORKER = `
const { parentPort, threadId, BroadcastChannel } = require('node:worker_threads');
const channel = new BroadcastChannel(${JSON.stringify(HOLDING_CHANNEL)});
const held = [];
let release;
const released = new Promise((resolve) => (release = resolve));
channel.onmessage = (event) => {
  if (event.data.release) release();
};
parentPort.on('message', (job) => {
  channel.postMessage({ started: job.filePath, thread: threadId });
  if (job.fileType === 'GROWS') {
    setInterval(() => held.push(Buffer.alloc(64 * 1024 * 1024, 1)), 50);
    return;
  }
  void released.then(() => setTimeout(() => {
    channel.postMessage({ answered: true, thread: threadId });
    parentPort.postMessage({ ok: true, png: Buffer.from('slow rendered'), heapUsed: 0 });
  }, 100));
});
`;
