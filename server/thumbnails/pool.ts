/**
 * A few warm thumbnail workers instead of a new thread per file (starting one costs ~100 ms of CPU,
 * mostly compiling the parsers). Each worker still renders one file at a time under its heap limit
 * and a wall-clock timeout: a render that runs out of heap or time takes its worker with it (the
 * worker is terminated, the file fails only its thumbnail) and a fresh worker takes its place on
 * demand. A worker is also retired after a number of jobs or when its heap stays large after one,
 * and idle workers end after a while, so nothing a file left behind outlives a bounded number of
 * renders and an idle server holds no render memory.
 *
 * Memory outside the workers' heaps (ArrayBuffers, canvases, pdfjs's decoded images) is watched
 * as the process's resident memory less what the main thread's own heap and buffers hold (so
 * uploads' buffers and requests do not count against a render): while anything renders it is
 * sampled every MEMORY_SAMPLE_MS, against its level when rendering began (no render running
 * before). Growth past
 * `memoryBudgetBytes` ends the rendering workers. One render alone is the cause: it fails as
 * too-large. Of several at once the cause cannot be told, so all end and each is tried again
 * alone, in the order they started (nothing else renders meanwhile): the one that passes the
 * budget alone fails as too-large, the others render. Nothing new starts until the ended workers
 * are gone, so the next baseline is taken without their memory.
 */
import type { Worker } from 'node:worker_threads';
import { isThumbnailFailureReason, ThumbnailError } from './errors.js';
import type { ThumbnailJob, WorkerJob, WorkerReply } from './protocol.js';

export interface ThumbnailPoolOptions {
  /** Starts a worker (its heap limit set); the pool sends it jobs and reads one reply per job. */
  start: () => Worker;
  /** Workers at most, rendering at once; further jobs wait their turn. */
  maxWorkers: number;
  /** A worker idle this long ends. */
  idleMs: number;
  /** A worker is retired after this many jobs. */
  maxJobsPerWorker: number;
  /** A worker whose heap is above this after a job is retired. */
  retireAboveHeapBytes: number;
  /** Growth of the process's resident memory while rendering that ends the render(s) (see above). */
  memoryBudgetBytes: number;
}

interface Task {
  job: ThumbnailJob;
  timeoutMs: number;
  resolve: (png: Buffer) => void;
  reject: (error: ThumbnailError) => void;
  /** Ended with others when their memory passed the budget together: runs again with no other render. */
  alone: boolean;
}

interface PooledWorker {
  worker: Worker;
  jobs: number;
  task: Task | undefined;
  timer: NodeJS.Timeout | undefined;
  idleTimer: NodeJS.Timeout | undefined;
  gone: boolean;
  /** Where this worker's jobs that come with their content find it (see WorkerJob); grown to the largest content so far, up to SHARED_KEPT_BYTES. */
  shared: SharedArrayBuffer | undefined;
}

export class ThumbnailPool {
  private readonly idle: PooledWorker[] = [];
  private readonly waiting: Task[] = [];
  private alive = 0;
  /** Workers rendering now, in the order their jobs started. */
  private readonly rendering: PooledWorker[] = [];
  /** Resident memory when rendering began, and the timer sampling it while anything renders. */
  private baseline = 0;
  private watch: NodeJS.Timeout | undefined;
  /** Workers ended for memory are still going: nothing starts until their memory is returned. */
  private settling = false;
  /** Workers started so far (for tests and diagnostics). */
  started = 0;

  constructor(private readonly options: ThumbnailPoolOptions) {}

