import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openJournal } from '../journal/open-journal.js';
import type { Journal } from '../journal/journal.js';
import { DEFAULT_MAX_BODY_BYTES, DEFAULT_WEBHOOK_PATH, HEADERS_TIMEOUT_MS, MAX_CONNECTIONS, REQUEST_TIMEOUT_MS, startWebhookListener } from './webhook-listener.js';
import type { WebhookListener, WebhookListenerOptions, WebhookMessage } from './webhook-listener.js';

const HMAC = 'subscription-hmac-secret';

function sign(body: string, secret = HMAC): string {
  return createHmac('sha512', secret).update(body).digest('hex');
}

function messageBody(overrides: Partial<WebhookMessage> = {}): string {
  return JSON.stringify({
    source: 'patient-docs',
    messageId: randomUUID(),
    timestamp: new Date().toISOString(),
    eventType: 'document.uploaded',
    operationId: 'op-1',
    organizationId: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d',
    data: { document: { id: 'doc-1' } },
    patientId: '7b0f2c1e-4a5d-4e6f-8a9b-0c1d2e3f4a5b',
    ...overrides,
  });
}

/** A raw HTTP exchange, so the test controls every byte and header. */
function send(url: string, options: { method?: string; body?: string | Buffer; headers?: Record<string, string> } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method: options.method ?? 'POST', headers: options.headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    outgoing.on('error', reject);
    outgoing.end(options.body);
  });
}

function post(url: string, body: string, headers: Record<string, string> = { signature: sign(body) }) {
  return send(url, { body, headers: { 'content-type': 'application/json', ...headers } });
}

