/**
 * Two validators: JSON bodies are checked strictly (no type coercion: "5" is not 5), while
 * params, query strings and headers — which are text on the wire — are coerced.
 */
import type { FastifyInstance, FastifySchema } from 'fastify';
import fp from 'fastify-plugin';
import { createAjv } from '../../shared/ajv.js';

async function validationPlugin(app: FastifyInstance): Promise<void> {
  const bodyAjv = createAjv({ useDefaults: true, coerceTypes: false, removeAdditional: false });
  const textAjv = createAjv({ useDefaults: true, coerceTypes: true, removeAdditional: false });
  app.setValidatorCompiler(({ schema, httpPart }: { schema: FastifySchema; httpPart?: string }) => {
    const ajv = httpPart === 'body' ? bodyAjv : textAjv;
    return ajv.compile(schema as object);
  });
}

export default fp(validationPlugin, { name: 'validation' });
