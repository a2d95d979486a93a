/**
 * Renders thumbnails in the background after a commit. An upload never waits for its thumbnail
 * and never fails because of it: a file the renderer refuses (malformed, too large, too slow)
 * marks that version's thumbnail as failed and nothing else. Pending jobs are in the database,
 * so a restart resumes them.
 */
import type { DocumentVersionRecord, Store } from '../db/types.js';
import { isTransientStorageFault } from '../errors.js';
import type { ContentStorage } from '../storage/types.js';
import { wokenOrTimedOut } from './wake.js';

/** What server/thumbnails offers (renderThumbnail runs each job in a bounded worker). */
export interface ThumbnailRenderer {
  hasThumbnail(fileType: string): boolean;
  renderThumbnail(filePath: string, fileType: string, options: { size: number; timeoutMs: number }): Promise<Buffer>;
}

export interface ThumbnailJobOptions {
  size: number;
  timeoutMs: number;
  /** Renders at once; each is a worker with its own memory cap. */
  concurrency: number;
  /** A render the disk or database could not store (full, read-only, busy) is tried again after this long. */
  retryDelayMs: number;
}

export const DEFAULT_THUMBNAIL_OPTIONS: ThumbnailJobOptions = { size: 256, timeoutMs: 20_000, concurrency: 2, retryDelayMs: 30_000 };

function jobId(documentId: string, version: number): string {
  return `${documentId}/${version}`;
}

export class ThumbnailJobs {
  private readonly queue: DocumentVersionRecord[] = [];
  /** Versions queued or rendering, each with what waits for its render (see settled). */
  private readonly queued = new Map<string, Array<() => void>>();
  private running = 0;
  private closed = false;
  private idleWaiters: Array<() => void> = [];
  /** Renders that could not be stored for a passing reason (disk full): still pending, tried again later. */
  private deferred: DocumentVersionRecord[] = [];
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    private readonly storage: ContentStorage,
    private readonly renderer: ThumbnailRenderer | undefined,
    private readonly options: ThumbnailJobOptions = DEFAULT_THUMBNAIL_OPTIONS,
  ) {}

  supports(fileType: string): boolean {
    return this.renderer?.hasThumbnail(fileType) ?? false;
  }

  enqueue(version: DocumentVersionRecord): void {
    const id = jobId(version.documentId, version.version);
    if (this.closed || this.queued.has(id)) return;
    this.queued.set(id, []);
    this.queue.push(version);
    // A new commit means the disk took bytes again: the renders a full disk deferred go too.
    this.retryDeferred();
    this.pump();
  }

  /** Renders deferred by a full or read-only disk, queued again (on a timer, and after each new commit). */
  private retryDeferred(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const deferred = this.deferred;
    this.deferred = [];
    for (const version of deferred) {
      // Still leaving the queue from its failed attempt: it waits for the next retry.
      if (this.queued.has(jobId(version.documentId, version.version))) this.deferred.push(version);
      else this.enqueue(version);
    }
    if (this.deferred.length > 0) this.retryTimer = setTimeout(() => this.retryDeferred(), this.options.retryDelayMs).unref();
  }

  private defer(version: DocumentVersionRecord): void {
    if (this.closed) return;
    this.deferred.push(version);
    this.retryTimer ??= setTimeout(() => this.retryDeferred(), this.options.retryDelayMs);
    this.retryTimer.unref();
  }

  /** Queues the renders a previous run left pending. */
  async resumePending(): Promise<number> {
    const pending = await this.store.content.pendingThumbnails(1000);
    for (const version of pending) this.enqueue(version);
    return pending.length;
  }

  /**
   * Resolves when the render of this version is done here, or after `timeoutMs`, or at once when
   * this process is not rendering it: a thumbnail link asked for while its render runs waits for it.
   */
  settled(documentId: string, version: number, timeoutMs: number): Promise<void> {
    const waiters = this.queued.get(jobId(documentId, version));
    if (!waiters) return Promise.resolve();
    return wokenOrTimedOut(timeoutMs, (wake) => waiters.push(wake));
  }

  /** The version leaves the queue: whoever waits for its render hears it. */
  private finished(version: DocumentVersionRecord): void {
    const id = jobId(version.documentId, version.version);
    for (const wake of this.queued.get(id) ?? []) wake();
    this.queued.delete(id);
  }

  /** Resolves when nothing is queued or rendering (tests, shutdown). */
  async idle(): Promise<void> {
    if (this.running === 0 && this.queue.length === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.deferred = [];
    for (const version of this.queue.splice(0)) this.finished(version);
    await this.idle();
  }

  private pump(): void {
    while (this.running < this.options.concurrency && this.queue.length > 0) {
      const version = this.queue.shift()!;
      this.running += 1;
      void this.render(version).finally(() => {
        this.running -= 1;
        this.finished(version);
        this.pump();
        if (this.running === 0 && this.queue.length === 0) {
          const waiters = this.idleWaiters;
          this.idleWaiters = [];
          for (const resolve of waiters) resolve();
        }
      });
    }
  }

  private async render(version: DocumentVersionRecord): Promise<void> {
    if (!this.renderer) return;
    const key = `thumbnails/${version.documentId}/v${version.version}.png`;
    try {
      const png = await this.renderer.renderThumbnail(this.storage.localPath(version.contentKey), version.fileType, {
        size: this.options.size,
        timeoutMs: this.options.timeoutMs,
      });
      await this.storage.put(key, png);
      await this.store.content.setThumbnail(version.documentId, version.version, { status: 'ready', key, error: null });
    } catch (error) {
      if (isTransientStorageFault(error)) {
        // Not the file's fault: the version stays pending (a restart resumes it too) and is tried again.
        this.defer(version);
        return;
      }
      const reason = error instanceof Error ? `${(error as { reason?: string }).reason ?? error.name}: ${error.message}` : String(error);
      await this.store.content
        .setThumbnail(version.documentId, version.version, { status: 'failed', key: null, error: reason.slice(0, 500) })
        .catch(() => undefined);
    }
  }
}