describe('webhook listener', () => {
  let directory: string;
  let journal: Journal;
  let listener: WebhookListener | undefined;
  let events: WebhookMessage[];
  let secret: string | undefined;

  const start = async (overrides: Partial<WebhookListenerOptions> = {}) => {
    listener = await startWebhookListener({
      port: 0,
      getSecret: () => secret,
      journal,
      onEvent: (message) => {
        events.push(message);
      },
      ...overrides,
    });
    return listener;
  };

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'webhooks-'));
    journal = openJournal(join(directory, 'journal.sqlite'));
    events = [];
    secret = HMAC;
  });

  afterEach(async () => {
    await listener?.close();
    listener = undefined;
    journal.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('listens on loopback only, on the one path', async () => {
    const { url, port } = await start();
    expect(url).toBe(`http://127.0.0.1:${port}/webhooks/patient-docs`);
    expect((await send(`http://127.0.0.1:${port}/other`)).status).toBe(404);
    // A request on another path (a tunnel forwarding to the wrong place) shows in the activity.
    expect(journal.webhookActivity(1)[0]).toMatchObject({ verdict: 'rejected', reason: expect.stringMatching(/^not found: POST \/other \(this listener serves \/webhooks\/patient-docs\)/) });
    expect((await send(url, { method: 'GET' })).status).toBe(405);
  });

  it('accepts a correctly signed message and answers without waiting for its handling', async () => {
    let finishHandling = () => {};
    const handled = new Promise<void>((resolve) => {
      finishHandling = resolve;
    });
    const { url } = await start({
      onEvent: async (message) => {
        events.push(message);
        await handled;
      },
    });
    const body = messageBody();
    const response = await post(url, body, { signature: sign(body).toUpperCase() });
    expect(response.status).toBe(200);
    // The answer is out while the handler is still busy: the server never times out waiting.
    await sleep(20);
    expect(events).toEqual([JSON.parse(body)]);
    finishHandling();
    expect(journal.webhookActivity(1)[0]).toMatchObject({ verdict: 'accepted', eventType: 'document.uploaded' });
  });

  it('refuses a missing or wrong signature before parsing anything, and records it', async () => {
    const { url } = await start();
    const body = messageBody();
    expect((await post(url, body, {})).status).toBe(401);
    expect((await post(url, body, { signature: sign(body, 'another-secret') })).status).toBe(401);
    expect((await post(url, 'not json at all', { signature: 'ab'.repeat(64) })).status).toBe(401);
    // The signature covers the exact bytes sent: the same JSON, re-formatted, does not match.
    const pretty = JSON.stringify(JSON.parse(body), null, 2);
    expect((await post(url, pretty, { signature: sign(body) })).status).toBe(401);
    await sleep(20);
    expect(events).toEqual([]);
    const activity = journal.webhookActivity(10);
    expect(activity).toHaveLength(4);
    expect(activity.every((entry) => entry.verdict === 'rejected' && entry.messageId === null)).toBe(true);
  });

  it('refuses everything while no secret is configured', async () => {
    secret = undefined;
    const { url } = await start();
    const body = messageBody();
    expect((await post(url, body)).status).toBe(401);
    expect(journal.webhookActivity(1)[0]?.reason).toBe('no webhook secret is configured');
  });

  it('acknowledges a redelivery without handling it twice, even after a restart', async () => {
    const { url } = await start();
    const body = messageBody();
    expect((await post(url, body)).status).toBe(200);
    expect((await post(url, body)).status).toBe(200);

    await listener!.close();
    journal.close();
    journal = openJournal(join(directory, 'journal.sqlite'));
    const restarted = await start();
    expect((await post(restarted.url, body)).status).toBe(200);
    await sleep(50);
    expect(events).toHaveLength(1);
    expect(journal.webhookActivity(10).map((entry) => entry.verdict)).toEqual(['duplicate', 'duplicate', 'accepted']);
  });

  it('refuses a body over the size cap', async () => {
    const { url } = await start({ maxBodyBytes: 1024 });
    const body = messageBody({ data: { padding: 'x'.repeat(2048) } });
    expect((await post(url, body)).status).toBe(413);
    // Sent in chunks without a declared length, the cap holds as well.
    const chunked = await send(url, { body: Buffer.from(body), headers: { 'transfer-encoding': 'chunked', signature: sign(body) } });
    expect(chunked.status).toBe(413);
    expect(events).toEqual([]);
    expect(journal.webhookActivity(10).map((entry) => entry.reason)).toEqual(['body is larger than allowed', 'body is larger than allowed']);
  });

  it('bounds what unauthenticated clients can hold: a small body cap, a connection limit, and trickled requests cut off in time', async () => {
    const { url, port } = await start();
    // A real server message is well under the default cap; one over it is refused before it is buffered.
    expect((await post(url, messageBody({ data: { patient: { name: 'x'.repeat(2000) } } }))).status).toBe(200);
    expect(DEFAULT_MAX_BODY_BYTES).toBeLessThanOrEqual(64 * 1024);
    expect((await post(url, 'x'.repeat(DEFAULT_MAX_BODY_BYTES + 1))).status).toBe(413);

    // Open more connections than allowed, each sending headers and part of a body, then stalling.
    const opened: Socket[] = [];
    const closedAt = new Map<Socket, number>();
    const began = Date.now();
    await Promise.all(
      Array.from({ length: MAX_CONNECTIONS + 20 }, () => new Promise<void>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => {
          socket.write(`POST ${DEFAULT_WEBHOOK_PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\n${'a'.repeat(1000)}`, () => resolve());
        });
        socket.on('error', () => resolve());
        socket.on('close', () => closedAt.set(socket, Date.now() - began));
        socket.resume();
        opened.push(socket);
      })),
    );
    try {
      await sleep(500);
      // Past the limit, connections are dropped at once.
      expect(closedAt.size).toBeGreaterThanOrEqual(20);
      // The stalled ones are cut off after the request timeout, not Node's default 30 s check.
      const deadline = Date.now() + REQUEST_TIMEOUT_MS + 5_000;
      while (closedAt.size < opened.length && Date.now() < deadline) await sleep(100);
      expect(closedAt.size).toBe(opened.length);
      expect(Math.max(...closedAt.values())).toBeLessThan(REQUEST_TIMEOUT_MS + 3_000);
    } finally {
      for (const socket of opened) socket.destroy();
    }
    // And the listener still serves the server afterwards.
    expect((await post(url, messageBody())).status).toBe(200);
  }, 30_000);

  it('answers a real delivery at once while 150 idle connections are open, and closes idle ones within seconds', async () => {
    const { url, port } = await start();
    const idle: Socket[] = [];
    const closedAt = new Map<Socket, number>();
    const began = Date.now();
    // Connected and silent: no request line, no headers (what holds a connection cap).
    await Promise.all(
      Array.from({ length: 150 }, () => new Promise<void>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => resolve());
        socket.on('error', () => resolve());
        socket.on('close', () => closedAt.set(socket, Date.now() - began));
        socket.resume();
        idle.push(socket);
      })),
    );
    try {
      const delivered = Date.now();
      const answer = await Promise.race([post(url, messageBody()), sleep(2_000).then(() => 'no answer' as const)]);
      expect(answer === 'no answer' ? answer : answer.status).toBe(200);
      expect(Date.now() - delivered).toBeLessThan(2_000);
      // The idle ones that are left are closed after the headers time-out, not held until the request time-out.
      const deadline = Date.now() + HEADERS_TIMEOUT_MS + 5_000;
      while (closedAt.size < idle.length && Date.now() < deadline) await sleep(100);
      expect(closedAt.size).toBe(idle.length);
      expect(Math.max(...closedAt.values())).toBeLessThan(HEADERS_TIMEOUT_MS + 3_000);
    } finally {
      for (const socket of idle) socket.destroy();
    }
  }, 30_000);

  it('refuses signed bodies that are not webhook messages', async () => {
    const { url } = await start();
    expect((await post(url, '{"eventType":"order.updated"}')).status).toBe(400);
    expect((await post(url, '[1,2]')).status).toBe(400);
    expect((await post(url, '{oops')).status).toBe(400);
  });

  it('accepts the test vector of docs/webhooks.md, both signatures included', async () => {
    secret = 'test-vector-hmac-secret';
    const { url } = await start({ now: () => 1795253400 * 1000 + 30_000 });
    const body =
      '{"source":"patient-docs","messageId":"7b1f2c9e-3d4a-5b6c-8d7e-9f0a1b2c3d4e","timestamp":"2026-11-21T09:30:00.000Z","eventType":"patient.created","operationId":"2f9d4c1a-8b7e-4f6a-9c3d-1e2f3a4b5c6d","organizationId":"0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01","data":{"patient":{"id":"5f0e8a3c-1d2b-4c3d-8e9f-000000000001","name":"Jane Roe","createdAt":"2026-11-21T09:30:00.000Z","updatedAt":"2026-11-21T09:30:00.000Z"}},"patientId":"5f0e8a3c-1d2b-4c3d-8e9f-000000000001"}';
    const response = await post(url, body, {
      signature: 'c6a8b2af668fc2c0732da849f8c533bde32602348a5b24dec6775e716778878610692dce562a3f89a81be8dabf27430d545fe96e449553faaf74d6013cb472fb',
      'webhook-id': '7b1f2c9e-3d4a-5b6c-8d7e-9f0a1b2c3d4e',
      'webhook-timestamp': '1795253400',
      'webhook-signature': 'v1,jWrLgw0XGF7eRMndOrI0eIXVxDS7DbSJPewfky52VO8=',
    });
    expect(response.status).toBe(200);
    expect(journal.webhookActivity(1)[0]).toMatchObject({
      verdict: 'accepted',
      eventType: 'patient.created',
      patientId: '5f0e8a3c-1d2b-4c3d-8e9f-000000000001',
    });
  });

  it('refuses a replayed delivery: an old timestamp, or a fresh one the sender did not sign', async () => {
    const { url } = await start();
    const seconds = Math.floor(Date.now() / 1000);
    const standardHeaders = (body: string, id: string, at: number, signedAt = at) => ({
      signature: sign(body),
      'webhook-id': id,
      'webhook-timestamp': String(at),
      'webhook-signature': `v1,${createHmac('sha256', HMAC).update(`${id}.${signedAt}.${body}`).digest('base64')}`,
    });
    const fresh = messageBody();
    expect((await post(url, fresh, standardHeaders(fresh, 'msg_1', seconds))).status).toBe(200);

    const replayed = messageBody();
    expect((await post(url, replayed, standardHeaders(replayed, 'msg_2', seconds - 10 * 60))).status).toBe(401);
    expect(journal.webhookActivity(1)[0]?.reason).toMatch(/replay/);
    expect((await post(url, replayed, standardHeaders(replayed, 'msg_2', seconds, seconds - 10 * 60))).status).toBe(401);
    expect(journal.webhookActivity(1)[0]?.reason).toBe('webhook-signature does not match');
    expect((await post(url, replayed, { signature: sign(replayed), 'webhook-timestamp': String(seconds) })).status).toBe(401);
    expect(journal.webhookActivity(1)[0]?.reason).toBe('webhook-id header is missing');
  });

  it('refuses an unsigned-attempt message older than the time its id would be remembered', async () => {
    const { url } = await start();
    const body = messageBody({ timestamp: '2020-01-01T00:00:00.000Z' });
    expect((await post(url, body)).status).toBe(400);
    expect(journal.webhookActivity(1)[0]).toMatchObject({ verdict: 'rejected', reason: 'message is older than the deduplication window' });

    // The same old event redriven by the server comes with a freshly signed attempt: accepted.
    const id = JSON.parse(body).messageId as string;
    const seconds = Math.floor(Date.now() / 1000);
    const redriven = await post(url, body, {
      signature: sign(body),
      'webhook-id': id,
      'webhook-timestamp': String(seconds),
      'webhook-signature': `v1,${createHmac('sha256', HMAC).update(`${id}.${seconds}.${body}`).digest('base64')}`,
    });
    expect(redriven.status).toBe(200);
  });
});
