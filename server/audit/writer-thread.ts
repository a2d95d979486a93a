/**
 * The audit log's writes off the thread that serves requests. Every access to a patient's files is
 * one row in five B-trees (the table and its four indexes): 10–20 µs of SQLite work each, which on
 * the request thread cost a search a sixth of its time. Here a worker thread with its own
 * connection to the same database file does the inserts, one transaction per batch, and answers
 * when they are committed: AuditLog keeps each entry until then, retries a batch the database
 * refused, and refuses access while too many wait, exactly as with the repository in-thread.
 *
 * A thread that dies (it should not) fails the batches it held; AuditLog tries them again and the
 * next batch starts a new thread. The thread keeps the process alive only while a batch is out.
 */
import type { Worker } from 'node:worker_threads';
import type { SqliteStore } from '../db/sqlite/store.js';
import type { AuditEntryRecord } from '../db/types.js';
import { startModuleWorker } from '../worker-threads.js';
import type { AuditSink } from './log.js';

export interface AuditWriterOptions {
  /** The database file (already migrated by the server). */
  file: string;
  /** How long the thread's writes wait for another connection's write lock, as the server's own. */
  busyTimeoutMs: number;
}

export type ToAuditWriter = { id: number; entries: readonly AuditEntryRecord[] } | 'close';
export type FromAuditWriter = { id: number; error?: { message: string; code?: string } };

/** How long the thread waits for a write lock the request thread holds (it holds it briefly). */
export const AUDIT_BUSY_TIMEOUT_MS = 5000;

export class AuditWriterThread implements AuditSink {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();

  constructor(private readonly options: AuditWriterOptions) {}

  append(entries: readonly AuditEntryRecord[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, entries } satisfies ToAuditWriter);
    });
  }

  /** Ends the thread once what it holds is written (AuditLog.close calls it after its last flush). */
  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.worker = undefined;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage('close' satisfies ToAuditWriter);
    worker.ref();
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
    await worker.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = startModuleWorker(import.meta.url, 'writer-worker', this.options, { maxOldGenerationSizeMb: 64 });
    worker.unref();
    worker.on('message', (answer: FromAuditWriter) => {
      const waiter = this.waiting.get(answer.id);
      this.waiting.delete(answer.id);
      if (this.waiting.size === 0) worker.unref();
      if (!waiter) return;
      if (answer.error) waiter.reject(Object.assign(new Error(answer.error.message), answer.error.code ? { code: answer.error.code } : {}));
      else waiter.resolve();
    });
    const lost = (reason: string): void => {
      if (this.worker === worker) this.worker = undefined;
      for (const waiter of this.waiting.values()) waiter.reject(new Error(`the audit log's writer thread stopped (${reason})`));
      this.waiting.clear();
    };
    worker.on('error', (error) => lost(error.message));
    worker.on('exit', (code) => lost(`exit code ${code}`));
    this.worker = worker;
    return worker;
  }
}

/**
 * Hands each batch to the writer thread, unless the request thread has itself written to the
 * database since the last batch (creates, uploads): two connections would then take turns on
 * SQLite's one write lock, and the request thread would sleep in SQLite's busy handler, a
 * millisecond at least, each time it met the writer thread's transaction. While the request thread
 * writes anyway, its own connection takes the batch too.
 *
 * Batches come as AuditLog gathers them (every 200 ms, or 500 waiting), not more often: each commit
 * of another connection makes SQLite drop the request thread's whole page cache at its next read
 * (WAL mode cannot tell which pages changed), so the thread commits a few times a second at most.
 */
export class AuditSinkSwitch implements AuditSink {
  constructor(
    private readonly thread: AuditWriterThread,
    private readonly inRequestThread: AuditSink,
    private readonly requestThreadWrote: () => boolean,
  ) {}

  append(entries: readonly AuditEntryRecord[]): Promise<void> {
    return this.requestThreadWrote() ? this.inRequestThread.append(entries) : this.thread.append(entries);
  }

  close(): Promise<void> {
    return this.thread.close();
  }
}

/** The server's sink for its embedded database file: the writer thread, or the request thread's own connection while that one writes. */
export function sqliteAuditSink(store: SqliteStore, busyTimeoutMs: number): AuditSinkSwitch {
  const thread = new AuditWriterThread({ file: store.db.name, busyTimeoutMs });
  // The request thread's own writes since the last batch, its own audit batches not counted.
  let seen = store.ownChanges();
  const inRequestThread: AuditSink = {
    append: async (entries) => {
      await store.audit.append(entries);
      seen = store.ownChanges();
    },
  };
  const requestThreadWrote = (): boolean => {
    const now = store.ownChanges();
    const wrote = now !== seen;
    seen = now;
    return wrote;
  };
  return new AuditSinkSwitch(thread, inRequestThread, requestThreadWrote);
}
