/**
 * Every error the server answers is application/problem+json (SPEC §7, DESIGN §3): our own
 * ApiErrors, schema validation, malformed JSON, wrong content types, oversized bodies, unknown
 * routes. A 500 logs the request id and says nothing about internals.
 */
import { maxHeaderSize, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ruleOf } from '../../shared/ajv.js';
import { buildProblem, PROBLEM_CONTENT_TYPE } from '../../shared/problem.js';
import { ApiError, storageFault } from '../errors.js';
import type {} from '../audit/http.js';

declare module 'fastify' {
  interface FastifyReply {
    problem(status: number, detail: string, headers?: Record<string, string>): FastifyReply;
  }
}

/** Maps Fastify's own error codes to what a client can act on (JSON bodies: plugins/validation.ts parses them). */
const FASTIFY_CODES: Record<string, { status: number; detail: (error: FastifyError, request: FastifyRequest) => string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, detail: (_error, request) => `unsupported Content-Type: ${JSON.stringify(printable(request.headers['content-type'] ?? ''))}` },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, detail: () => 'Content-Length does not match the body' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, detail: () => 'request body is larger than the configured limit' },
  FST_ERR_CTP_INVALID_TYPE: { status: 400, detail: () => 'Content-Type header is invalid' },
  FST_ERR_BAD_URL: { status: 400, detail: () => 'the request URL is malformed' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 400, detail: () => 'a segment of the request path is longer than 512 characters' },
  FST_ERR_ASYNC_CONSTRAINT: { status: 400, detail: () => 'the request cannot be routed' },
  FST_ERR_INVALID_URL: { status: 400, detail: () => 'the request URL is malformed' },
};

/** A header value as it may appear in a detail (quoted and escaped by JSON.stringify): at most 100 characters. */
function printable(value: string): string {
  return value.length > 100 ? `${value.slice(0, 100)}…` : value;
}

export function instanceOf(request: FastifyRequest): string {
  const url = request.url;
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path.length > 2048 ? `${path.slice(0, 2048)}…` : path;
}

/** Validation errors name the field and the rule: "body/limit must be <= 1000". */
function validationDetail(error: FastifyError): string {
  const first = error.validation?.[0];
  if (!first) return error.message;
  const context = error.validationContext ?? 'request';
  const field = first.instancePath ? `${context}${first.instancePath}` : context;
  const params = first.params as Record<string, unknown> | undefined;
  if (first.keyword === 'required' && params?.missingProperty) return `${context}/${String(params.missingProperty)} is required`;
  return `${field} ${ruleOf(first)}`;
}

function sendProblem(request: FastifyRequest, reply: FastifyReply, typeBase: string, status: number, detail: string, headers: Record<string, string> = {}): FastifyReply {
  const body = buildProblem({ status, detail, instance: instanceOf(request), typeBase, requestId: status >= 500 ? request.id : undefined });
  // An audited access that is refused: the log says why, in the words the client got.
  if (request.auditNote) request.auditNote.reason = detail;
  for (const [name, value] of Object.entries(headers)) void reply.header(name, value);
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body);
}

/**
 * For Fastify's `frameworkErrors` option: errors the router raises before any route or hook runs
 * (a malformed URL, an over-long path segment) answer as problem details like every other error.
 * Fastify hands these a bare reply, without the `problem` decorator, hence a function of its own.
 */
export function frameworkErrors(typeBase: string) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const known = error.code ? FASTIFY_CODES[error.code] : undefined;
    void sendProblem(request, reply, typeBase, known?.status ?? 400, known?.detail(error, request) ?? 'the request cannot be routed');
  };
}

/**
 * For Fastify's `clientErrorHandler`: what Node's HTTP parser refuses before there is a request to
 * route — a request line and headers over the limit (SPEC §7 names a header over a configured
 * limit as 413), a client too slow to send its headers, bytes that are not HTTP — is answered as
 * problem details too, and the connection is closed. The path is not known yet: instance is '/'.
 */
export function clientErrors(typeBase: string) {
  return (error: Error & { code?: string }, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const [status, detail] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? [413, `the request line and headers are larger than the configured limit of ${maxHeaderSize} bytes`]
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'the request headers did not arrive in time']
          : [400, 'the request is not valid HTTP/1.1'];
    const body = JSON.stringify(buildProblem({ status, detail, instance: '/', typeBase }));
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(error);
  };
}

async function problemsPlugin(app: FastifyInstance, options: { typeBase: string }): Promise<void> {
  const send = (request: FastifyRequest, reply: FastifyReply, status: number, detail: string, headers?: Record<string, string>): FastifyReply =>
    sendProblem(request, reply, options.typeBase, status, detail, headers);

  app.decorateReply('problem', function problem(this: FastifyReply, status: number, detail: string, headers?: Record<string, string>) {
    return send(this.request, this, status, detail, headers);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError) return send(request, reply, error.status, error.detail, error.headers);
    if (error.validation) return send(request, reply, 400, validationDetail(error));
    const known = error.code ? FASTIFY_CODES[error.code] : undefined;
    if (known) return send(request, reply, known.status, known.detail(error, request));
    const fault = storageFault(error);
    if (fault) {
      // IT must hear about it: the log names the cause the client is spared.
      request.log.error({ err: error, requestId: request.id }, `storage fault: ${error.code ?? error.name}`);
      return send(request, reply, fault.status, fault.detail, fault.headers);
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // A client error from a plugin (e.g. multipart limits): say what it is, never a stack.
      return send(request, reply, status, error.message.split('\n')[0] ?? 'bad request');
    }
    request.log.error({ err: error, requestId: request.id }, 'unhandled error');
    return send(request, reply, 500, `The server could not complete the request. Quote request id ${request.id} when reporting it.`);
  });

  app.setNotFoundHandler((request, reply) => send(request, reply, 404, `no route for ${request.method} ${instanceOf(request)}`));
}

export default fp(problemsPlugin, { name: 'problems' });
