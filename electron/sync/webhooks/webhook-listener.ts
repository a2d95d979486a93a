/**
 * Receives the server's webhooks (SPEC §6, DESIGN §4). Binds loopback by default and serves one
 * path; the server reaches it through the public URL the user configured (e.g. a tunnel), never an
 * address the listener advertises. The `Signature` is checked over the exact raw bytes before
 * anything is parsed; duplicates are dropped by `messageId`, remembered in the journal across
 * restarts; the answer goes out at once and the event is handled afterwards, so a slow handler
 * never makes the server time out and redeliver.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { MESSAGE_RETENTION_MS } from '../journal/webhook-ledger.js';
import type { Journal } from '../journal/journal.js';

/** SPEC §6.2; only `messageId` and `eventType` are relied upon here. */
export interface WebhookMessage {
  messageId: string;
  eventType: string;
  source?: string;
  timestamp?: string;
  operationId?: string;
  organizationId?: string;
  patientId?: string;
  data?: unknown;
}

/** The part of the journal the listener needs. */
export type WebhookLedger = Pick<Journal, 'seenMessage' | 'recordWebhook'>;

export interface WebhookListenerOptions {
  host?: string;
  /** 0 picks a free port. */
  port: number;
  path?: string;
  /** Read on every delivery, so a rotated hmac takes effect without a restart. */
  getSecret: () => string | undefined;
  journal: WebhookLedger;
  maxBodyBytes?: number;
  onEvent: (message: WebhookMessage) => void | Promise<void>;
  /** A failing `onEvent` or an unexpected fault; the server has its answer already. */
  onError?: (error: unknown) => void;
  now?: () => number;
}

export interface WebhookListener {
  /** The local address, for diagnostics only: subscriptions use the configured public URL. */
  url: string;
  port: number;
  close(): Promise<void>;
}

export const DEFAULT_WEBHOOK_PATH = '/webhooks/patient-docs';
/** A real message is well under 2 KB (an event, ids, a patient's name); 64 KiB leaves room. */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;
/** The server opens at most 16 connections per callback; anything past this is not the server. */
export const MAX_CONNECTIONS = 64;
/** A client that trickles its request is cut off after this long. */
export const REQUEST_TIMEOUT_MS = 10_000;
/** The server sends its headers at once: a connection still without them after this long is closed. */
export const HEADERS_TIMEOUT_MS = 3_000;
/** An answered connection is kept for the sender's next delivery this long, no longer. */
export const KEEP_ALIVE_TIMEOUT_MS = 2_000;
/** The start of the reason a delivery whose time is too far off is refused with (a replay, or a clock that is wrong). */
export const STALE_TIMESTAMP_REASON = 'replay or wrong clock: webhook-timestamp is more than 5 minutes off';

/** "42 minutes ahead of this computer's clock", for a person checking the clock. */
function describeOffset(offMs: number): string {
  const minutes = Math.round(Math.abs(offMs) / 60_000);
  const amount = minutes >= 120 ? `${Math.round(minutes / 60)} hours` : `${minutes} minutes`;
  return `the delivery's time is ${amount} ${offMs > 0 ? 'ahead of' : 'behind'} this computer's clock`;
}

/** Standard Webhooks: a delivery whose timestamp is further off than this is a replay. */
export const TIMESTAMP_TOLERANCE_MS = 5 * 60 * 1000;

const HMAC_SHA512_HEX_LENGTH = 128;

type Outcome = { status: number; reason?: string };

export async function startWebhookListener(options: WebhookListenerOptions): Promise<WebhookListener> {
  const host = options.host ?? '127.0.0.1';
  const path = options.path ?? DEFAULT_WEBHOOK_PATH;
  // Anyone who can reach the port (through the tunnel: anyone) may connect, before any signature
  // is checked: so memory per connection is capped by the body limit, connections by their number,
  // and time by the timeouts, which Node checks every connectionsCheckingInterval (30 s by default).
  const server = createServer(
    { requestTimeout: REQUEST_TIMEOUT_MS, headersTimeout: HEADERS_TIMEOUT_MS, keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS, connectionsCheckingInterval: 1000 },
    (request, response) => {
      handle(request, response, options, path).catch((error: unknown) => {
        options.onError?.(error);
        if (!response.headersSent) answer(response, { status: 500, reason: 'internal error' });
      });
    },
  );
  capConnections(server, MAX_CONNECTIONS);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}${path}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/**
 * At most `limit` connections. A connection that sends nothing must not keep the server's delivery
 * out (a cap held by idle sockets is a listener held shut), so past the cap the oldest connection
 * without a request in progress makes room for the new one; only when every connection is in the
 * middle of a request is the new one dropped (those end within the request time-out).
 */
