/**
 * The headless twin of the Electron bridge (shared/bridge-http.ts): `POST /bridge/call/<method>`
 * with the per-launch token, Server-Sent Events at `/bridge/events`, and the UI's static files.
 * Loopback only; the Host header is checked so a web page elsewhere cannot reach it through DNS
 * rebinding, and every call needs the token, which only the printed URL's fragment carries.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { timingSafeEqual } from 'node:crypto';
import type { BridgeEvent } from '../../shared/bridge.js';
import { BRIDGE_CALL_PREFIX, BRIDGE_EVENTS_PATH, LAUNCH_TOKEN_PARAM } from '../../shared/bridge-http.js';
import type { BridgeDispatcher } from '../sync/app/bridge-service.js';

export interface BridgeHttpServerOptions {
  serverContent?: ServerContentSource;
  dispatcher: BridgeDispatcher;
  token: string;
  /** Subscribes to events; returns the unsubscribe function. */
  subscribe: (listener: (event: BridgeEvent) => void) => () => void;
  /** Events a new page needs at once (status, pairs). */
  initialEvents: () => Promise<BridgeEvent[]>;
  /** The built renderer (index.html and assets), when there is one. */
  rendererDir: string | null;
  /** The page served when there is no built renderer. */
  fallbackPage: string;
  host?: string;
  port?: number;
}

/** Signed links of the server, read through the engine (see ShellActions.contentUrl). */
export const SERVER_CONTENT_PATH = '/server-content';

export interface ServerContentSource {
  /** A token of its own (in the link's query, since an <img> sends no header): grants this route only. */
  token: string;
  /** The link opened by the engine, or null when it is not a link of the connected server. */
  open(url: string): Promise<{ status: number; headers: Record<string, string>; body: NodeJS.ReadableStream } | null>;
}

export interface BridgeHttpServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

const MAX_CALL_BYTES = 1024 * 1024;
const HEARTBEAT_MS = 15_000;
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.wasm': 'application/wasm',
  '.map': 'application/json',
};

/**
 * What every relayed answer carries: nothing in it is sniffed or runs on this origin, and the UI
 * may read it from its own origin (the desktop window's file:// page reads previews with fetch),
 * as it may read the server's signed links: the relay's token in the address is the capability.
 */
const RELAYED_CONTENT_SAFETY = { 'x-content-type-options': 'nosniff', 'content-security-policy': "sandbox; default-src 'none'", 'access-control-allow-origin': '*' };

