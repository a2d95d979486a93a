/** Problem `type` URLs resolve to a short page that says what the error kind means. */
import type { FastifyInstance } from 'fastify';
import { Type } from '#typebox';
import { MESSAGE_KEYS, problemSlug } from '../../shared/problem.js';

const MEANINGS: Record<string, string> = {
  'validation-error': 'The request is invalid; the detail names the field and the rule. Correct it; do not retry unchanged.',
  unauthorized: 'The bearer token is missing, invalid or expired. Get a new token and retry.',
  forbidden: 'The client lacks the scope, organization access, patient access or patient consent.',
  'not-found': 'The patient, document or route does not exist.',
  conflict: 'A document with that name exists in that folder, or another upload is in progress. Search first.',
  'payload-too-large': 'The request, a header, the path or the upload exceeds a configured limit.',
  'rate-limited': 'Too many requests. Slow down and retry after the Retry-After delay.',
  'internal-error': 'An unexpected failure. Retry with backoff and keep the problem details (requestId).',
};

export async function problemPages(app: FastifyInstance): Promise<void> {
  const slugs = Object.keys(MESSAGE_KEYS).map((status) => problemSlug(Number(status)));
  app.get('/problems/:slug', { schema: { hide: true, params: Type.Object({ slug: Type.String({ maxLength: 64 }) }) } }, async (request, reply) => {
    const { slug } = request.params as { slug: string };
    if (!slugs.includes(slug)) return reply.problem(404, `no problem type ${slug}`);
    return reply.type('text/plain; charset=utf-8').send(`${slug}\n\n${MEANINGS[slug] ?? 'See the detail field of the problem.'}\n`);
  });
}
