/**
 * Two validators: JSON bodies are checked strictly (no type coercion: "5" is not 5), while
 * params, query strings and headers — which are text on the wire — are coerced.
 */
import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, FastifySchema } from 'fastify';
import fp from 'fastify-plugin';

type AddFormats = (ajv: Ajv) => Ajv;
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats;

function makeAjv(options: Options): Ajv {
  const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: true, ...options });
  addFormats(ajv);
  return ajv;
}

async function validationPlugin(app: FastifyInstance): Promise<void> {
  const bodyAjv = makeAjv({ coerceTypes: false, removeAdditional: false });
  const textAjv = makeAjv({ coerceTypes: true, removeAdditional: false });
  app.setValidatorCompiler(({ schema, httpPart }: { schema: FastifySchema; httpPart?: string }) => {
    const ajv = httpPart === 'body' ? bodyAjv : textAjv;
    return ajv.compile(schema as object);
  });
}

export default fp(validationPlugin, { name: 'validation' });
