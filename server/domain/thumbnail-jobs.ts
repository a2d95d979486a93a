/**
 * Renders thumbnails in the background after a commit. An upload never waits for its thumbnail
 * and never fails because of it: a file the renderer refuses (malformed, too large, too slow)
 * marks that version's thumbnail as failed and nothing else. Pending jobs are in the database,
 * so a restart resumes them. Where several instances share the database (PostgreSQL), each render
 * is leased, and the live instances look now and then for versions still pending after a lease
 * would have ended (their instance died): whoever takes the lease renders them.
 *
 * The renderer reads a file it owns: a private scratch file, removed when the render ends. On the
 * local disk it is a hard link to the stored object (no byte copied: stored objects never change in
 * place, and the link keeps the bytes while the render runs, even if the object is removed); from
 * an object store, or where no link can be made, the content is streamed into it. A small file
 * just received is rendered from the bytes its upload kept (ReceivedContent.content): the same bytes
 * that were hashed and stored, and no file to link, open or remove.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { DocumentVersionRecord, Store, WorkLeases } from '../db/types.js';
import { PRIVATE_FILE, privateDirectory } from '../private-files.js';
import { isTransientStorageFault } from '../errors.js';
import type { ContentStorage } from '../storage/types.js';
import { wokenOrTimedOut } from './wake.js';

/** What server/thumbnails offers (renderThumbnail runs each job in a bounded worker). */
export interface ThumbnailRenderer {
  hasThumbnail(fileType: string): boolean;
  /** `source`: the file to read, or the content itself (the chunks it arrived in). */
  renderThumbnail(source: string | readonly Uint8Array[], fileType: string, options: { size: number; timeoutMs: number }): Promise<Buffer>;
}

export interface ThumbnailJobOptions {
  size: number;
  timeoutMs: number;
  /** Renders at once; each is a worker with its own memory cap. */
  concurrency: number;
  /** A render the disk or database could not store (full, read-only, busy) is tried again after this long. */
  retryDelayMs: number;
  /** Where each render's copy of the content is written (private; default: a folder in the system's temp directory). */
  scratchDir?: string;
  /**
   * Where several instances share the database: how often an instance looks for versions a dead
   * instance left pending (still pending a whole render lease after their upload).
   */
  sweepIntervalMs?: number;
}

/**
 * A version whose render was started by this many processes that died before it ended (the render
 * took the server down: a parser that aborts the process, the machine out of memory) is given up.
 */
const MAX_RENDERS_LOST = 2;
/** Why a version's thumbnail was given up, as its thumbnail error says. */
export const RENDER_STOPPED_SERVER = `crashed: rendering this file stopped the server ${MAX_RENDERS_LOST} times; it is not tried again`;

/** Content larger than this is not copied for a render: the renderer refuses it unread (server/thumbnails). */
export const RENDER_INPUT_LIMIT = 256 * 1024 * 1024;
/** A scratch file this old belongs to no render still running (a crash left it). */
const SCRATCH_MAX_AGE_MS = 3_600_000;
const DEFAULT_SWEEP_INTERVAL_MS = 60_000;
/** The oldest pending versions one sweep looks at (an index range of the pending ones; the next sweep reads it again). */
const SWEEP_BATCH = 100;
/**
 * The received bytes kept for queued renders, all together at most this many: past it, a render
 * reads the stored object (a burst of uploads holds no more memory than this for its thumbnails).
 */
export const HELD_CONTENT_BYTES = 32 * 1024 * 1024;

