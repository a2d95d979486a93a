/**
 * Wake-ups between instances: a write that gives the delivery worker something to do (an event
 * appended to the outbox, messages queued, a dead message sent again) sends a NOTIFY in its own
 * transaction, which PostgreSQL delivers at commit to every connection that LISTENs on WORK_CHANNEL.
 * Each instance listens on one dedicated connection (not one of the pool's: a pooled connection
 * is handed to queries and would miss notifications). When that connection is lost (a database
 * restart, a failover, a cut network), it is made again every RECONNECT_MS until it works, and its
 * listeners are called once then: what was notified while it was away is caught up by one scan.
 * Notifications are hints, never the only way work is found: the worker also looks now and then.
 *
 * The same connection tells the other instances that this one lives: it holds a session advisory
 * lock (CLAIMANT_LOCK, `claimant`) for as long as it is open. PostgreSQL ends a session the moment
 * its process dies (the operating system closes the socket), and the lock with it, so a webhook
 * claim recorded with this number (webhooks.ts) is known to be abandoned at once, without waiting
 * for its lease.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

export const WORK_CHANNEL = 'patient_docs_work';

/** Between attempts to make the listening connection again. */
const RECONNECT_MS = 500;

/** The first key of the claimant locks (an arbitrary constant: "PDWC"); the second is an instance's `claimant`. */
export const CLAIMANT_LOCK = 0x50445743;

/** A random claimant number: a positive int4, as pg_locks shows an advisory lock's second key (an oid). */
function randomClaimant(): number {
  return 1 + Math.floor(Math.random() * 0x7ffffffe);
}

export class WorkNotifications {
  /** Sent as the payload of this process's notifications, so it does not wake itself for its own commits. */
  readonly origin = randomUUID();
  /** This process's claimant number, locked by the listening connection while it is open (see above). */
  claimant = randomClaimant();
  private readonly listeners = new Set<() => void>();
  private client: pg.Client | undefined;
  private connecting = false;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;
  /** Connections made since the first (tests and logs: each one means a lost connection came back). */
  reconnects = 0;
  private connections = 0;

  constructor(
    private readonly url: string,
    private readonly connectTimeoutMs: number,
  ) {}

  /** This process's claimant number while the listening connection (and so its lock) is open; null otherwise. */
  liveClaimant(): number | null {
    return this.client ? this.claimant : null;
  }

  /** `listener` is called when another process commits work, and once after each reconnection. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    if (!this.client && !this.connecting) void this.connect();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.disconnect();
    };
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }

  private async connect(): Promise<void> {
    if (this.closed || this.listeners.size === 0) return;
    this.connecting = true;
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: this.connectTimeoutMs, keepAlive: true, keepAliveInitialDelayMillis: 10_000, application_name: 'patient-docs-listen' });
    let lost = false;
    const onLost = (): void => {
      if (lost) return;
      lost = true;
      client.end().catch(() => undefined);
      if (this.client === client) this.client = undefined;
      if (!this.connecting) this.scheduleReconnect();
    };
    client.on('error', onLost);
    client.on('end', onLost);
    client.on('notification', (message) => {
      if (message.payload !== this.origin) this.notify();
    });
    try {
      await client.connect();
      // Another live process holding the same number (about one chance in 2^31 per pair) would
      // make this one's claims look alive after it died: another number is drawn then.
      for (;;) {
        const taken = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS locked', [CLAIMANT_LOCK, this.claimant]);
        if (taken.rows[0]?.locked) break;
        this.claimant = randomClaimant();
      }
      await client.query(`LISTEN ${WORK_CHANNEL}`);
      if (lost) throw new Error('the listening connection was lost while it was made');
      this.client = client;
      this.connecting = false;
      if (this.closed || this.listeners.size === 0) {
        this.disconnect();
        return;
      }
      this.connections += 1;
      if (this.connections > 1) {
        this.reconnects += 1;
        // Whatever was committed while no notification could arrive: one look now.
        this.notify();
      }
    } catch {
      this.connecting = false;
      onLost();
      this.scheduleReconnect();
    }
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retry || this.listeners.size === 0) return;
    // Counted as a connection made: the next one that works is a reconnection.
    this.connections = Math.max(this.connections, 1);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.connect();
    }, RECONNECT_MS);
    this.retry.unref();
  }

  private disconnect(): void {
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
    const client = this.client;
    this.client = undefined;
    client?.removeAllListeners('end');
    client?.removeAllListeners('error');
    client?.on('error', () => undefined);
    client?.end().catch(() => undefined);
  }

  close(): void {
    this.closed = true;
    this.disconnect();
  }
}

/** The statement that wakes the other instances at commit (call inside the transaction that made the work). */
export function notifyWork(origin: string): { sql: string; params: unknown[] } {
  return { sql: 'SELECT pg_notify($1, $2)', params: [WORK_CHANNEL, origin] };
}
