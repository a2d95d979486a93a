/**
 * Response serializers compiled by a route's first answer of each status rather than at start, as
 * the request checks are (validation.ts): Fastify compiles every response schema of every route when
 * the server gets ready, a new schema compiler each, which was half of a started server's CPU (about
 * a third of a second per start) for answers that process may never send. The serializer made is
 * Fastify's own (fast-json-stringify, with the shared schemas and the server's options), so what a
 * client receives is the same.
 */
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

type SerializerFactory = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer']>;

/** The compiler factory Fastify itself would use, resolved from Fastify's own location. */
function fastifysSerializerFactory(): SerializerFactory {
  const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
  const select = fromFastify('@fastify/fast-json-stringify-compiler') as { SerializerSelector: () => SerializerFactory };
  return select.SerializerSelector();
}

/** Fastify's `schemaController.compilersFactory.buildSerializer`, compiling each response schema when it first serializes. */
export function lazySerializerFactory(): SerializerFactory {
  // Fastify's compiler and its schema library (a tenth of a second to load) are loaded by the first answer too.
  let factory: SerializerFactory | undefined;
  return (externalSchemas, options) => {
    let compile: ReturnType<SerializerFactory> | undefined;
    return (route) => {
      let serialize: ((doc: unknown) => string) | undefined;
      return (doc: unknown) => (serialize ??= (compile ??= (factory ??= fastifysSerializerFactory())(externalSchemas, options))(route))(doc);
    };
  };
}