export const DEFAULT_THUMBNAIL_OPTIONS: ThumbnailJobOptions = { size: 256, timeoutMs: 20_000, concurrency: 2, retryDelayMs: 30_000, sweepIntervalMs: DEFAULT_SWEEP_INTERVAL_MS };

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
  private sweepTimer: NodeJS.Timeout | undefined;
  /** Content received with queued versions (see enqueue), by job, and how many bytes that is. */
  private readonly held = new Map<string, { chunks: readonly Uint8Array[]; bytes: number }>();
  private heldBytes = 0;
  /** This process, as the renders it starts are counted (a render started again here counts once). */
  private readonly process = randomUUID();

  constructor(
    private readonly store: Store,
    private readonly storage: ContentStorage,
    private readonly renderer: ThumbnailRenderer | undefined,
    private readonly options: ThumbnailJobOptions = DEFAULT_THUMBNAIL_OPTIONS,
    /** Where several instances share the database and content (PostgreSQL): a render is done by the instance that takes its lease. */
    private readonly shared?: WorkLeases,
  ) {}

  supports(fileType: string): boolean {
    return this.renderer?.hasThumbnail(fileType) ?? false;
  }

  /**
   * Queues the version's render. `content`: its bytes, where the caller holds them (a small file
   * just received); the render reads them instead of the stored object, while they fit
   * HELD_CONTENT_BYTES with the others held.
   */
  enqueue(version: DocumentVersionRecord, content?: readonly Uint8Array[]): void {
    if (!this.add(version)) return;
    const bytes = content?.reduce((sum, chunk) => sum + chunk.length, 0);
    if (content && bytes === version.fileSize && this.heldBytes + bytes <= HELD_CONTENT_BYTES) {
      this.held.set(jobId(version.documentId, version.version), { chunks: content, bytes });
      this.heldBytes += bytes;
    }
    // A new commit means the disk took bytes again: the renders a full disk deferred go too.
    this.retryDeferred();
    this.pump();
  }

  /** Queues the version unless it is queued or rendering here already; false when it was not added. */
  private add(version: DocumentVersionRecord): boolean {
    const id = jobId(version.documentId, version.version);
    if (this.closed || this.queued.has(id)) return false;
    this.queued.set(id, []);
    this.queue.push(version);
    return true;
  }

  /** How long a render's lease lasts: held past the render, so three render timeouts. */
  private get leaseMs(): number {
    return this.options.timeoutMs * 3;
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

  private get scratchDir(): string {
    return this.options.scratchDir ?? path.join(os.tmpdir(), 'patient-docs-render');
  }

  /** Queues the renders a previous run left pending (and removes the scratch files a crash left). */
  async resumePending(): Promise<number> {
    const cutoff = Date.now() - SCRATCH_MAX_AGE_MS;
    for (const name of await fsp.readdir(this.scratchDir).catch(() => [] as string[])) {
      const file = path.join(this.scratchDir, name);
      const stat = await fsp.stat(file).catch(() => undefined);
      if (stat?.isFile() && stat.mtimeMs <= cutoff) await fsp.rm(file, { force: true });
    }
    const pending = await this.store.content.pendingThumbnails(1000);
    for (const version of pending) this.enqueue(version);
    if (this.shared && !this.closed && !this.sweepTimer) {
      this.sweepTimer = setInterval(() => void this.sweepAbandoned().catch(() => undefined), this.options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS);
      this.sweepTimer.unref();
    }
    return pending.length;
  }

  /**
   * Several instances on one database: queues the versions still pending a whole lease after their
   * upload (the instance that committed them died, or never got to them). Each is rendered by the
   * instance that takes its lease, so by one of them; a live holder's lease keeps the others off.
   * Returns how many it queued here.
   */
  async sweepAbandoned(): Promise<number> {
    if (!this.shared || this.closed || !this.renderer) return 0;
    const cutoff = Date.now() - this.leaseMs;
    let queued = 0;
    // Oldest first: the versions past the cutoff are a prefix of the list.
    for (const version of await this.store.content.pendingThumbnails(SWEEP_BATCH)) {
      if (Date.parse(version.uploadedAt) > cutoff) break;
      if (this.add(version)) queued += 1;
    }
    if (queued > 0) this.pump();
    return queued;
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
    this.takeHeld(id);
    for (const wake of this.queued.get(id) ?? []) wake();
    this.queued.delete(id);
  }

  /** The content held for a job (see enqueue), no longer held. */
  private takeHeld(id: string): readonly Uint8Array[] | undefined {
    const held = this.held.get(id);
    if (held === undefined) return undefined;
    this.held.delete(id);
    this.heldBytes -= held.bytes;
    return held.chunks;
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
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
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
    if (this.shared) {
      // Held past the render (not released): an instance that read the version as pending before
      // its status changed does not render it again. The database away: tried again later.
      const mine = await this.shared.take(`thumbnail:${jobId(version.documentId, version.version)}`, this.leaseMs).catch(() => undefined);
      if (mine === undefined) this.defer(version);
      if (mine !== true) return;
    }
    // Counted before it starts, so a render that takes the process down is not started for ever.
    // Read as pending a while ago (a sweep, a start, a long queue): another instance may have
    // rendered it since, and its lease ended. Rendered once: only while still pending.
    const starts = await this.store.content.startThumbnailRender(version.documentId, version.version, this.process).catch(() => 'unknown' as const);
    // The database away: tried again later.
    if (starts === 'unknown') this.defer(version);
    if (typeof starts !== 'number') return;
    if (starts > MAX_RENDERS_LOST) {
      await this.store.content
        .setThumbnail(version.documentId, version.version, { status: 'failed', key: null, error: RENDER_STOPPED_SERVER })
        .catch((writeError: unknown) => {
          if (isTransientStorageFault(writeError)) this.defer(version);
        });
      return;
    }
    const content = this.takeHeld(jobId(version.documentId, version.version));
    try {
      const png = content
        ? await this.renderer.renderThumbnail(content, version.fileType, { size: this.options.size, timeoutMs: this.options.timeoutMs })
        : await this.renderFromStore(this.renderer, version);
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
        .catch((writeError: unknown) => {
          // The file's fault, but the database could not record it (disk full, busy): still pending, tried again.
          if (isTransientStorageFault(writeError)) this.defer(version);
        });
    }
  }

  /** Links or streams the version's content into a scratch file of this render's own, renders it, removes the file. */
  private async renderFromStore(renderer: ThumbnailRenderer, version: DocumentVersionRecord): Promise<Buffer> {
    const render = { size: this.options.size, timeoutMs: this.options.timeoutMs };
    const file = path.join(this.scratchDir, randomUUID());
    const size = await this.storage.size(version.contentKey);
    // A missing object: the renderer, finding no file, says it cannot be read.
    if (size === undefined) return renderer.renderThumbnail(file, version.fileType, render);
    privateDirectory(this.scratchDir);
    try {
      if ((await this.storage.linkAs?.(version.contentKey, file)) !== true) {
        // One byte past the limit is enough for the renderer to refuse the file as too large. Always
        // a range: a local file read without one takes a read buffer of 4 MiB per read whatever its
        // size (8 MiB for a 10 KB scan), and that much memory outside the heap makes V8 run a full
        // collection every ten or so renders.
        const range = size === 0 ? undefined : { start: 0, end: Math.min(size - 1, RENDER_INPUT_LIMIT) };
        await pipeline(this.storage.read(version.contentKey, range), fs.createWriteStream(file, { flags: 'wx', mode: PRIVATE_FILE }));
      }
      return await renderer.renderThumbnail(file, version.fileType, render);
    } finally {
      await fsp.rm(file, { force: true });
    }
  }
}
