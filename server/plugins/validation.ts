/**
 * Two validators: JSON bodies are checked strictly (no type coercion: "5" is not 5), while
 * params, query strings and headers — which are text on the wire — are coerced.
 */
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest, FastifySchema } from 'fastify';
import fp from 'fastify-plugin';
import secureJson from 'secure-json-parse';
import type { Ajv, ValidateFunction } from 'ajv';
import { createAjv } from '../../shared/ajv.js';
import { badRequest } from '../errors.js';

/**
 * JSON bodies: refused (400) unless they are UTF-8 — otherwise a byte that is not would turn into
 * U+FFFD on the way in, and the name stored would differ from the one sent — and refused with a
 * rule of their own when they carry a `__proto__` or `constructor.prototype` key, which Fastify
 * would report as "not valid JSON". An empty body is refused only where the route takes one.
 */
function parseJsonBody(request: FastifyRequest, body: Buffer, done: (error: Error | null, value?: unknown) => void): void {
  if (body.length === 0) {
    // A route that takes no body (a DELETE, a consent PUT, a redelivery) is not refused for one it
    // never asked for: many HTTP client setups send Content-Type: application/json on every request.
    // A route whose body is all optional fields (search) takes none: its handler applies the defaults.
    if ((request.routeOptions.schema as FastifySchema | undefined)?.body === undefined || request.routeOptions.config.bodyOptional) return done(null, undefined);
    return done(badRequest('body must not be empty when Content-Type is application/json'));
  }
  if (!isUtf8(body)) return done(badRequest('body must be UTF-8 encoded text'));
  let value: unknown;
  try {
    value = secureJson.parse(body.toString('utf8'), { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    const poisoned = error instanceof Error && error.message.startsWith('Object contains forbidden prototype property');
    return done(badRequest(poisoned ? 'body must not contain a "__proto__" or "constructor.prototype" key' : 'body must be valid JSON'));
  }
  done(null, value);
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Every field of the body is optional (search, SPEC §4.3): no body at all, or an empty one, is
     * taken as `{}`. Routes without this still refuse an empty body with a JSON content type.
     */
    bodyOptional?: boolean;
  }
}

/** The preValidation hook of routes with `config.bodyOptional`: no body reads as `{}`. */
export function emptyBodyAsObject(request: FastifyRequest, _reply: unknown, done: () => void): void {
  if (request.body === undefined) request.body = {};
  done();
}

/**
 * A route's check, compiled by its first request rather than at start: the server has a hundred
 * route schemas, and compiling them all made every start (and every test server) pay for routes
 * that process never serves. Fastify reads `errors` off the function after a refusal, as from ajv's.
 */
function lazyValidator(ajv: Ajv, schema: object): ValidateFunction {
  let compiled: ValidateFunction | undefined;
  const validate = ((data: unknown) => {
    compiled ??= ajv.compile(schema);
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  }) as ValidateFunction;
  return validate;
}

async function validationPlugin(app: FastifyInstance): Promise<void> {
  const bodyAjv = createAjv({ useDefaults: true, coerceTypes: false, removeAdditional: false });
  const textAjv = createAjv({ useDefaults: true, coerceTypes: true, removeAdditional: false });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJsonBody);
  app.setValidatorCompiler(({ schema, httpPart }: { schema: FastifySchema; httpPart?: string }) => lazyValidator(httpPart === 'body' ? bodyAjv : textAjv, schema as object));
}

export default fp(validationPlugin, { name: 'validation' });
