/**
 * The PostgreSQL connection pool: bounded waits everywhere (connecting, each statement, a
 * transaction left open), faults of the database server reported as one error type the HTTP side
 * answers with 503 + Retry-After, and transactions retried on serialization failures and deadlocks.
 */
import pg from 'pg';

/** PostgreSQL cannot be reached or answered in time: nothing of the request was stored; retry later. */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError';
  readonly code = 'PATIENT_DOCS_DATABASE_UNAVAILABLE';
}

export interface PostgresOptions {
  /** Connections per instance. */
  poolSize?: number;
  /** How long a query waits for a connection (a new one, or a free one of the pool). */
  connectTimeoutMs?: number;
  /** How long one statement may run on the database server before it is cancelled. */
  statementTimeoutMs?: number;
}

const DEFAULTS: Required<PostgresOptions> = { poolSize: 10, connectTimeoutMs: 5000, statementTimeoutMs: 30_000 };

/** Transactions that lost a serialization check or a deadlock are run again, this many times at most. */
const RETRIES = 8;

/** SQLSTATEs of a transaction PostgreSQL aborted to keep concurrent ones correct: running it again succeeds. */
const RETRYABLE = new Set(['40001', '40P01']);

/** Runs `attempt` until it ends without a serialization failure or deadlock (RETRIES times at most), a short random pause between tries. */
async function retried<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries += 1) {
    try {
      return await attempt();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'string' || !RETRYABLE.has(code) || tries >= RETRIES) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * tries));
    }
  }
}

/** Node's socket errors on the way to the database server. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

/** node-postgres's own messages when a connection is lost or not made in time (they carry no code). */
const CONNECTION_MESSAGES = /timeout exceeded when trying to connect|Connection terminated|connection timeout|not queryable|Query read timeout|Client was closed/i;

/**
 * Whether a driver error says the database server is away or overloaded (not that the query is
 * wrong): class 08 connection exceptions, 53 insufficient resources, 57P0x shutting down or
 * starting, 57014 a statement cancelled by its timeout, and the socket's own errors.
 */
export function isUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    if (code.startsWith('08') || code.startsWith('53') || code.startsWith('57P') || code === '57014') return true;
    if (NETWORK_CODES.has(code)) return true;
  }
  return error instanceof Error && CONNECTION_MESSAGES.test(error.message);
}

function unavailable(error: unknown): unknown {
  if (error instanceof DatabaseUnavailableError || !isUnavailable(error)) return error;
  return new DatabaseUnavailableError(`the database cannot be reached or did not answer in time (${(error as Error).message})`, { cause: error });
}

/** bigint (int8) columns and counts as numbers: every value we keep in one (sizes, epoch milliseconds, sequences) is far below 2^53. */
const TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

/**
 * A statement PostgreSQL parses and plans once per connection and then only executes (a named
 * prepared statement): for the statements every request runs. Its parameters' types are fixed by
 * the first execution, so a name stands for one text, and for parameters of one type each.
 */
export interface NamedStatement {
  name: string;
  text: string;
}

/** Named statements by name: one name never stands for two texts (the driver would refuse the second on a connection). */
const NAMED = new Map<string, string>();

/** A statement sent by `name` (NamedStatement). */
export function named(name: string, text: string): NamedStatement {
  const known = NAMED.get(name);
  if (known !== undefined && known !== text) throw new Error(`the statement name ${name} stands for another statement`);
  NAMED.set(name, text);
  return { name, text };
}

export type Sql = string | NamedStatement;

export interface Queryable {
  /** Rows as objects. */
  rows<T>(sql: Sql, params?: unknown[]): Promise<T[]>;
  /** The first row, if any. */
  row<T>(sql: Sql, params?: unknown[]): Promise<T | undefined>;
  /** Rows affected (INSERT/UPDATE/DELETE). */
  run(sql: Sql, params?: unknown[]): Promise<number>;
}

/** A text parameter PostgreSQL cannot hold: text there never contains NUL (SQLite's can). */
const holdsNul = (value: unknown): boolean => (typeof value === 'string' ? value.includes('\u0000') : Array.isArray(value) && value.some(holdsNul));

/** What a read whose parameter holds NUL answers: nothing stored can equal or contain it (SQLite answers the same). */
const NOTHING = { rows: [], rowCount: 0 } as unknown as pg.QueryResult;

