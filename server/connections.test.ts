import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { lingerAfterEarlyAnswer } from './connections.js';

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server answering 413 at once, without reading the body (as the upload routes do for a declared size over the limit). */
async function refusingServer(lingerMs: number): Promise<number> {
  server = http.createServer((request, response) => {
    lingerAfterEarlyAnswer(request, response, lingerMs);
    response.writeHead(413, { 'content-type': 'text/plain' }).end('too large');
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server!.address() as net.AddressInfo).port;
}

interface Outcome {
  answer: string;
  sent: number;
  /** How the connection ended: 'end' (the server closed it after the body), or the error that cut it. */
  ended: string;
}

/** Sends `total` body bytes with Connection: close, as nginx sends to its upstreams, `pieceBytes` every `everyMs`. */
function upload(port: number, total: number, pieceBytes: number, everyMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const outcome: Outcome = { answer: '', sent: 0, ended: '' };
    socket.on('data', (chunk: Buffer) => (outcome.answer += chunk.toString()));
    socket.once('error', (error: NodeJS.ErrnoException) => (outcome.ended ||= error.code ?? error.message));
    socket.once('end', () => (outcome.ended ||= 'end'));
    socket.once('close', () => {
      clearInterval(timer);
      resolve(outcome);
    });
    socket.write(`POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${total}\r\nConnection: close\r\n\r\n`);
    const piece = Buffer.alloc(pieceBytes, 1);
    const timer = setInterval(() => {
      if (outcome.sent >= total || socket.destroyed) return;
      outcome.sent += piece.length;
      socket.write(piece);
    }, everyMs);
  });
}

describe('lingerAfterEarlyAnswer', () => {
  it('answers early, reads the rest of the body, then closes as the client asked: the sender is never reset', async () => {
    const port = await refusingServer(10_000);
    const outcome = await upload(port, 40 * 64 * 1024, 64 * 1024, 5);
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(outcome.sent).toBe(40 * 64 * 1024);
    expect(outcome.ended).toBe('end');
  });

  it('closes a connection whose body is still coming after the bound', async () => {
    const port = await refusingServer(300);
    const started = Date.now();
    const outcome = await upload(port, 1024 * 1024 * 1024, 1024, 20);
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(outcome.sent).toBeLessThan(1024 * 1024);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
