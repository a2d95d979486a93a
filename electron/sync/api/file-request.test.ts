/**
 * An upload request with a file's range as its body, against a real HTTP server on a real socket
 * and real files: what the server receives, and how each way a request can end comes back (an
 * answer, a refusal before the body is read, a cut connection, a silent server, a stop, a file
 * that changed).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortedError, ApiNetworkError, FileChangedDuringUploadError } from './api-errors.js';
import { sendFileRequest, type FileRequest } from './file-request.js';
import { SentBytesHash } from '../upload/hash.js';

type Handler = (request: http.IncomingMessage, response: http.ServerResponse) => void;

describe('sendFileRequest', () => {
  let server: http.Server;
  let baseUrl: string;
  let handler: Handler = () => undefined;
  let folder: string;
  const transport = { connectMs: 5_000, idleMs: 10_000 };

  beforeAll(async () => {
    folder = mkdtempSync(path.join(os.tmpdir(), 'patient-docs-file-request-'));
    server = http.createServer((request, response) => handler(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(folder, { recursive: true, force: true });
  });

  const scan = (name: string, size: number) => {
    const bytes = randomBytes(size);
    const file = path.join(folder, name);
    writeFileSync(file, bytes);
    return { file, bytes };
  };
  /** Answers once the whole body is in, with what it received. */
  const receiving = () => {
    const received: { headers?: http.IncomingHttpHeaders; body?: Buffer } = {};
    handler = (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        Object.assign(received, { headers: request.headers, body: Buffer.concat(chunks) });
        response.writeHead(201, { 'content-type': 'application/json', 'upload-offset': '7' }).end('{"ok":true}');
      });
    };
    return received;
  };
  const patch = (file: string, end: number, extra: Partial<FileRequest> = {}): FileRequest => ({
    method: 'PATCH',
    url: `${baseUrl}/uploads/1`,
    headers: { 'tus-resumable': '1.0.0' },
    file: { filePath: file, end },
    ...extra,
  });

  it('sends head, the range of the file and tail as one body with its Content-Length, hashed as sent, and hands back the answer', async () => {
    const { file, bytes } = scan('arch.stl', 3 * 1024 * 1024 + 11);
    const received = receiving();
    const hash = new SentBytesHash(bytes.length);
    let reported = 0;
    const answer = await sendFileRequest(
      { ...patch(file, bytes.length), method: 'POST', head: Buffer.from('HEAD'), tail: Buffer.from('TAIL'), file: { filePath: file, end: bytes.length, hash, onBytes: (count) => (reported += count) } },
      transport,
    );
    expect(answer).toMatchObject({ statusCode: 201, body: '{"ok":true}', headers: { 'upload-offset': '7' } });
    expect(received.headers?.['content-length']).toBe(String(bytes.length + 8));
    expect(received.body!.equals(Buffer.concat([Buffer.from('HEAD'), bytes, Buffer.from('TAIL')]))).toBe(true);
    expect(hash.digest()).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(reported).toBe(bytes.length);
    // A range from an offset: only its bytes.
    await sendFileRequest(patch(file, bytes.length, { file: { filePath: file, start: 1_000_000, end: 2_000_000 } }), transport);
    expect(received.body!.equals(bytes.subarray(1_000_000, 2_000_000))).toBe(true);
  });

  it('an answer before the body is read (a refusal) ends the request at once with that answer, without sending the rest', async () => {
    const { file, bytes } = scan('refused.stl', 16 * 1024 * 1024);
    handler = (request, response) => {
      // As nginx refuses a body too large: the answer at once, then what arrives is read and dropped
      // (nginx lingers reading; Node's server would reset a connection it closes while the body still
      // arrives, and a reset can take the unread answer with it, so this one keeps the connection).
      response.writeHead(413, { 'content-type': 'text/html' }).end('<html><title>413 Request Entity Too Large</title></html>');
      request.resume();
    };
    let sent = 0;
    const answer = await sendFileRequest(patch(file, bytes.length, { file: { filePath: file, end: bytes.length, onBytes: (count) => (sent += count) } }), transport);
    expect(answer.statusCode).toBe(413);
    expect(answer.body).toContain('Too Large');
    expect(sent).toBeLessThan(bytes.length);
  });

  it('a connection cut during the body is a network failure (retried), not the file’s', async () => {
    const { file, bytes } = scan('cut.stl', 8 * 1024 * 1024);
    handler = (request) => {
      let seen = 0;
      request.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen > 1024 * 1024) request.socket.destroy();
      });
    };
    await expect(sendFileRequest(patch(file, bytes.length), transport)).rejects.toBeInstanceOf(ApiNetworkError);
  });

  it('a server that goes silent fails the request after the idle time as a network failure', async () => {
    const { file, bytes } = scan('silent.stl', 100_000);
    handler = () => undefined;
    const started = Date.now();
    const failure = await sendFileRequest(patch(file, bytes.length), { ...transport, idleMs: 300 }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiNetworkError);
    expect((failure as ApiNetworkError).code).toBe('ETIMEDOUT');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('a stop ends it as stopped, at once', async () => {
    const { file, bytes } = scan('stopped.stl', 100_000);
    handler = () => undefined;
    const controller = new AbortController();
    const pending = sendFileRequest(patch(file, bytes.length, { signal: controller.signal }), transport);
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toBeInstanceOf(AbortedError);
    await expect(sendFileRequest(patch(file, bytes.length, { signal: controller.signal }), transport)).rejects.toBeInstanceOf(AbortedError);
  });

  it('a file that changed before its last bytes left fails as the file’s change, and the server never gets a whole body', async () => {
    const { file, bytes } = scan('changed.stl', 3 * 1024 * 1024);
    let complete = false;
    let closed!: () => void;
    const serverSawClose = new Promise<void>((resolve) => (closed = resolve));
    handler = (request, response) => {
      request.on('end', () => {
        complete = true;
        response.end();
      });
      request.on('close', closed);
      request.resume();
    };
    const changed = sendFileRequest(patch(file, bytes.length, { file: { filePath: file, end: bytes.length, beforeLastChunk: () => Promise.reject(new FileChangedDuringUploadError('rewritten')) } }), transport);
    await expect(changed).rejects.toBeInstanceOf(FileChangedDuringUploadError);
    await serverSawClose;
    expect(complete).toBe(false);
    // Shorter than announced: the same.
    await expect(sendFileRequest(patch(file, bytes.length + 10), transport)).rejects.toBeInstanceOf(FileChangedDuringUploadError);
  });
});
