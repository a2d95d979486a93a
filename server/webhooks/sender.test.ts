import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestCertificates } from '../../test/helpers/tls.js';
import { ThreadedSender } from './send-thread.js';
import { HttpsSender } from './sender.js';
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

describe('HttpsSender', () => {
  it('connects to the pinned address, verifies the callback host name and sends the exact bytes', async () => {
    const sender = new HttpsSender({ maxSocketsPerHost: 2, maxSockets: 4, ca });
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
      sender.close();
    }
  });

  it('refuses a certificate that does not name the callback host, even at the right address', async () => {
    const sender = new HttpsSender({ maxSocketsPerHost: 2, maxSockets: 4, ca });
    try {
      const other = await sender.send({ url: new URL(`https://other.example.test:${port}/ok`), address: pinned, body: '{}', headers: {}, timeoutMs: 2000 });
      expect(other.statusCode).toBeNull();
      expect(other.error).toMatch(/altnames|certificate|ERR_TLS/i);
      const literal = await sender.send({ url: new URL(`https://127.0.0.1:${port}/ok`), address: pinned, body: '{}', headers: {}, timeoutMs: 2000 });
      expect(literal.statusCode).toBeNull();
      expect(literal.error).toMatch(/altnames|certificate|ERR_TLS/i);
    } finally {
      sender.close();
    }
  });

  it('times out a hanging receiver and keeps the status of an oversized answer', async () => {
    const sender = new HttpsSender({ maxSocketsPerHost: 2, maxSockets: 4, ca });
    try {
      const hang = await sender.send({ url: new URL(`https://hooks.example.test:${port}/hang`), address: pinned, body: '{}', headers: {}, timeoutMs: 300 });
      expect(hang).toMatchObject({ statusCode: null, error: 'no response within 300 ms' });
      const big = await sender.send({ url: new URL(`https://hooks.example.test:${port}/big`), address: pinned, body: '{}', headers: {}, timeoutMs: 2000 });
      expect(big.statusCode).toBe(200);
      const after = await sender.send({ url: new URL(`https://hooks.example.test:${port}/ok`), address: pinned, body: '{}', headers: {}, timeoutMs: 2000 });
      expect(after).toMatchObject({ statusCode: 200, error: null });
    } finally {
      sender.close();
    }
  });
});

describe('ThreadedSender', () => {
  it('sends from its worker thread with the same pinning, host check and answers as HttpsSender', async () => {
    const sender = new ThreadedSender({ maxSocketsPerHost: 2, maxSockets: 4, ca });
    try {
      const before = seen.length;
      const send = (route: string, timeoutMs = 2000) => sender.send({ url: new URL(`https://hooks.example.test:${port}${route}`), address: pinned, body: '{"b":"ü"}', headers: { signature: 'def' }, timeoutMs });
      const [ok, gone, redirect, hang] = await Promise.all([send('/ok'), send('/gone'), send('/redirect'), send('/hang', 300)]);
      expect(ok).toMatchObject({ statusCode: 200, error: null });
      expect(gone.statusCode).toBe(410);
      expect(redirect.statusCode).toBe(302);
      expect(hang).toMatchObject({ statusCode: null, error: 'no response within 300 ms' });
      const bodies = seen.slice(before);
      expect(bodies).toHaveLength(4);
      for (const request of bodies) expect(request).toEqual({ host: `hooks.example.test:${port}`, body: '{"b":"ü"}', signature: 'def' });
      // Signed in the thread: the Signature header is the HMAC-SHA512 of exactly the bytes sent.
      const signedBody = '{"messageId":"m-1","data":{"x":"ä"}}';
      const signed = await sender.send({ url: new URL(`https://hooks.example.test:${port}/ok`), address: pinned, body: signedBody, headers: {}, signing: { messageId: 'm-1', hmac: 'secret-1', attemptAtMs: Date.UTC(2026, 10, 21) }, timeoutMs: 2000 });
      expect(signed.statusCode).toBe(200);
      expect(seen.at(-1)).toEqual({ host: `hooks.example.test:${port}`, body: signedBody, signature: signatureOf(signedBody, 'secret-1') });
      // A certificate that does not name the callback's host is refused there too.
      const wrongName = await sender.send({ url: new URL(`https://other.example.test:${port}/ok`), address: pinned, body: '{}', headers: {}, timeoutMs: 2000 });
      expect(wrongName.statusCode).toBeNull();
      expect(wrongName.error).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID|altname/i);
    } finally {
      await sender.close();
    }
    // After close, sends fail at once instead of hanging.
    expect((await sender.send({ url: new URL(`https://hooks.example.test:${port}/ok`), address: pinned, body: '{}', headers: {}, timeoutMs: 2000 })).error).toBe('the server is stopping');
  });
});