function capConnections(server: Server, limit: number): void {
  /** Every open connection, oldest first, and whether a request on it is being answered. */
  const open = new Map<Socket, { busy: boolean }>();
  server.on('connection', (socket: Socket) => {
    if (open.size >= limit) {
      const idle = [...open].find(([, state]) => !state.busy)?.[0];
      if (!idle) return void socket.destroy();
      open.delete(idle);
      idle.destroy();
    }
    open.set(socket, { busy: false });
    socket.once('close', () => open.delete(socket));
  });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const state = open.get(request.socket);
    if (!state) return;
    state.busy = true;
    response.once('close', () => {
      state.busy = false;
    });
  });
}

async function handle(request: IncomingMessage, response: ServerResponse, options: WebhookListenerOptions, path: string): Promise<void> {
  const requested = (request.url ?? '').split('?')[0]!;
  // Recorded: a tunnel forwarding to another path is a misconfiguration the user must be able to see.
  if (requested !== path) return refuse(response, options, { status: 404, reason: `not found: ${request.method ?? ''} ${requested.slice(0, 200)} (this listener serves ${path})` });
  if (request.method !== 'POST') {
    response.setHeader('allow', 'POST');
    return answer(response, { status: 405, reason: 'only POST is accepted' });
  }
  const body = await readBody(request, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
  if (body === undefined) return refuse(response, options, { status: 413, reason: 'body is larger than allowed' });

  const secret = options.getSecret();
  const refusal = checkSignature(request, body, secret) ?? checkStandardHeaders(request, body, secret ?? '', options.now ?? Date.now);
  if (refusal) return refuse(response, options, refusal);

  const message = parseMessage(body);
  if (typeof message === 'string') return refuse(response, options, { status: 400, reason: message });
  // A verified webhook-signature already proves this attempt is fresh (a redrive of an old event
  // included); without one, the event's own time must fall within the dedupe window.
  const signedAttempt = request.headers['webhook-signature'] !== undefined;
  const stale = signedAttempt ? undefined : checkAge(message, options.now ?? Date.now);
  if (stale) return refuse(response, options, stale, message);

  if (options.journal.seenMessage(message.messageId)) {
    options.journal.recordWebhook({ verdict: 'duplicate', ...identify(message) });
    return answer(response, { status: 200 });
  }
  // Remembered before the answer: a redelivery racing this one is then a duplicate.
  options.journal.recordWebhook({ verdict: 'accepted', ...identify(message) });
  answer(response, { status: 200 });
  setImmediate(() => {
    Promise.resolve()
      .then(() => options.onEvent(message))
      .catch((error: unknown) => options.onError?.(error));
  });
}

/** The raw bytes, or undefined once they exceed the cap (the rest is read and dropped). */
function readBody(request: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  const declared = Number(request.headers['content-length']);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = Number.isFinite(declared) && declared > maxBytes;
    if (tooLarge) resolve(undefined);
    request.on('data', (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size <= maxBytes) return void chunks.push(chunk);
      tooLarge = true;
      resolve(undefined);
    });
    request.on('end', () => {
      if (!tooLarge) resolve(Buffer.concat(chunks));
    });
    request.on('error', reject);
  });
}

/** SPEC §6.3: lowercase or uppercase hex of HMAC-SHA512 over exactly the bytes received. */
function checkSignature(request: IncomingMessage, body: Buffer, secret: string | undefined): Outcome | undefined {
  if (!secret) return { status: 401, reason: 'no webhook secret is configured' };
  const header = request.headers['signature'];
  if (typeof header !== 'string' || header.length === 0) return { status: 401, reason: 'Signature header is missing' };
  const expected = createHmac('sha512', secret).update(body).digest();
  const given = header.trim().toLowerCase();
  const wellFormed = given.length === HMAC_SHA512_HEX_LENGTH && /^[0-9a-f]+$/.test(given);
  if (!wellFormed || !timingSafeEqual(Buffer.from(given, 'hex'), expected)) {
    return { status: 401, reason: 'Signature does not match' };
  }
  return undefined;
}

