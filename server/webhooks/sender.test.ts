import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestCertificates } from '../../test/helpers/tls.js';
import { ThreadedSender } from './send-thread.js';
import { HttpsSender, type Sender } from './sender.js';
import { signatureOf } from './signer.js';

// A receiver whose certificate names only hooks.example.test: the sender must connect to the
// pinned address (127.0.0.1; the name does not resolve at all) and still verify that name.
let work: string;
let server: https.Server;
let port: number;
let ca: Buffer;
const seen: Array<{ host: string | undefined; body: string; signature: string | undefined }> = [];

beforeAll(async () => {
  const tls = makeTestCertificates('sender', ['DNS:hooks.example.test']);
  work = tls.dir;
  ca = fs.readFileSync(tls.caFile);
  server = https.createServer({ key: tls.key, cert: tls.cert }, (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      seen.push({ host: request.headers.host, body: Buffer.concat(chunks).toString('utf8'), signature: request.headers.signature as string | undefined });
      if (request.url === '/hang') return;
      if (request.url === '/slow') return void setTimeout(() => response.writeHead(200).end('ok'), 400);
      if (request.url === '/big') return void response.writeHead(200).end(Buffer.alloc(256 * 1024));
      if (request.url === '/redirect') return void response.writeHead(302, { location: '/ok' }).end();
      response.writeHead(request.url === '/gone' ? 410 : 200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
  fs.rmSync(work, { recursive: true, force: true });
});

const pinned = { address: '127.0.0.1', family: 4 as const };

const options = { maxSocketsPerHost: 2, maxSockets: 4 };

/** Both senders behave the same; the threaded one only runs the same client in a worker thread. */
const senders: Array<[string, () => { send: Sender; close: () => Promise<void> }]> = [
  ['HttpsSender', () => {
    const sender = new HttpsSender({ ...options, ca });
    return { send: sender.send, close: async () => sender.close() };
  }],
  ['ThreadedSender', () => {
    const sender = new ThreadedSender({ ...options, ca });
    return { send: sender.send, close: () => sender.close() };
  }],
];

describe.each(senders)('%s', (_name, make) => {
  it('connects to the pinned address, verifies the callback host name and sends the exact bytes', async () => {
    const sender = make();
    try {
      const body = '{"a":"é"}';
      const results = await Promise.all(
        [1, 2, 3].map(() => sender.send({ url: new URL(`https://hooks.example.test:${port}/ok`), address: pinned, body, headers: { signature: 'abc' }, timeoutMs: 2000 })),
      );
      for (const result of results) expect(result).toMatchObject({ statusCode: 200, error: null });
      expect(seen.at(-1)).toEqual({ host: `hooks.example.test:${port}`, body, signature: 'abc' });
      expect(await sender.send({ url: new URL(`https://hooks.example.test:${port}/gone`), address: pinned, body, headers: {}, timeoutMs: 2000 })).toMatchObject({ statusCode: 410 });
      // No redirect is followed: a 3xx is the answer.
      const before = seen.length;
      expect(await sender.send({ url: new URL(`https://hooks.example.test:${port}/redirect`), address: pinned, body, headers: {}, timeoutMs: 2000 })).toMatchObject({ statusCode: 302 });
      expect(seen.length).toBe(before + 1);
    } finally {
      await sender.close();
    }
  });

  it('signs a webhook message where it sends it: Signature is the HMAC-SHA512 of exactly the bytes sent', async () => {
    const sender = make();
    try {
      const body = '{"messageId":"m-1","data":{"x":"ä"}}';
      const signed = await sender.send({ url: new URL(`https://hooks.example.test:${port}/ok`), address: pinned, body, headers: {}, signing: { messageId: 'm-1', hmac: 'secret-1', attemptAtMs: Date.UTC(2026, 10, 21) }, timeoutMs: 2000 });
      expect(signed.statusCode).toBe(200);
      expect(seen.at(-1)).toEqual({ host: `hooks.example.test:${port}`, body, signature: signatureOf(body, 'secret-1') });
    } finally {
      await sender.close();
    }
  });

  it('refuses a certificate that does not name the callback host, even at the right address', async () => {
    const sender = make();
    try {
      const other = await sender.send({ url: new URL(`https://other.example.test:${port}/ok`), address: pinned, body: '{}', headers: {}, timeoutMs: 2000 });
      expect(other.statusCode).toBeNull();
      expect(other.error).toMatch(/altnames|certificate|ERR_TLS/i);
      const literal = await sender.send({ url: new URL(`https://127.0.0.1:${port}/ok`), address: pinned, body: '{}', headers: {}, timeoutMs: 2000 });
      expect(literal.statusCode).toBeNull();
      expect(literal.error).toMatch(/altnames|certificate|ERR_TLS/i);
    } finally {
      await sender.close();
    }
  });

  it('times out a hanging receiver and keeps the status of an oversized answer', async () => {
    const sender = make();
    try {
      const hang = await sender.send({ url: new URL(`https://hooks.example.test:${port}/hang`), address: pinned, body: '{}', headers: {}, timeoutMs: 300 });
      expect(hang).toMatchObject({ statusCode: null, error: 'no response within 300 ms' });
      const big = await sender.send({ url: new URL(`https://hooks.example.test:${port}/big`), address: pinned, body: '{}', headers: {}, timeoutMs: 2000 });
      expect(big.statusCode).toBe(200);
      const after = await sender.send({ url: new URL(`https://hooks.example.test:${port}/ok`), address: pinned, body: '{}', headers: {}, timeoutMs: 2000 });
      expect(after).toMatchObject({ statusCode: 200, error: null });
    } finally {
      await sender.close();
    }
  });
});

describe.each(senders)('%s, with every connection of the callback busy', (_name, make) => {
  const send = (sender: { send: Sender }, route: string, timeoutMs: number) => sender.send({ url: new URL(`https://hooks.example.test:${port}${route}`), address: pinned, body: '{}', headers: {}, timeoutMs });

  it('counts the timeout and the latency from when a connection takes the request, not while it waits for one', async () => {
    const sender = make();
    try {
      // Both connections (maxSocketsPerHost: 2) answer after 400 ms; the third request waits for one.
      const [first, second, waited] = await Promise.all([send(sender, '/slow', 2000), send(sender, '/slow', 2000), send(sender, '/ok', 300)]);
      expect([first.statusCode, second.statusCode]).toEqual([200, 200]);
      expect(waited).toMatchObject({ statusCode: 200, error: null });
      expect(waited.latencyMs).toBeLessThan(300);
    } finally {
      await sender.close();
    }
  });

  it('gives up on a request that finds no free connection within twice its timeout', async () => {
    const sender = make();
    try {
      const hanging = [send(sender, '/hang', 1500), send(sender, '/hang', 1500)];
      const waited = await send(sender, '/ok', 200);
      expect(waited).toMatchObject({ statusCode: null, error: 'no connection to the callback was made (connect and TLS handshake) or free within 400 ms' });
      expect(await Promise.all(hanging)).toEqual([expect.objectContaining({ error: 'no response within 1500 ms' }), expect.objectContaining({ error: 'no response within 1500 ms' })]);
    } finally {
      await sender.close();
    }
  });
});

describe('ThreadedSender', () => {
  it('answers at once after close instead of waiting on a thread that is gone', async () => {
    const sender = new ThreadedSender({ ...options, ca });
    expect((await sender.send({ url: new URL(`https://hooks.example.test:${port}/ok`), address: pinned, body: '{}', headers: {}, timeoutMs: 2000 })).statusCode).toBe(200);
    await sender.close();
    expect((await sender.send({ url: new URL(`https://hooks.example.test:${port}/ok`), address: pinned, body: '{}', headers: {}, timeoutMs: 2000 })).error).toBe('the server is stopping');
  });
});
