import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { lazySerializerFactory } from './lazy-serializers.js';

const PATIENT = { $id: 'Patient', type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' }, born: { type: ['string', 'null'] } }, required: ['id', 'name', 'born'] };
const STORED = { id: 'p1', name: 'Jane Roe', born: null, secretNote: 'not for clients', count: 3 };

/** A server with one route answering `STORED` through a response schema that names a shared schema. */
async function serverWith(lazy: boolean): Promise<FastifyInstance> {
  const app = Fastify(lazy ? { schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory() } } } : {});
  app.addSchema(PATIENT);
  app.get('/patient', { schema: { response: { 200: { $ref: 'Patient#' }, 404: { type: 'object', properties: { title: { type: 'string' } } } } } }, async (request, reply) => {
    if ((request.query as { missing?: string }).missing) return reply.code(404).send({ title: 'no such patient', detail: 'dropped' });
    return STORED;
  });
  await app.ready();
  return app;
}

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

describe('response serializers compiled on first use', () => {
  it('answer byte for byte as Fastify’s own: shared schemas, nulls, and fields the schema does not name left out', async () => {
    const lazy = await serverWith(true);
    const eager = await serverWith(false);
    apps.push(lazy, eager);
    for (const url of ['/patient', '/patient', '/patient?missing=1']) {
      const [a, b] = await Promise.all([lazy.inject({ url }), eager.inject({ url })]);
      expect({ status: a.statusCode, body: a.body }).toEqual({ status: b.statusCode, body: b.body });
    }
    expect(JSON.parse((await lazy.inject({ url: '/patient' })).body)).toEqual({ id: 'p1', name: 'Jane Roe', born: null });
  });
});
