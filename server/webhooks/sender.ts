/**
 * One HTTPS POST to a callback, connected to an address the guard already approved: the socket
 * goes to that IP while TLS still verifies the callback's host name (SNI and certificate check).
 * Keep-alive sockets are pooled per (address, port, host name). Redirects are never followed:
 * a 3xx is simply not a 2xx.
 */
import https from 'node:https';
import { isIP } from 'node:net';
import type { ResolvedAddress } from './ssrf.js';

export interface SendRequest {
  url: URL;
  address: ResolvedAddress;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
}

export interface SendResult {
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

export type Sender = (request: SendRequest) => Promise<SendResult>;

/** Response bodies are read (so the socket can be reused) but never kept; beyond this the socket is dropped. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export class HttpsSender {
  readonly agent: https.Agent;

  constructor(options: { maxSocketsPerHost: number; maxSockets: number }) {
    this.agent = new https.Agent({ keepAlive: true, maxSockets: options.maxSocketsPerHost, maxTotalSockets: options.maxSockets, scheduling: 'lifo' });
  }

  send: Sender = (request) =>
    new Promise<SendResult>((resolve) => {
      const started = performance.now();
      let settled = false;
      const finish = (statusCode: number | null, error: string | null): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ statusCode, latencyMs: Math.round(performance.now() - started), error });
      };
      const hostname = request.url.hostname.replace(/^\[(.*)\]$/, '$1');
      const req = https.request({
        method: 'POST',
        host: request.address.address,
        family: request.address.family,
        port: request.url.port || 443,
        path: `${request.url.pathname}${request.url.search}`,
        servername: isIP(hostname) === 0 ? hostname : '',
        agent: this.agent,
        headers: { ...request.headers, host: request.url.host, 'content-length': String(Buffer.byteLength(request.body, 'utf8')) },
      });
      const timer = setTimeout(() => {
        finish(null, `no response within ${request.timeoutMs} ms`);
        req.destroy();
      }, request.timeoutMs);
      req.on('response', (response) => {
        let received = 0;
        response.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > MAX_RESPONSE_BYTES) response.destroy();
        });
        response.on('end', () => finish(response.statusCode ?? null, null));
        response.on('close', () => finish(response.statusCode ?? null, null));
        response.on('error', () => finish(response.statusCode ?? null, null));
      });
      req.on('error', (error: NodeJS.ErrnoException) => finish(null, describeError(error)));
      // A string body goes out with the headers in one write (one TLS record), a Buffer in two.
      req.end(request.body, 'utf8');
    });

  close(): void {
    this.agent.destroy();
  }
}

function describeError(error: NodeJS.ErrnoException): string {
  const code = error.code ? `${error.code}: ` : '';
  return `${code}${error.message}`.slice(0, 500);
}
