/**
 * One HTTPS POST to a callback, connected to an address the guard already approved: the socket
 * goes to that IP while TLS still verifies the callback's host name (SNI and certificate check).
 * Connections are kept alive in an undici Pool per (callback origin, pinned address): as many
 * connections as the per-callback limit, one request at a time on each (no pipelining).
 * Redirects are never followed: a 3xx is simply not a 2xx.
 */
import { isIP } from 'node:net';
import { Pool, type Dispatcher } from 'undici';
import { deliveryHeaders } from './signer.js';
import type { ResolvedAddress } from './ssrf.js';

export interface SendRequest {
  url: URL;
  address: ResolvedAddress;
  body: string;
  headers: Record<string, string>;
  /**
   * Signs the body as a webhook message (Signature and the Standard Webhooks headers, added to
   * `headers`) where the request is sent: with a ThreadedSender, the HMACs run off the main thread.
   */
  signing?: { messageId: string; hmac: string; attemptAtMs: number };
  timeoutMs: number;
}

export interface SendResult {
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  /**
   * When the answer (or the failure) came, epoch milliseconds, where the request was sent: the
   * attempt's end, from which its retry delay counts, without the hop back from a sending thread.
   */
  answeredAt?: number;
}

export type Sender = (request: SendRequest) => Promise<SendResult>;

/** Response bodies are read (so the connection can be reused) but never kept; beyond this the connection is dropped. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** A pool unused for this long is closed (its address may have been re-resolved to another one). */
const POOL_IDLE_MS = 60_000;

interface PoolEntry {
  pool: Pool;
  lastUsed: number;
}

export class HttpsSender {
  private readonly pools = new Map<string, PoolEntry>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: { maxSocketsPerHost: number; maxSockets: number; /** Extra trusted CAs (tests); the system store and NODE_EXTRA_CA_CERTS otherwise. */ ca?: string | Buffer }) {
    this.sweeper = setInterval(() => this.sweep(), POOL_IDLE_MS);
    this.sweeper.unref();
  }

  /** The pool of one (callback origin, pinned address): the origin is the IP, TLS checks the callback's host name. */
  private poolFor(url: URL, address: ResolvedAddress): Pool {
    // https, or plain http to a loopback listener (ssrf.ts parseCallback allows nothing else).
    const port = url.port || (url.protocol === 'http:' ? '80' : '443');
    const key = `${url.protocol}|${url.host}|${address.address}|${port}`;
    const entry = this.pools.get(key);
    if (entry) {
      entry.lastUsed = performance.now();
      return entry.pool;
    }
    const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const ip = address.family === 6 ? `[${address.address}]` : address.address;
    const pool = new Pool(`${url.protocol === 'http:' ? 'http' : 'https'}://${ip}:${port}`, {
      connections: this.options.maxSocketsPerHost,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      maxResponseSize: MAX_RESPONSE_BYTES,
      // The certificate is checked against the callback's host name (an IP literal callback is checked against the IP).
      connect: { servername: isIP(hostname) === 0 ? hostname : undefined, rejectUnauthorized: true, ...(this.options.ca === undefined ? {} : { ca: this.options.ca }) },
    });
    this.pools.set(key, { pool, lastUsed: performance.now() });
    return pool;
  }

  private sweep(): void {
    const cutoff = performance.now() - POOL_IDLE_MS;
    for (const [key, entry] of this.pools) {
      if (entry.lastUsed >= cutoff) continue;
      this.pools.delete(key);
      entry.pool.close().catch(() => undefined);
    }
  }

  /**
   * A request may first wait in its callback's pool for a free connection (the dispatcher hands a
   * few ahead). The timeout and the latency count from when a connection takes it; the wait itself
   * is bounded by twice the timeout, since every request ahead of it ends within one.
   */
  send: Sender = (request) =>
    new Promise<SendResult>((resolve) => {
      const handedAt = performance.now();
      let sentAt: number | undefined;
      let settled = false;
      let statusCode: number | null = null;
      let abort: ((reason?: Error) => void) | undefined;
      const finish = (status: number | null, error: string | null): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ statusCode: status, latencyMs: Math.round(performance.now() - (sentAt ?? handedAt)), error, answeredAt: Date.now() });
      };
      const expire = (reason: string): void => {
        finish(null, reason);
        abort?.(new Error('webhook timeout'));
      };
      let timer = setTimeout(() => expire(`no connection to the callback was made (connect and TLS handshake) or free within ${2 * request.timeoutMs} ms`), 2 * request.timeoutMs);
      const headers: string[] = ['host', request.url.host];
      for (const name in request.headers) headers.push(name, request.headers[name]!);
      if (request.signing) {
        const { messageId, hmac, attemptAtMs } = request.signing;
        const signed = deliveryHeaders(messageId, request.body, hmac, new Date(attemptAtMs));
        for (const name in signed) headers.push(name, signed[name]!);
      }
      let pool: Pool;
      try {
        pool = this.poolFor(request.url, request.address);
      } catch (error) {
        finish(null, describeError(error as NodeJS.ErrnoException));
        return;
      }
      let received = 0;
      const handler: Dispatcher.DispatchHandlers = {
        onConnect: (abortRequest) => {
          abort = abortRequest;
          if (settled) {
            abortRequest(new Error('webhook timeout'));
            return;
          }
          if (sentAt !== undefined) return;
          sentAt = performance.now();
          clearTimeout(timer);
          timer = setTimeout(() => expire(`no response within ${request.timeoutMs} ms`), request.timeoutMs);
        },
        onHeaders: (status) => {
          statusCode = status;
          return true;
        },
        onData: (chunk) => {
          received += chunk.length;
          if (received > MAX_RESPONSE_BYTES) {
            // The answer is known; an oversized body only costs the connection.
            finish(statusCode, null);
            abort?.(new Error('response body too large'));
          }
          return true;
        },
        onComplete: () => finish(statusCode, null),
        onError: (error) => finish(statusCode, statusCode === null ? describeError(error as NodeJS.ErrnoException) : null),
      };
      pool.dispatch(
        {
          path: `${request.url.pathname}${request.url.search}`,
          method: 'POST',
          headers,
          body: request.body,
          headersTimeout: request.timeoutMs + 1000,
          bodyTimeout: request.timeoutMs + 1000,
        },
        handler,
      );
    });

  close(): void {
    clearInterval(this.sweeper);
    for (const entry of this.pools.values()) entry.pool.destroy().catch(() => undefined);
    this.pools.clear();
  }
}

function describeError(error: NodeJS.ErrnoException): string {
  const code = error.code ? `${error.code}: ` : '';
  return `${code}${error.message}`.slice(0, 500);
}
