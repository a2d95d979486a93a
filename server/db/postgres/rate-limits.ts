/**
 * Fixed-window request counters in PostgreSQL, so a limit holds for every instance together: one
 * upsert per request, which starts a new window when the last one has ended. Windows long over are
 * removed now and then by whichever instance counts.
 */
import type { RateLimitRepository } from '../types.js';
import type { PostgresDatabase } from './database.js';

/** One take in this many also removes windows that ended over a minute ago. */
const SWEEP_EVERY = 1000;

export class PostgresRateLimits implements RateLimitRepository {
  private takes = 0;

  constructor(private readonly db: PostgresDatabase) {}

  async take(key: string, limit: number, windowMs: number, now: number): Promise<number> {
    const row = (await this.db.row<{ window_start: number; count: number }>(
      `INSERT INTO rate_limit_windows (key, window_start, count) VALUES ($1, $2, 1)
       ON CONFLICT (key) DO UPDATE SET
         window_start = CASE WHEN $2 - rate_limit_windows.window_start >= $3 THEN $2 ELSE rate_limit_windows.window_start END,
         count = CASE WHEN $2 - rate_limit_windows.window_start >= $3 THEN 1 ELSE rate_limit_windows.count + 1 END
       RETURNING window_start, count`,
      [key, now, windowMs],
    ))!;
    this.takes += 1;
    if (this.takes % SWEEP_EVERY === 0) await this.db.run('DELETE FROM rate_limit_windows WHERE window_start < $1', [now - windowMs - 60_000]);
    if (row.count <= limit) return 0;
    return Math.max(1, Math.ceil((row.window_start + windowMs - now) / 1000));
  }
}
