/**
 * What a connection may hold of the server (docs/security.md "Tokens and connections"):
 * - its request headers arrive within PATIENT_DOCS_HEADERS_TIMEOUT (Node's headersTimeout, checked
 *   every second: httpServerOptions);
 * - a request body keeps moving: at least PATIENT_DOCS_BODY_MIN_RATE bytes per second, averaged over
 *   each PATIENT_DOCS_BODY_RATE_WINDOW, or it is answered 408 and closed. A rate, not a total time:
 *   an upload of any size that keeps moving at a modest rate is never cut, while a body trickled a
 *   byte at a time cannot hold a request (and its memory) open for long. Time the server itself
 *   spends not reading (a slow disk, a busy database) never counts against the client;
 * - at most PATIENT_DOCS_MAX_CONNECTIONS_PER_ADDRESS connections per client address (IPv6: per /64);
 *   the reverse proxies of PATIENT_DOCS_TRUSTED_PROXIES are not limited (they carry everyone's);
 * - an answer given before the body has all arrived keeps the connection while the rest of the body
 *   is read and thrown away (at most 30 s), so a proxy still sending it gets the answer, not a reset.
 */
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import { BlockList, isIPv6, type Socket } from 'node:net';
import { buildProblem, PROBLEM_CONTENT_TYPE } from '../shared/problem.js';
import { sourceKey } from './identity/rate-limit.js';

export interface ConnectionLimits {
  headersTimeoutMs: number;
  bodyMinBytesPerSecond: number;
  bodyRateWindowMs: number;
  maxConnectionsPerAddress: number;
  /** Addresses or CIDR ranges exempt from the per-address cap. */
  trustedProxies: readonly string[];
}

/** Node's own limits, given when the server is created. */
export function httpServerOptions(limits: ConnectionLimits): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    // Node checks headersTimeout at this interval (30 s by default, which would triple a 10 s limit).
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
  };
}

/** How often bodies in flight are looked at. */
function tickMs(windowMs: number): number {
  return Math.max(50, Math.min(1000, Math.floor(windowMs / 4)));
}

interface BodyWatch {
  request: IncomingMessage;
  response: ServerResponse;
  /** socket.bytesRead and the time at the start of the current window. */
  bytes: number;
  since: number;
}

function hasBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Answers 408 (when nothing was answered yet) and closes the connection. */
function cutOff(watch: BodyWatch, typeBase: string, minBytesPerSecond: number, windowMs: number): void {
  const { request, response } = watch;
  const socket = request.socket;
  if (!response.headersSent && socket.writable) {
    const detail = `the request body arrived slower than ${minBytesPerSecond} bytes per second over ${windowMs / 1000} s; the connection was closed`;
    const body = JSON.stringify(buildProblem({ status: 408, detail, instance: request.url?.split('?')[0] ?? '/', typeBase }));
    response.writeHead(408, { 'Content-Type': PROBLEM_CONTENT_TYPE, 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
    response.end(body, () => socket.destroy());
    // A client that does not read the answer either is not waited for.
    setTimeout(() => socket.destroy(), 1000).unref();
    return;
  }
  socket.destroy();
}

/** Cuts off request bodies that stop moving; returns what stops watching. */
export function watchRequestBodies(server: Server, limits: Pick<ConnectionLimits, 'bodyMinBytesPerSecond' | 'bodyRateWindowMs'>, typeBase: string, now: () => number = Date.now): () => void {
  const watches = new Set<BodyWatch>();
  const onRequest = (request: IncomingMessage, response: ServerResponse): void => {
    if (!hasBody(request) || request.complete) return;
    watches.add({ request, response, bytes: request.socket.bytesRead, since: now() });
  };
  const period = tickMs(limits.bodyRateWindowMs);
  let lastTick = now();
  const tick = (): void => {
    const time = now();
    // The process itself was held up (stopped, or its event loop blocked): the bytes that came
    // meanwhile have not been read yet, so every window starts again from here.
    const heldUp = time - lastTick > 2 * period + 1000;
    lastTick = time;
    for (const watch of watches) {
      const { request } = watch;
      const socket = request.socket;
      // Watched until the body is in, even when answered early (a 401 before the body): Node reads
      // the rest of it to keep the connection, and a trickle must not hold it there either.
      if (request.complete || request.destroyed || socket.destroyed) {
        watches.delete(watch);
        continue;
      }
      // Bytes received that the server has not read yet: the wait is the server's, not the client's.
      if (heldUp || request.readableLength > 0 || socket.readableLength > 0) {
        watch.bytes = socket.bytesRead;
        watch.since = time;
        continue;
      }
      const elapsed = time - watch.since;
      if (elapsed < limits.bodyRateWindowMs) continue;
      const received = socket.bytesRead - watch.bytes;
      if (received < (limits.bodyMinBytesPerSecond * elapsed) / 1000) {
        watches.delete(watch);
        cutOff(watch, typeBase, limits.bodyMinBytesPerSecond, limits.bodyRateWindowMs);
        continue;
      }
      watch.bytes = socket.bytesRead;
      watch.since = time;
    }
  };
  server.on('request', onRequest);
  const timer = setInterval(tick, period);
  timer.unref();
  return () => {
    clearInterval(timer);
    server.off('request', onRequest);
    watches.clear();
  };
}

/** How long the rest of a body answered early is read and thrown away, at most. */
export const LINGER_AFTER_EARLY_ANSWER_MS = 30_000;

/**
 * An answer given before the request's body has all arrived (a 413 for a declared size, a 401 before
 * an upload, a tus piece refused) keeps the connection while the rest of the body is read and thrown
 * away, for at most `lingerMs`, then closes it if the client asked for that (`Connection: close`, as
 * nginx sends to its upstreams). Closed at once instead, the connection would be reset under a
 * client still sending: nginx with request buffering off then fails its write and answers 502 in
 * place of the server's answer, and its client takes a permanent refusal for a transient fault.
 * Called as the answer's headers go out; a body that stops moving is still cut off by
 * watchRequestBodies. Returns whether it lingers: the answer must then not carry its own
 * `Connection: close` (Node would close at once on it), the linger closes when the body is in.
 */
export function lingerAfterEarlyAnswer(request: IncomingMessage, response: ServerResponse, lingerMs = LINGER_AFTER_EARLY_ANSWER_MS): boolean {
  if (request.complete || response.headersSent || !hasBody(request)) return false;
  const socket = request.socket;
  const askedToClose = !response.shouldKeepAlive;
  // Node would close the connection as soon as the answer is out, with the body still arriving.
  response.shouldKeepAlive = true;
  const bound = setTimeout(() => socket.destroy(), lingerMs);
  bound.unref();
  let answered = false;
  let bodyIn = false;
  const settle = (): void => {
    if (!answered || !bodyIn) return;
    clearTimeout(bound);
    if (askedToClose) socket.end();
  };
  request.once('end', () => {
    bodyIn = true;
    settle();
  });
  socket.once('close', () => clearTimeout(bound));
  response.once('finish', () => {
    answered = true;
    if (request.complete) bodyIn = true;
    // Read on, whether or not a parser had begun reading it: what arrives is thrown away.
    else request.resume();
    settle();
  });
  return true;
}

function proxyList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const type = isIPv6(address) ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return list;
}

/** Closes a new connection at once when its address already holds the maximum; returns what stops it. */
export function capConnectionsPerAddress(server: Server, limits: Pick<ConnectionLimits, 'maxConnectionsPerAddress' | 'trustedProxies'>): () => void {
  const proxies = proxyList(limits.trustedProxies);
  const open = new Map<string, number>();
  const isProxy = (address: string): boolean => {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    return mapped ? proxies.check(mapped, 'ipv4') || proxies.check(address, 'ipv6') : proxies.check(address, isIPv6(address) ? 'ipv6' : 'ipv4');
  };
  const onConnection = (socket: Socket): void => {
    const address = socket.remoteAddress;
    if (address === undefined || isProxy(address)) return;
    const key = sourceKey(address);
    const count = (open.get(key) ?? 0) + 1;
    if (count > limits.maxConnectionsPerAddress) {
      socket.destroy();
      return;
    }
    open.set(key, count);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left <= 0) open.delete(key);
      else open.set(key, left);
    });
  };
  server.on('connection', onConnection);
  return () => server.off('connection', onConnection);
}