function queryable(target: pg.Pool | pg.PoolClient): Queryable {
  const query = async (sql: Sql, params: unknown[] = []): Promise<pg.QueryResult> => {
    const text = typeof sql === 'string' ? sql : sql.text;
    if (params.some(holdsNul) && /^\s*(SELECT|WITH)\b/i.test(text)) return NOTHING;
    try {
      return await (typeof sql === 'string' ? target.query(sql, params) : target.query({ name: sql.name, text, values: params }));
    } catch (error) {
      throw unavailable(error);
    }
  };
  return {
    rows: async <T>(sql: Sql, params?: unknown[]) => (await query(sql, params)).rows as T[],
    row: async <T>(sql: Sql, params?: unknown[]) => (await query(sql, params)).rows[0] as T | undefined,
    run: async (sql: Sql, params?: unknown[]) => (await query(sql, params)).rowCount ?? 0,
  };
}

/** Pool connections given their own 'error' listener (once each: see connect). */
const GUARDED = new WeakSet<pg.PoolClient>();

export class PostgresDatabase implements Queryable {
  readonly pool: pg.Pool;
  private readonly direct: Queryable;

  constructor(
    readonly url: string,
    options: PostgresOptions = {},
  ) {
    const settings = { ...DEFAULTS, ...options };
    this.pool = new pg.Pool({
      connectionString: url,
      max: settings.poolSize,
      connectionTimeoutMillis: settings.connectTimeoutMs,
      // The server cancels a statement past its timeout; the client gives up a little later in case
      // the server is gone without closing the connection (a failover, a cut network).
      statement_timeout: settings.statementTimeoutMs,
      query_timeout: settings.statementTimeoutMs + settings.connectTimeoutMs,
      idle_in_transaction_session_timeout: settings.statementTimeoutMs * 2,
      keepAlive: true,
      application_name: 'patient-docs',
      types: TYPES,
    });
    // An idle connection the database server closed (a restart): the pool drops it and makes a new
    // one at the next query. Without a listener, the error would end the process.
    this.pool.on('error', () => undefined);
    this.direct = queryable(this.pool);
  }

  rows<T>(sql: Sql, params?: unknown[]): Promise<T[]> {
    return this.direct.rows<T>(sql, params);
  }

  row<T>(sql: Sql, params?: unknown[]): Promise<T | undefined> {
    return this.direct.row<T>(sql, params);
  }

  run(sql: Sql, params?: unknown[]): Promise<number> {
    return this.direct.run(sql, params);
  }

  /**
   * One statement as a transaction of its own (PostgreSQL commits it when it ends), run again on a
   * serialization failure or deadlock as transaction() does: a write that fits in one statement
   * (data-modifying WITH clauses) holds its row locks for that statement and its commit alone,
   * with no round trip to this process in between.
   */
  statement<T>(sql: Sql, params?: unknown[]): Promise<T[]> {
    return retried(() => this.direct.rows<T>(sql, params));
  }

  private async connect(): Promise<pg.PoolClient> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw unavailable(error);
    }
    // A connection the database server ends (a restart) while it is checked out between two
    // statements emits 'error' on the client, which the pool listens for only while it is idle: the
    // next statement fails with it anyway (503), so the event itself is taken and dropped here.
    if (!GUARDED.has(client)) {
      GUARDED.add(client);
      client.on('error', () => undefined);
    }
    return client;
  }

  /**
   * Runs `work` in one transaction (READ COMMITTED unless `isolation` says otherwise) and commits;
   * rolls back on any error. A serialization failure or deadlock runs it again from the start.
   */
  async transaction<T>(work: (tx: Queryable) => Promise<T>, isolation: 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE' = 'READ COMMITTED'): Promise<T> {
    return retried(async () => {
      const client = await this.connect();
      let broken = false;
      try {
        const tx = queryable(client);
        await tx.run(`BEGIN ISOLATION LEVEL ${isolation}`);
        const result = await work(tx);
        await tx.run('COMMIT');
        return result;
      } catch (error) {
        broken = error instanceof DatabaseUnavailableError;
        if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
        throw error;
      } finally {
        client.release(broken);
      }
    });
  }

  /**
   * Runs `work` while this connection holds the session advisory lock `key`: one holder at a time
   * across every instance on the database (migrations, the first start's keys and seed).
   */
  async withLock<T>(key: number, work: () => Promise<T>): Promise<T> {
    const client = await this.connect();
    let broken = false;
    try {
      await queryable(client).run('SELECT pg_advisory_lock($1)', [key]);
      try {
        return await work();
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [key]).catch(() => (broken = true));
      }
    } finally {
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
