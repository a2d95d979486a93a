/**
 * Tells, cheaply, whether the database may have changed since a value was read from it, so that a
 * read asked on every request (a patient's access and document change counter) can be kept in
 * memory without ever serving it stale past a write:
 * - this connection's own writes (every write of the server's request thread) are seen at once:
 *   SQLite's total_changes() counts them, and asking for it touches no table and takes no lock;
 * - commits of other connections (the admin CLI, the audit log's writer thread, a restore) are
 *   seen through PRAGMA data_version, which costs a read transaction like any query: it is asked
 *   at most once every EXTERNAL_CHECK_MS, so another process's change is seen within that time
 *   (far less than the admin CLI takes to exit after its commit).
 */
import type { Statement } from 'better-sqlite3';
import type { SqliteDatabase } from './database.js';

export const EXTERNAL_CHECK_MS = 2;

export class ChangeWatch {
  private readonly totalChanges: Statement;
  private readonly dataVersion: Statement;
  private own: number;
  private external: number;
  private checkedAt: number;
  /** Moves with every change of `own` or `external`. */
  private current = 0;

  constructor(
    db: SqliteDatabase,
    private readonly now: () => number = performance.now.bind(performance),
  ) {
    this.totalChanges = db.prepare('SELECT total_changes()').pluck();
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.own = this.ownChanges();
    this.external = this.dataVersion.get() as number;
    this.checkedAt = this.now();
  }

  /** Rows this connection has written since it opened; asking takes no lock. */
  ownChanges(): number {
    return this.totalChanges.get() as number;
  }

  /** A number that stays the same only while nothing has been written to the database since. */
  generation(): number {
    const own = this.ownChanges();
    if (own !== this.own) {
      // A write of our own: the memory starts over anyway, and what it reads next is read in a new
      // transaction that sees other processes' commits too. No need to ask about them now.
      this.own = own;
      this.current += 1;
      return this.current;
    }
    const now = this.now();
    if (now - this.checkedAt >= EXTERNAL_CHECK_MS) {
      this.checkedAt = now;
      const external = this.dataVersion.get() as number;
      if (external !== this.external) {
        this.external = external;
        this.current += 1;
      }
    }
    return this.current;
  }
}
