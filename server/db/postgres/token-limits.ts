/**
 * The token endpoint's limits (identity/rate-limit.ts) counted in PostgreSQL, so they hold for every
 * instance on the database together: failures through one instance count on all of them.
 *
 * One row per counter in `token_limits`, keyed as the in-process limiter keys its tables (fixed-size
 * client digests and source keys): `r` requests per (client, source), `s` failures per source, `c`
 * failures per client, each a fixed window (`window_start`, `count`), and `t` the last success of a
 * (client, source) (`window_start` = when). Admitting is one statement (count the request, read the
 * other three); a failure is one upsert of two rows. Rows whose window is over are deleted by
 * whichever instance counts, at most once a window, so the table holds about one window's
 * requests plus a day's successful (client, source) pairs.
 */
import { TRUSTED_FOR_MS, WINDOW_MS, type AttemptOutcome, type TokenAttempt, type TokenAttemptLimiter, type TokenLimits } from '../../identity/rate-limit.js';
import type { Queryable } from './database.js';

interface Row {
  key: string;
  window_start: number;
  count: number;
}

/** Counts one more under each key, starting a new window where the last one has ended. */
const COUNT = `INSERT INTO token_limits AS t (key, window_start, count) SELECT unnest($1::text[]), $2::bigint, 1
  ON CONFLICT (key) DO UPDATE SET
    window_start = CASE WHEN $2::bigint - t.window_start >= $3::bigint THEN $2::bigint ELSE t.window_start END,
    count = CASE WHEN $2::bigint - t.window_start >= $3::bigint THEN 1 ELSE t.count + 1 END`;

export class PostgresTokenLimiter implements TokenAttemptLimiter {
  private readonly windowMs: number;
  private sweptAt = 0;

  constructor(
    private readonly db: Queryable,
    private readonly limits: TokenLimits,
    private readonly now: () => number = Date.now,
  ) {
    this.windowMs = limits.windowMs ?? WINDOW_MS;
  }

  async admit({ client, source }: TokenAttempt): Promise<number> {
    const time = this.now();
    const keys = keysOf(client, source);
    const rows = await this.db.rows<Row>(
      `WITH counted AS (${COUNT} RETURNING key, window_start, count)
       SELECT key, window_start, count FROM counted
       UNION ALL SELECT key, window_start, count FROM token_limits WHERE key IN ($4, $5, $6)`,
      [[keys.requests], time, this.windowMs, keys.sourceFailures, keys.clientFailures, keys.trusted],
    );
    this.sweep(time);
    const byKey = new Map(rows.map((row) => [row.key, row]));
    const current = (key: string): Row | undefined => {
      const row = byKey.get(key);
      return row && time - row.window_start < this.windowMs ? row : undefined;
    };
    const secondsLeft = (row: Row): number => Math.max(1, Math.ceil((row.window_start + this.windowMs - time) / 1000));
    const requests = current(keys.requests);
    if (requests && requests.count > this.limits.requestsPerClientAndSource) return secondsLeft(requests);
    const sourceFailures = current(keys.sourceFailures);
    if (sourceFailures && sourceFailures.count >= this.limits.failuresPerSource) return secondsLeft(sourceFailures);
    const clientFailures = current(keys.clientFailures);
    const trusted = byKey.get(keys.trusted);
    if (clientFailures && clientFailures.count >= this.limits.failuresPerClient && !(trusted && time - trusted.window_start < TRUSTED_FOR_MS)) return secondsLeft(clientFailures);
    return 0;
  }

  async settle({ client, source }: TokenAttempt, outcome: AttemptOutcome): Promise<void> {
    const time = this.now();
    const keys = keysOf(client, source);
    if (outcome === 'success') {
      await this.db.run('INSERT INTO token_limits (key, window_start, count) VALUES ($1, $2, 0) ON CONFLICT (key) DO UPDATE SET window_start = excluded.window_start', [keys.trusted, time]);
      return;
    }
    await this.db.run(COUNT, [[keys.sourceFailures, keys.clientFailures], time, this.windowMs]);
  }

  async familiar({ client, source }: TokenAttempt): Promise<boolean> {
    const row = await this.db.row<{ window_start: number }>('SELECT window_start FROM token_limits WHERE key = $1', [keysOf(client, source).trusted]);
    return row !== undefined && this.now() - row.window_start < TRUSTED_FOR_MS;
  }

  /** Windows over and successes older than a day go, at most once a window per instance (not awaited: nobody waits for it). */
  private sweep(time: number): void {
    if (time - this.sweptAt < this.windowMs) return;
    this.sweptAt = time;
    this.db
      .run(`DELETE FROM token_limits WHERE (key NOT LIKE 't%' AND window_start <= $1) OR window_start <= $2`, [time - this.windowMs, time - TRUSTED_FOR_MS])
      .catch(() => (this.sweptAt = 0));
  }
}

function keysOf(client: string, source: string): { requests: string; sourceFailures: string; clientFailures: string; trusted: string } {
  return { requests: `r\n${client}\n${source}`, sourceFailures: `s\n${source}`, clientFailures: `c\n${client}`, trusted: `t\n${client}\n${source}` };
}
