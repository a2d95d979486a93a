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
  private readonly ownChanges: Statement;
  private readonly dataVersion: Statement;
  private own = -1;
  private external = -1;
  private checkedAt = Number.NEGATIVE_INFINITY;
  private current = 0;

  constructor(
    db: SqliteDatabase,
    private readonly now: () => number = performance.now.bind(performance),
  ) {
    this.ownChanges = db.prepare('SELECT total_changes()').pluck();
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
  }

  /** A number that stays the same only while nothing has been written to the database since. */
  generation(): number {
    const own = this.ownChanges.get() as number;
    const now = this.now();
    if (own !== this.own || now - this.checkedAt >= EXTERNAL_CHECK_MS) {
      const external = this.dataVersion.get() as number;
      if (own !== this.own || external !== this.external) {
        this.own = own;
        this.external = external;
        this.current += 1;
      }
      this.checkedAt = now;
    }
    return this.current;
  }
}
