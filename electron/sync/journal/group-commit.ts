/**
 * Group commit for the journal: writes asked for during one turn of the event loop (the files in
 * flight often reach a step at about the same moment) are run together in one transaction, once
 * the turn's callbacks have run. Each caller awaits its write's commit before it acts (before the
 * network step the write announces), so a write is as durable when the caller goes on as one
 * committed on its own: only the number of commits drops.
 *
 * Each write runs in a savepoint of its own: one that throws (an illegal transition) is undone
 * alone and rejects only its caller. A transaction that cannot commit (a full disk) rejects every
 * caller of the group, and none of its writes is kept.
 */
import type Database from 'better-sqlite3';

interface Waiter {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

export class GroupCommit {
  private queue: Waiter[] = [];
  private scheduled = false;
  /** The whole group, and each write in it (nested, it runs as a savepoint). */
  private readonly group: (writes: readonly Waiter[]) => Settled[];
  private readonly one: (write: () => unknown) => unknown;

  constructor(
    database: Database.Database,
    /** When the queued writes are committed: after the current turn's callbacks (setImmediate). */
    private readonly schedule: (flush: () => void) => void = (flush) => void setImmediate(flush),
  ) {
    this.one = database.transaction((write: () => unknown) => write());
    this.group = database.transaction((writes: readonly Waiter[]) =>
      writes.map((waiter): Settled => {
        try {
          return { ok: true, value: this.one(waiter.write) };
        } catch (error) {
          return { ok: false, error };
        }
      }),
    );
  }

  /** Queues `write`; resolves with its result once the transaction holding it has committed. */
  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      this.schedule(() => this.flush());
    });
  }

  /** Commits the queued writes now (a write outside the group calls this first, so writes keep their order). */
  flush(): void {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    const writes = this.queue;
    this.queue = [];
    let settled: Settled[];
    try {
      settled = this.group(writes);
    } catch (error) {
      for (const waiter of writes) waiter.reject(error);
      return;
    }
    writes.forEach((waiter, index) => {
      const outcome = settled[index]!;
      if (outcome.ok) waiter.resolve(outcome.value);
      else waiter.reject(outcome.error);
    });
  }
}
