/**
 * The audit log's writer. A request only appends its entry to memory (a push); entries are written
 * in one transaction per flush, every FLUSH_EVERY_MS or as soon as BATCH_SIZE are waiting, and at
 * shutdown. When the database cannot take them (disk full, read-only, busy), they stay in memory
 * and are tried again with a growing pause; none is dropped. Past `maxPending` waiting entries, the
 * routes refuse access to patient files (503) until the log can be written again: access is not
 * given while it cannot be recorded.
 */
import type { AuditEntryRecord } from '../db/types.js';
import { serviceUnavailable, type ApiError } from '../errors.js';

export const FLUSH_EVERY_MS = 200;
/**
 * Entries per transaction (and a flush as soon as this many wait). Inserting one costs 10–30 µs
 * (bench/audit.mjs), on the event loop: 500 keep a flush's pause near 10 ms.
 */
export const BATCH_SIZE = 500;
export const DEFAULT_MAX_PENDING = 50_000;
const RETRY_MAX_MS = 5000;
/** While the log cannot be written, IT hears about it again this often. */
const REPEAT_WARNING_MS = 30_000;
const REFUSAL_RETRY_AFTER_SECONDS = 30;

export interface AuditLogger {
  error(object: Record<string, unknown>, message: string): void;
  warn(object: Record<string, unknown>, message: string): void;
  info(object: Record<string, unknown>, message: string): void;
}

const stderrLogger: AuditLogger = {
  error: (object, message) => process.stderr.write(`patient-docs: ${message} ${JSON.stringify(object)}\n`),
  warn: (object, message) => process.stderr.write(`patient-docs: ${message} ${JSON.stringify(object)}\n`),
  info: () => undefined,
};

export interface AuditLogOptions {
  maxPending?: number;
  flushEveryMs?: number;
  /** Entries per write (one transaction); BATCH_SIZE unless a test wants smaller ones. */
  batchSize?: number;
  now?: () => number;
}

/**
 * Where entries are written: an AuditRepository itself, in the request thread, or a writer thread
 * (writer-thread.ts). Each append is one transaction, all or none.
 */
export interface AuditSink {
  append(entries: readonly AuditEntryRecord[]): Promise<void>;
  /** Called once the log is closed and everything it could write is written. */
  close?(): Promise<void>;
}

export class AuditLog {
  private pending: AuditEntryRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** Set while writes fail: when the first failure happened, and the pause before the next try. */
  private failure: { since: number; retryMs: number; lastWarnedAt: number; error: string } | undefined;
  private logger: AuditLogger = stderrLogger;
  private readonly maxPending: number;
  private readonly flushEveryMs: number;
  private readonly batchSize: number;
  private readonly now: () => number;
  private closed = false;

  constructor(
    private readonly sink: AuditSink,
    options: AuditLogOptions = {},
  ) {
    this.maxPending = options.maxPending ?? DEFAULT_MAX_PENDING;
    this.flushEveryMs = options.flushEveryMs ?? FLUSH_EVERY_MS;
    this.batchSize = options.batchSize ?? BATCH_SIZE;
    this.now = options.now ?? Date.now;
  }

  useLogger(logger: AuditLogger): void {
    this.logger = logger;
  }

  /** Keeps the entry for the next flush (called once per access; costs a push). */
  record(entry: AuditEntryRecord): void {
    this.pending.push(entry);
    if (this.failure) return; // the retry timer is set
    if (this.pending.length >= this.batchSize) this.schedule(0);
    else if (this.timer === undefined) this.schedule(this.flushEveryMs);
  }

  /** Entries not yet written. */
  pendingCount(): number {
    return this.pending.length;
  }

  /**
   * The 503 every access to patient files gets while too many entries wait to be written; undefined
   * when access may be given.
   */
  refusal(): ApiError | undefined {
    if (this.pending.length < this.maxPending) return undefined;
    return serviceUnavailable(
      'access to patient files is not given right now, because the server cannot record it in its audit log (the server administrator must check the data disk: it may be full or read-only); retry later',
      REFUSAL_RETRY_AFTER_SECONDS,
    );
  }

