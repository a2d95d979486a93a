/**
 * A request whose body is a range of a file (a tus PATCH, a one-shot multipart upload), sent with
 * node's http/https instead of got. got streams a body through pipes of its own that never say
 * when a chunk has left, so every chunk needed a buffer of its own; here the socket's write
 * callback frees each buffer for the next chunk (sendFileRange), which more than halves the
 * client's CPU per byte sent. Everything else the engine's got instance gives a request is kept:
 * the trusted CAs, the connect and idle timeouts, no redirects followed, keep-alive connections,
 * a stop by signal, and failures as ApiNetworkError (with the TLS code, so a certificate problem
 * is named as one).
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { AbortedError, ApiNetworkError } from './api-errors.js';
import { sendFileRange, written, type ByteSink, type FileRangeOptions } from '../upload/bandwidth.js';

/** What the engine reads of an answer (got's Response has it too). */
export interface HttpAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface FileRequest {
  method: 'PATCH' | 'POST';
  url: string;
  /** Content-Length is added (the bytes of head, the range and tail). */
  headers: Record<string, string>;
  /** Bytes sent before and after the file's (a multipart body's framing). */
  head?: Buffer | undefined;
  tail?: Buffer | undefined;
  file: Omit<FileRangeOptions, 'signal'>;
  signal?: AbortSignal | undefined;
}

/** How requests reach the server: the same settings as the client's got instance. */
export interface FileRequestTransport {
  /** CA certificates to trust instead of Node's default store (tls-trust.ts). */
  certificateAuthority?: string[] | undefined;
  connectMs: number;
  /** A request fails when its socket has been silent this long (sending or waiting for the answer). */
  idleMs: number;
}

/** Sends the request and resolves with the server's answer (any status); rejects with what stopped it. */
export function sendFileRequest(request: FileRequest, transport: FileRequestTransport): Promise<HttpAnswer> {
  const url = new URL(request.url);
  const secure = url.protocol === 'https:';
  const start = request.file.start ?? 0;
  const length = (request.head?.length ?? 0) + Math.max(0, request.file.end - start) + (request.tail?.length ?? 0);
  // Ends the body's reading once the request is over, whichever way it ended.
  const over = new AbortController();
  if (request.signal?.aborted) return Promise.reject(new AbortedError('the upload was stopped'));
  return new Promise<HttpAnswer>((resolve, reject) => {
    let settled = false;
    let bodySent = false;
    const finish = (outcome: { answer: HttpAnswer } | { error: Error }) => {
      if (settled) return;
      settled = true;
      request.signal?.removeEventListener('abort', onStop);
      over.abort('error' in outcome ? outcome.error : new AbortedError('the server answered'));
      if ('error' in outcome) {
        outgoing.destroy();
        reject(outcome.error);
        return;
      }
      // Answered before the whole body left (a refusal): the connection cannot carry another request.
      if (!bodySent) outgoing.destroy();
      resolve(outcome.answer);
    };
    const onStop = () => finish({ error: new AbortedError('the upload was stopped') });
    const outgoing = (secure ? https : http).request(url, {
      method: request.method,
      headers: { ...request.headers, 'content-length': String(length) },
      ...(secure && transport.certificateAuthority ? { ca: transport.certificateAuthority } : {}),
    });
    outgoing.on('error', (error) => finish({ error: networkError(error) }));
    outgoing.setTimeout(transport.idleMs, () => outgoing.destroy(timeout(`nothing was sent or received for ${transport.idleMs} ms`)));
    outgoing.once('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(() => outgoing.destroy(timeout(`no connection within ${transport.connectMs} ms`)), transport.connectMs);
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
    outgoing.once('response', (response) => {
      // Nothing more is sent once the server has answered.
      over.abort(new AbortedError('the server answered'));
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.once('end', () => finish({ answer: { statusCode: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') } }));
      response.once('error', (error) => finish({ error: networkError(error) }));
      response.once('aborted', () => finish({ error: new ApiNetworkError('ECONNRESET', 'the connection closed during the answer') }));
    });
    request.signal?.addEventListener('abort', onStop, { once: true });
    // The socket's failures are the network's; the file's (read errors, a change) are the file's.
    const sink: ByteSink = { write: (chunk, callback) => outgoing.write(chunk, (error) => callback(error ? networkError(error) : null)) };
    const sendBody = async () => {
      if (request.head?.length) await written(sink, request.head, over.signal);
      await sendFileRange(sink, { ...request.file, signal: over.signal });
      if (request.tail?.length) await written(sink, request.tail, over.signal);
      bodySent = true;
      outgoing.end();
    };
    // A body stopped because the request ended (an answer, a network error, a stop) leaves the
    // outcome to that; any other failure of the body is the request's outcome.
    sendBody().catch((error: unknown) => {
      if (!over.signal.aborted) finish({ error: error instanceof Error ? error : new Error(String(error)) });
    });
  });
}

function networkError(error: Error): ApiNetworkError {
  if (error instanceof ApiNetworkError) return error;
  return new ApiNetworkError((error as NodeJS.ErrnoException).code ?? 'ENETWORK', error.message);
}

function timeout(message: string): ApiNetworkError {
  return new ApiNetworkError('ETIMEDOUT', message);
}