  /** Renders the job in a worker; settles within its timeout once a worker takes it. Rejects only with ThumbnailError. */
  run(job: ThumbnailJob, timeoutMs: number): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      this.waiting.push({ job, timeoutMs, resolve, reject, alone: false });
      this.pump();
    });
  }

  /** Workers alive now (idle or rendering). */
  get size(): number {
    return this.alive;
  }

  /** Ends every idle worker (a rendering one ends when its job does). */
  async close(): Promise<void> {
    const idle = this.idle.splice(0);
    await Promise.all(idle.map((entry) => this.retire(entry)));
  }

  private pump(): void {
    while (this.waiting.length > 0) {
      if (this.settling || this.rendering.some((entry) => entry.task?.alone)) return;
      if (this.waiting[0]!.alone && this.rendering.length > 0) return;
      const warm = this.idle.pop();
      if (warm) {
        this.dispatch(warm, this.waiting.shift()!);
        continue;
      }
      if (this.alive >= this.options.maxWorkers) return;
      const task = this.waiting.shift()!;
      let entry: PooledWorker;
      try {
        entry = this.spawn();
      } catch (error) {
        task.reject(new ThumbnailError('malformed', `could not start the thumbnail worker (${String(error)})`));
        continue;
      }
      this.dispatch(entry, task);
    }
  }

  private spawn(): PooledWorker {
    const worker = this.options.start();
    this.alive += 1;
    this.started += 1;
    const entry: PooledWorker = { worker, jobs: 0, task: undefined, timer: undefined, idleTimer: undefined, gone: false, shared: undefined };
    worker.on('message', (reply: WorkerReply) => this.replied(entry, reply));
    worker.on('error', (error: Error) => this.failed(entry, fromWorkerError(error)));
    worker.on('exit', (code) => this.failed(entry, new ThumbnailError('malformed', `the thumbnail worker exited (${code}) without an answer`)));
    return entry;
  }

  private dispatch(entry: PooledWorker, task: Task): void {
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    entry.task = task;
    entry.jobs += 1;
    if (this.rendering.length === 0) {
      this.baseline = outsideMainThread();
      this.watch = setInterval(() => this.checkMemory(), MEMORY_SAMPLE_MS).unref();
    }
    this.rendering.push(entry);
    entry.worker.ref();
    entry.timer = setTimeout(() => this.failed(entry, new ThumbnailError('timeout', `rendering took longer than ${task.timeoutMs} ms`)), task.timeoutMs);
    entry.worker.postMessage(workerJob(entry, task.job));
  }

  private replied(entry: PooledWorker, reply: WorkerReply): void {
    const task = this.finish(entry);
    if (!task) return;
    if (reply.ok) task.resolve(Buffer.from(reply.png.buffer, reply.png.byteOffset, reply.png.byteLength));
    else task.reject(new ThumbnailError(isThumbnailFailureReason(reply.reason) ? reply.reason : 'malformed', reply.message));
    if (entry.jobs >= this.options.maxJobsPerWorker || reply.heapUsed > this.options.retireAboveHeapBytes) {
      void this.retire(entry);
    } else {
      entry.worker.unref();
      entry.idleTimer = setTimeout(() => {
        const index = this.idle.indexOf(entry);
        if (index >= 0) this.idle.splice(index, 1);
        void this.retire(entry);
      }, this.options.idleMs);
      entry.idleTimer.unref();
      this.idle.push(entry);
    }
    this.pump();
  }

  /** The render failed with its worker (timeout, heap, crash): the worker goes, the task fails. */
  private failed(entry: PooledWorker, error: ThumbnailError): void {
    const task = this.finish(entry);
    const index = this.idle.indexOf(entry);
    if (index >= 0) this.idle.splice(index, 1);
    void this.retire(entry);
    task?.reject(error);
    this.pump();
  }

  private finish(entry: PooledWorker): Task | undefined {
    const task = entry.task;
    entry.task = undefined;
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = undefined;
    const index = this.rendering.indexOf(entry);
    if (index >= 0) this.rendering.splice(index, 1);
    if (this.rendering.length === 0 && this.watch) {
      clearInterval(this.watch);
      this.watch = undefined;
    }
    return task;
  }

  /** Ends the rendering workers once the process has grown past the budget since rendering began. */
  private checkMemory(): void {
    const growth = outsideMainThread() - this.baseline;
    if (growth <= this.options.memoryBudgetBytes || this.rendering.length === 0) return;
    const ended = [...this.rendering];
    const tasks = ended.map((entry) => this.finish(entry)).filter((task) => task !== undefined);
    const budgetMiB = Math.round(this.options.memoryBudgetBytes / (1024 * 1024));
    if (tasks.length === 1) {
      tasks[0]!.reject(new ThumbnailError('too-large', `rendering used too much memory (the server grew by more than ${budgetMiB} MiB)`));
    } else {
      this.waiting.unshift(...tasks.map((task) => ({ ...task, alone: true })));
    }
    this.settling = true;
    void Promise.all(ended.map((entry) => this.retire(entry))).finally(() => {
      this.settling = false;
      this.pump();
    });
  }

  private async retire(entry: PooledWorker): Promise<void> {
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    if (entry.gone) return;
    entry.gone = true;
    this.alive -= 1;
    await entry.worker.terminate();
  }
}

/** The process's resident memory less the main thread's heap and the buffers it holds: the workers' share, and native memory. */
function outsideMainThread(): number {
  const usage = process.memoryUsage();
  return usage.rss - usage.heapTotal - usage.external;
}

/** How often resident memory is sampled while anything renders: a render grows by tens of MB at most between samples. */
const MEMORY_SAMPLE_MS = 150;

/** A worker keeps a shared buffer at most this large between jobs; larger content gets one for its job only. */
const SHARED_KEPT_BYTES = 1024 * 1024;

/**
 * The job as its worker receives it: content is copied into the worker's shared buffer (it renders
 * one job at a time, so the buffer is free), and the message carries only the buffer's handle.
 */
function workerJob(entry: PooledWorker, job: ThumbnailJob): WorkerJob {
  if (!('content' in job)) return job;
  const { content, ...rest } = job;
  const length = content.reduce((sum, chunk) => sum + chunk.length, 0);
  let shared = entry.shared;
  if (!shared || shared.byteLength < length) {
    shared = new SharedArrayBuffer(length);
    if (length <= SHARED_KEPT_BYTES) entry.shared = shared;
  }
  const target = new Uint8Array(shared);
  let offset = 0;
  for (const chunk of content) {
    target.set(chunk, offset);
    offset += chunk.length;
  }
  return { ...rest, shared, length };
}

/** An uncaught error in the worker; running out of heap means the file was too big to render. */
function fromWorkerError(error: Error): ThumbnailError {
  const code = (error as Error & { code?: unknown }).code;
  if (code === 'ERR_WORKER_OUT_OF_MEMORY') return new ThumbnailError('too-large', 'rendering needed more memory than a thumbnail may use');
  return new ThumbnailError('malformed', `the thumbnail worker failed (${error.message})`);
}
