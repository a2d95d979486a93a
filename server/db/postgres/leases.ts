/**
 * Named leases for work that one instance of several must do at a time (DESIGN §6 "background work
 * once per item"): the periodic clean-up, one thumbnail render, the writes of one resumable upload.
 * A lease is a row (`work_leases`) with its holder and expiry: taking it succeeds when nobody holds
 * it, its holder's time is up (an instance that died), or the taker holds it already (a renewal).
 * Nothing needs to be released at a crash: the lease ends by itself.
 */
import type { WorkLeases } from '../types.js';
import type { Queryable } from './database.js';

export class PostgresWorkLeases implements WorkLeases {
  constructor(
    private readonly db: Queryable,
    /** This instance (the notifications' origin: random per process). */
    private readonly holder: string,
    private readonly now: () => number = Date.now,
  ) {}

  async take(key: string, ms: number): Promise<boolean> {
    const now = this.now();
    const taken = await this.db.run(
      `INSERT INTO work_leases AS l (key, holder, until) VALUES ($1, $2, $3)
       ON CONFLICT (key) DO UPDATE SET holder = excluded.holder, until = excluded.until
       WHERE l.until <= $4 OR l.holder = excluded.holder`,
      [key, this.holder, now + ms, now],
    );
    // Leases long over go now and then (one take in a hundred), so the table stays small.
    if (Math.random() < 0.01) await this.db.run('DELETE FROM work_leases WHERE until < $1', [now - 3_600_000]);
    return taken > 0;
  }

  async release(key: string): Promise<void> {
    await this.db.run('DELETE FROM work_leases WHERE key = $1 AND holder = $2', [key, this.holder]);
  }
}