/**
 * Standard Webhooks headers, when the sender adds them (the bundled server does, see
 * docs/webhooks.md): `webhook-timestamp` (seconds) must be within five minutes of now, and
 * `webhook-signature` signs `<webhook-id>.<webhook-timestamp>.<body>`, so a recorded delivery
 * played back later, or with a forged fresh timestamp, is refused.
 */
function checkStandardHeaders(request: IncomingMessage, body: Buffer, secret: string, now: () => number): Outcome | undefined {
  const id = request.headers['webhook-id'];
  const timestamp = request.headers['webhook-timestamp'];
  const signatures = request.headers['webhook-signature'];
  if (id === undefined && timestamp === undefined && signatures === undefined) return undefined;
  if (typeof id !== 'string' || id.length === 0) return { status: 401, reason: 'webhook-id header is missing' };
  if (typeof timestamp !== 'string' || !/^\d+$/.test(timestamp)) return { status: 401, reason: 'webhook-timestamp header is missing or not a number' };
  const offMs = Number(timestamp) * 1000 - now();
  if (Math.abs(offMs) > TIMESTAMP_TOLERANCE_MS) {
    return { status: 401, reason: `${STALE_TIMESTAMP_REASON} (${describeOffset(offMs)})` };
  }
  if (signatures === undefined) return undefined;
  const expected = createHmac('sha256', standardWebhooksKey(secret))
    .update(`${id}.${timestamp}.`)
    .update(body)
    .digest();
  // A space-separated list (`v1,<base64> v1,<base64>`) while a sender rotates keys.
  const matches = String(signatures)
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .some((entry) => {
      const given = Buffer.from(entry.slice(3), 'base64');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
  return matches ? undefined : { status: 401, reason: 'webhook-signature does not match' };
}

/**
 * The Standard Webhooks key, as the server derives it: a `whsec_<base64>` hmac means the decoded
 * bytes, any other hmac its UTF-8 bytes (the server code cannot be imported across layers).
 */
function standardWebhooksKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
}

function parseMessage(body: Buffer): WebhookMessage | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return 'body is not JSON';
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return 'body is not a JSON object';
  const candidate = parsed as Record<string, unknown>;
  if (typeof candidate.messageId !== 'string' || candidate.messageId.length === 0) return 'messageId is missing';
  if (typeof candidate.eventType !== 'string' || candidate.eventType.length === 0) return 'eventType is missing';
  return candidate as unknown as WebhookMessage;
}

/** Message ids are remembered for a limited time; anything older could slip past the dedupe. */
function checkAge(message: WebhookMessage, now: () => number): Outcome | undefined {
  if (message.timestamp === undefined) return undefined;
  const at = Date.parse(message.timestamp);
  if (Number.isNaN(at)) return { status: 400, reason: 'timestamp is not a date' };
  if (now() - at > MESSAGE_RETENTION_MS) return { status: 400, reason: 'message is older than the deduplication window' };
  return undefined;
}

function identify(message: WebhookMessage): { messageId: string; eventType: string; patientId?: string } {
  const { messageId, eventType, patientId } = message;
  return typeof patientId === 'string' ? { messageId, eventType, patientId } : { messageId, eventType };
}

function refuse(response: ServerResponse, options: WebhookListenerOptions, outcome: Outcome, message?: WebhookMessage): void {
  options.journal.recordWebhook({
    verdict: 'rejected',
    reason: outcome.reason ?? `status ${outcome.status}`,
    ...(message ? identify(message) : {}),
  });
  answer(response, outcome);
}

function answer(response: ServerResponse, outcome: Outcome): void {
  const body = JSON.stringify(outcome.status < 300 ? { received: true } : { error: outcome.reason ?? 'refused' });
  response.writeHead(outcome.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...(outcome.status === 413 ? { connection: 'close' } : {}),
  });
  response.end(body);
}