  private schedule(delayMs: number): void {
    if (this.closed) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, delayMs);
    this.timer.unref();
  }

  /**
   * Writes what is waiting (one transaction per batch). Resolves true when everything recorded so
   * far is written, false when the database refused (the entries stay, and a retry is scheduled).
   */
  async flush(): Promise<boolean> {
    while (this.flushing) await this.flushing;
    let written = true;
    this.flushing = this.writePending().then(
      (ok) => {
        written = ok;
      },
      () => {
        written = false;
      },
    );
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
    }
    return written;
  }

  private async writePending(): Promise<boolean> {
    for (let first = true; this.pending.length > 0; first = false) {
      // After an outage thousands may wait: requests get the event loop between transactions.
      if (!first) await new Promise((resolve) => setImmediate(resolve));
      const size = Math.min(this.pending.length, this.batchSize);
      const batch = this.pending.slice(0, size);
      try {
        await this.sink.append(batch);
      } catch (error) {
        this.failed(error);
        return false;
      }
      // Only flush removes entries, and new ones are pushed at the end: the first `size` are the batch.
      this.pending.splice(0, size);
      this.recovered();
    }
    return true;
  }

  private failed(error: unknown): void {
    const now = this.now();
    const reason = (error as { code?: string }).code ?? (error instanceof Error ? error.message : String(error));
    if (!this.failure) {
      this.failure = { since: now, retryMs: this.flushEveryMs, lastWarnedAt: now, error: reason };
      this.logger.error({ err: error, pending: this.pending.length }, `audit log: entries cannot be written (${reason}); they are kept in memory and tried again`);
    } else {
      this.failure.retryMs = Math.min(this.failure.retryMs * 2, RETRY_MAX_MS);
      this.failure.error = reason;
      if (now - this.failure.lastWarnedAt >= REPEAT_WARNING_MS) {
        this.failure.lastWarnedAt = now;
        this.logger.error(
          { pending: this.pending.length, failingForMs: now - this.failure.since, refusing: this.pending.length >= this.maxPending },
          `audit log: still cannot be written (${reason}); ${this.pending.length} entries wait in memory${this.pending.length >= this.maxPending ? ', and access to patient files is refused until they are written' : ''}`,
        );
      }
    }
    this.schedule(this.failure.retryMs);
  }

  private recovered(): void {
    if (!this.failure) return;
    this.logger.warn({ failedForMs: this.now() - this.failure.since, stillPending: this.pending.length }, 'audit log: written again; the entries that waited are stored');
    this.failure = undefined;
  }

  /**
   * At shutdown: writes everything, trying again while the database refuses, for up to `waitMs`.
   * Returns how many entries could not be written (0 unless the disk stayed full); they are logged.
   */
  async close(waitMs: number): Promise<number> {
    const deadline = this.now() + waitMs;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    for (let pause = 100; ; pause = Math.min(pause * 2, 1000)) {
      if (await this.flush()) break;
      if (this.now() + pause > deadline) break;
      if (this.timer !== undefined) clearTimeout(this.timer);
      this.timer = undefined;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const lost = this.pending.length;
    if (lost > 0) {
      // The last resort: the entries go to the server's log, so IT can still read them there.
      this.logger.error({ entries: this.pending }, `audit log: ${lost} entries could not be written to the database before the server stopped; they are in this log line`);
    }
    await this.sink.close?.();
    return lost;
  }

  /**
   * A hard stop (a second SIGTERM): everything waiting in one write, which the embedded database
   * completes within this call; should it fail, the entries go to the log (the caller lets the
   * promise settle before it exits).
   */
  async flushBeforeExit(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    // A batch a writer thread is committing stays first in line until it answers: let it finish,
    // so its entries are neither written twice nor lost.
    if (this.flushing) await this.flushing;
    const entries = this.pending.splice(0);
    await this.sink.append(entries).catch((error: unknown) => {
      this.logger.error({ err: error, entries }, `audit log: ${entries.length} entries could not be written before the server stopped; they are in this log line`);
    });
  }
}
