/**
 * Limits on token requests (DESIGN §3; docs/security.md "Tokens and connections"). Counted per
 * minute, in fixed windows:
 * - requests per (client, source): a runaway client is slowed down, while requests that merely
 *   name a client from elsewhere cannot use up its budget;
 * - failed secrets per source: one address guessing;
 * - failed secrets per client: many addresses guessing one client's secret. A (client, source)
 *   that obtained a token in the last day is exempt, so a guessing crowd cannot lock a working
 *   scanner PC out; a new address of that client waits out the window like everyone else.
 *
 * Keys are fixed-size (a digest of the client id, a source address or IPv6 /64), whatever a request
 * sends, and each table is a bounded LRU: memory stays bounded and every step is O(1). The limiter
 * sits behind TokenAttemptLimiter: on PostgreSQL, where several instances serve the same clients,
 * the same rules are counted in the database for all of them (db/postgres/token-limits.ts).
 */
import { createHash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

/** One token request, as the limiter sees it. */
export interface TokenAttempt {
  /** clientKey(client id): fixed-size, whatever the request sent. */
  client: string;
  /** sourceKey(address): the address, or its /64 for IPv6. */
  source: string;
}

export type AttemptOutcome = 'success' | 'failure';

export interface TokenAttemptLimiter {
  /** Before the secret is checked: 0 when the attempt may go on, else the seconds to wait. */
  admit(attempt: TokenAttempt): number | Promise<number>;
  /** After the secret was checked. */
  settle(attempt: TokenAttempt, outcome: AttemptOutcome): void | Promise<void>;
  /** Whether this client obtained a token from this source lately (its check goes ahead of a flood's). */
  familiar(attempt: TokenAttempt): boolean | Promise<boolean>;
}

export interface TokenLimits {
  /** Requests per (client, source) per window. */
  requestsPerClientAndSource: number;
  /** Failed secrets per source per window. */
  failuresPerSource: number;
  /** Failed secrets per client per window (sources with a recent success exempt). */
  failuresPerClient: number;
  windowMs?: number;
  /** Entries per table; the least recently used goes first. */
  capacity?: number;
}

export const WINDOW_MS = 60_000;
const CAPACITY = 20_000;
/** How long a (client, source) that obtained a token stays exempt from its client's failure limit. */
export const TRUSTED_FOR_MS = 24 * 3_600_000;

/** A digest of the client id: 22 characters whatever was sent (an 8 KB made-up id included). */
export function clientKey(clientId: string): string {
  return createHash('sha256').update(clientId).digest('base64url').slice(0, 22);
}

/**
 * The address a limit is counted for: an IPv4 address as is (IPv4-mapped IPv6 too), an IPv6
 * address by its /64, the block one subscriber usually holds whole.
 */
export function sourceKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return mapped[1];
  if (isIPv4(address) || !isIPv6(address)) return address.slice(0, 64);
  return `${ipv6Groups(address).slice(0, 4).join(':')}::/64`;
}

function ipv6Groups(address: string): string[] {
  const [head = '', tail] = address.split('%')[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = Math.max(0, 8 - left.length - right.length);
  return [...left, ...Array<string>(missing).fill('0'), ...right].map((group) => group.toLowerCase().replace(/^0+(?=.)/, ''));
}

/** A bounded map whose least recently touched entry goes when it is full (Map keeps insertion order). */
export class BoundedLru<V> {
  private readonly entries = new Map<string, V>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
  }
}

interface Window {
  start: number;
  count: number;
}

/** Fixed windows over a bounded LRU. */
class WindowCounter {
  private readonly windows: BoundedLru<Window>;

  constructor(
    private readonly windowMs: number,
    capacity: number,
  ) {
    this.windows = new BoundedLru(capacity);
  }

  /** The count in the current window, 0 when none. */
  count(key: string, time: number): number {
    const window = this.windows.get(key);
    return window && time - window.start < this.windowMs ? window.count : 0;
  }

  add(key: string, time: number): number {
    const window = this.windows.get(key);
    if (!window || time - window.start >= this.windowMs) {
      this.windows.set(key, { start: time, count: 1 });
      return 1;
    }
    window.count += 1;
    return window.count;
  }

  /** Seconds until the key's window ends (at least 1). */
  secondsLeft(key: string, time: number): number {
    const window = this.windows.get(key);
    return window ? Math.max(1, Math.ceil((window.start + this.windowMs - time) / 1000)) : 1;
  }

  get size(): number {
    return this.windows.size;
  }
}

/** The limiter of one server process. */
export class MemoryTokenLimiter implements TokenAttemptLimiter {
  private readonly requests: WindowCounter;
  private readonly sourceFailures: WindowCounter;
  private readonly clientFailures: WindowCounter;
  /** (client, source) → when it last obtained a token. */
  private readonly trusted: BoundedLru<number>;

  constructor(
    private readonly limits: TokenLimits,
    private readonly now: () => number = Date.now,
  ) {
    const windowMs = limits.windowMs ?? WINDOW_MS;
    const capacity = limits.capacity ?? CAPACITY;
    this.requests = new WindowCounter(windowMs, capacity);
    this.sourceFailures = new WindowCounter(windowMs, capacity);
    this.clientFailures = new WindowCounter(windowMs, capacity);
    this.trusted = new BoundedLru(capacity);
  }

  admit({ client, source }: TokenAttempt): number {
    const time = this.now();
    const pair = `${client}\n${source}`;
    if (this.requests.add(pair, time) > this.limits.requestsPerClientAndSource) return this.requests.secondsLeft(pair, time);
    if (this.sourceFailures.count(source, time) >= this.limits.failuresPerSource) return this.sourceFailures.secondsLeft(source, time);
    if (this.clientFailures.count(client, time) >= this.limits.failuresPerClient && !this.isTrusted(pair, time)) {
      return this.clientFailures.secondsLeft(client, time);
    }
    return 0;
  }

  settle({ client, source }: TokenAttempt, outcome: AttemptOutcome): void {
    const time = this.now();
    if (outcome === 'success') {
      this.trusted.set(`${client}\n${source}`, time);
      return;
    }
    this.sourceFailures.add(source, time);
    this.clientFailures.add(client, time);
  }

  familiar({ client, source }: TokenAttempt): boolean {
    return this.isTrusted(`${client}\n${source}`, this.now());
  }

  /** Entries held, all tables together (each bounded by the capacity). */
  get size(): number {
    return this.requests.size + this.sourceFailures.size + this.clientFailures.size + this.trusted.size;
  }

  private isTrusted(pair: string, time: number): boolean {
    const since = this.trusted.get(pair);
    return since !== undefined && time - since < TRUSTED_FOR_MS;
  }
}