export async function startBridgeHttpServer(options: BridgeHttpServerOptions): Promise<BridgeHttpServer> {
  const host = options.host ?? '127.0.0.1';
  const clients = new Set<ServerResponse>();
  const server: Server = createServer((request, response) => {
    handle(request, response).catch(() => {
      if (!response.headersSent) send(response, 500, 'text/plain; charset=utf-8', 'internal error');
      else response.destroy();
    });
  });

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const address = server.address() as AddressInfo;
    if (!allowedHost(request.headers.host, address.port)) return send(response, 421, 'text/plain; charset=utf-8', 'wrong host');
    const url = parsedUrl(request.url ?? '/', `http://${host}`);
    if (!url) return send(response, 400, 'text/plain; charset=utf-8', 'malformed request URL');
    if (url.pathname.startsWith(BRIDGE_CALL_PREFIX)) return call(request, response, url.pathname.slice(BRIDGE_CALL_PREFIX.length));
    if (url.pathname === BRIDGE_EVENTS_PATH) return events(request, response, url.searchParams.get(LAUNCH_TOKEN_PARAM));
    if (url.pathname === SERVER_CONTENT_PATH) return content(request, response, url);
    if (request.method !== 'GET' && request.method !== 'HEAD') return send(response, 405, 'text/plain; charset=utf-8', 'method not allowed');
    return staticFile(response, url.pathname);
  };

  const content = async (request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> => {
    const source = options.serverContent;
    if (!source || !tokenMatches(url.searchParams.get('t') ?? undefined, source.token)) return send(response, 401, 'text/plain; charset=utf-8', 'content token missing or wrong');
    if (request.method !== 'GET' && request.method !== 'HEAD') return send(response, 405, 'text/plain; charset=utf-8', 'method not allowed');
    let target: URL;
    try {
      target = new URL(url.searchParams.get('url') ?? '');
    } catch {
      return send(response, 400, 'text/plain; charset=utf-8', 'url is not an address');
    }
    // The link goes on exactly as the server signed it: the server refuses any parameter added to it.
    let opened: Awaited<ReturnType<ServerContentSource['open']>>;
    try {
      opened = await source.open(target.toString());
    } catch (error) {
      return send(response, 502, 'text/plain; charset=utf-8', `the server could not be read: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!opened) return send(response, 403, 'text/plain; charset=utf-8', 'not a link of the connected server');
    // Served on the UI's own origin: whatever the bytes are, they run nothing here (a file is read
    // by the UI's fetch or shown as an image, never rendered as a page of this origin).
    response.writeHead(opened.status, { ...opened.headers, 'cache-control': 'private, no-store', ...RELAYED_CONTENT_SAFETY });
    if (request.method === 'HEAD') {
      (opened.body as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
      response.end();
      return;
    }
    await pipeline(opened.body, response).catch(() => response.destroy());
  };

  const call = async (request: IncomingMessage, response: ServerResponse, method: string): Promise<void> => {
    if (request.method !== 'POST') return send(response, 405, 'text/plain; charset=utf-8', 'POST only');
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (!tokenMatches(bearer, options.token)) return send(response, 401, 'application/json', JSON.stringify({ error: 'launch token missing or wrong' }));
    const body = await readBody(request);
    let args: unknown;
    try {
      args = body === null ? undefined : JSON.parse(body.length ? body : '[]');
    } catch {
      args = undefined;
    }
    const name = decodedOrNull(method);
    const refusal = body === null ? 'the body is too large' : args === undefined ? 'the body is not JSON' : name === null ? 'the method name is not valid percent-encoding' : undefined;
    const envelope = refusal
      ? { ok: false, error: { code: 'INVALID_INPUT', message: 'The request was not valid.', detail: refusal } }
      : await options.dispatcher.call(name!, args);
    // After an oversized body the connection is not reused: the caller's next call gets a fresh one.
    send(response, 200, 'application/json', JSON.stringify(envelope), body === null ? { connection: 'close' } : {});
  };

  const events = async (request: IncomingMessage, response: ServerResponse, token: string | null): Promise<void> => {
    if (!tokenMatches(token ?? undefined, options.token)) return send(response, 401, 'text/plain; charset=utf-8', 'launch token missing or wrong');
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    response.write(': connected\n\n');
    clients.add(response);
    const push = (event: BridgeEvent) => response.write(`data: ${JSON.stringify(event)}\n\n`);
    const unsubscribe = options.subscribe(push);
    const heartbeat = setInterval(() => response.write(': keep-alive\n\n'), HEARTBEAT_MS);
    request.on('close', () => {
      clearInterval(heartbeat);
      unsubscribe();
      clients.delete(response);
    });
    for (const event of await options.initialEvents()) push(event);
  };

  const staticFile = async (response: ServerResponse, pathname: string): Promise<void> => {
    const security = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY' };
    if (!options.rendererDir) {
      if (pathname !== '/' && pathname !== '/index.html') return send(response, 404, 'text/plain; charset=utf-8', 'not found');
      return send(response, 200, 'text/html; charset=utf-8', options.fallbackPage, security);
    }
    const root = options.rendererDir;
    const relative = decodedOrNull(pathname === '/' ? '/index.html' : pathname);
    if (relative === null) return send(response, 400, 'text/plain; charset=utf-8', 'malformed request path');
    const file = path.resolve(root, `.${path.posix.normalize(relative)}`);
    if (file !== root && !file.startsWith(root + path.sep)) return send(response, 404, 'text/plain; charset=utf-8', 'not found');
    const info = await stat(file).catch(() => undefined);
    // Unknown paths get the app (client-side routes); missing assets stay 404.
    const target = info?.isFile() ? file : path.extname(relative) === '' ? path.join(root, 'index.html') : null;
    if (!target) return send(response, 404, 'text/plain; charset=utf-8', 'not found');
    response.writeHead(200, {
      'content-type': CONTENT_TYPES[path.extname(target)] ?? 'application/octet-stream',
      'cache-control': target.includes(`${path.sep}assets${path.sep}`) ? 'public, max-age=31536000, immutable' : 'no-store',
      ...security,
    });
    createReadStream(target).pipe(response);
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    port,
    close: async () => {
      for (const client of clients) client.end();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function parsedUrl(target: string, base: string): URL | null {
  try {
    return new URL(target, base);
  } catch {
    return null;
  }
}

function decodedOrNull(component: string): string | null {
  try {
    return decodeURIComponent(component);
  } catch {
    return null;
  }
}

function allowedHost(header: string | undefined, port: number): boolean {
  return header === `127.0.0.1:${port}` || header === `localhost:${port}` || header === `[::1]:${port}`;
}

function tokenMatches(given: string | undefined, expected: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The body as text, or null when it is larger than allowed. An oversized body is still read to
 * its end (and dropped), so the answer reaches the caller instead of a reset mid-upload.
 */
async function readBody(request: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size <= MAX_CALL_BYTES) chunks.push(chunk as Buffer);
  }
  return size > MAX_CALL_BYTES ? null : Buffer.concat(chunks).toString('utf8');
}

function send(response: ServerResponse, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store', ...headers });
  response.end(body);
}
