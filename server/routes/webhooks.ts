/**
 * SPEC §4.5 and DESIGN §3 "Webhooks": subscriptions, the delivery log, the dead-letter queue,
 * redelivery and metrics. Every route needs Webhook.Manage and an Organization-ID the client
 * belongs to; a subscription is visible only to its organization.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '#typebox';
import {
  DeadLetterListResponse,
  DeadLetterParams,
  DeliveryLogResponse,
  OrganizationHeaders,
  ProblemSchema,
  SEARCH_DEFAULTS,
  SubscribeBody,
  SubscriptionSchema,
  WebhookMetricsSchema,
  WebhookPageQuery,
  WebhookParams,
} from '../../shared/schemas.js';
import type { AccessGuard } from '../domain/access.js';
import { notFound, unauthorized } from '../errors.js';
import { subscriptionDto, type WebhookService } from '../webhooks/service.js';
import { authorizeOrganization } from './authorize.js';

export interface WebhookRouteOptions {
  webhooks: WebhookService;
  access: AccessGuard;
  /** PATIENT_DOCS_PUBLIC_URL: Location names the subscription there, path prefix included. */
  publicUrl: string;
}

const errors = { 400: ProblemSchema, 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 409: ProblemSchema, 500: ProblemSchema };
const tags = ['webhooks'];
const security = [{ bearer: [] }];

async function authorize(request: FastifyRequest, access: AccessGuard): Promise<{ clientId: string; organizationId: string }> {
  const { principal, organizationId } = await authorizeOrganization(request, access, 'Webhook.Manage');
  return { clientId: principal.clientId, organizationId };
}

export async function webhookRoutes(appBase: FastifyInstance, options: WebhookRouteOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  const { webhooks, access } = options;
  const headers = OrganizationHeaders;

  app.post(
    '/v1/webhooks/subscribe',
    { schema: { tags, security, headers, summary: 'Subscribe a callback to events (Webhook.Manage); the hmac is never echoed; the same subscription sent again answers 200 with the existing one', body: SubscribeBody, response: { 200: SubscriptionSchema, 201: SubscriptionSchema, ...errors } } },
    async (request, reply) => {
      const actor = await authorize(request, access);
      const { subscription, created } = await webhooks.subscribe(request.body, actor);
      // 200: this exact subscription exists already (a retried request), and this is it.
      return reply.code(created ? 201 : 200).header('Location', `${options.publicUrl}/v1/webhooks/${subscription.id}`).send(subscription);
    },
  );

  app.get('/v1/webhooks', { schema: { tags, security, headers, summary: 'The organization’s subscriptions', response: { 200: Type.Array(SubscriptionSchema), ...errors } } }, async (request) => {
    const { organizationId } = await authorize(request, access);
    return webhooks.list(organizationId);
  });

  app.get(
    '/v1/webhooks/metrics',
    { schema: { tags, security, headers, summary: 'Message counts of the organization’s subscriptions', response: { 200: WebhookMetricsSchema, ...errors } } },
    async (request) => {
      const { organizationId } = await authorize(request, access);
      return webhooks.metrics(organizationId);
    },
  );

  app.get('/v1/webhooks/:id', { schema: { tags, security, headers, params: WebhookParams, response: { 200: SubscriptionSchema, ...errors } } }, async (request) => {
    const { organizationId } = await authorize(request, access);
    return subscriptionDto(await webhooks.get(organizationId, request.params.id));
  });

  app.delete('/v1/webhooks/:id', { schema: { tags, security, headers, params: WebhookParams, response: { 204: Type.Null(), ...errors } } }, async (request, reply) => {
    const { organizationId } = await authorize(request, access);
    await webhooks.remove(organizationId, request.params.id);
    return reply.code(204).send(null);
  });

  app.get(
    '/v1/webhooks/:id/deliveries',
    { schema: { tags, security, headers, params: WebhookParams, querystring: WebhookPageQuery, summary: 'Delivery log: every attempt, newest first', response: { 200: DeliveryLogResponse, ...errors } } },
    async (request) => {
      const { organizationId } = await authorize(request, access);
      const offset = request.query.offset ?? 0;
      const limit = request.query.limit ?? SEARCH_DEFAULTS.limit;
      const page = await webhooks.deliveries(organizationId, request.params.id, offset, limit);
      return { attempts: page.rows, offset, limit, total: page.total };
    },
  );

  app.get(
    '/v1/webhooks/:id/dead-letters',
    { schema: { tags, security, headers, params: WebhookParams, querystring: WebhookPageQuery, summary: 'Dead-letter queue: messages whose retries are exhausted', response: { 200: DeadLetterListResponse, ...errors } } },
    async (request) => {
      const { organizationId } = await authorize(request, access);
      const offset = request.query.offset ?? 0;
      const limit = request.query.limit ?? SEARCH_DEFAULTS.limit;
      const page = await webhooks.deadLetters(organizationId, request.params.id, offset, limit);
      return { messages: page.rows, offset, limit, total: page.total };
    },
  );

  app.post(
    '/v1/webhooks/:id/dead-letters/:messageId/redeliver',
    {
      schema: {
        tags,
        security,
        headers,
        params: DeadLetterParams,
        summary: 'Send a dead message again, with the same messageId and body',
        response: { 202: Type.Object({ messageId: Type.String(), state: Type.Literal('pending') }), ...errors },
      },
    },
    async (request, reply) => {
      const { organizationId } = await authorize(request, access);
      await webhooks.redeliver(organizationId, request.params.id, request.params.messageId);
      return reply.code(202).send({ messageId: request.params.messageId.toLowerCase(), state: 'pending' as const });
    },
  );
}

/**
 * Whether a request carries the metrics token: compared as SHA-256 digests, so the time taken says
 * nothing about how much of a guess was right.
 */
function carriesToken(request: FastifyRequest, expectedHash: Buffer): boolean {
  const header = request.headers.authorization;
  const given = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined;
  return given !== undefined && timingSafeEqual(createHash('sha256').update(given).digest(), expectedHash);
}

/**
 * Prometheus text exposition of the message counts of every subscription (no patient data, no ids).
 * Off unless PATIENT_DOCS_METRICS_TOKEN is set, and then only for a bearer of that token: the
 * counts tell an outsider how busy a clinic is and whether its receivers fail.
 */
export async function webhookMetricsRoutes(app: FastifyInstance, options: { webhooks: WebhookService; metricsToken: string | undefined }): Promise<void> {
  const expectedHash = options.metricsToken === undefined ? undefined : createHash('sha256').update(options.metricsToken).digest();
  const summary = 'Prometheus metrics (bearer PATIENT_DOCS_METRICS_TOKEN; off when it is not set)';
  app.get('/metrics', { schema: { tags: ['operations'], summary, security: [{ metrics: [] }] } }, async (request, reply) => {
    if (expectedHash === undefined) throw notFound('metrics are off on this server; the administrator turns them on with PATIENT_DOCS_METRICS_TOKEN');
    if (!carriesToken(request, expectedHash)) throw unauthorized('the metrics token is missing or not valid (Authorization: Bearer <PATIENT_DOCS_METRICS_TOKEN>)');
    const counts = await options.webhooks.metrics();
    const lines = [
      '# HELP patient_docs_webhook_messages Webhook messages by state.',
      '# TYPE patient_docs_webhook_messages gauge',
      ...(['queued', 'delivered', 'dead', 'cancelled'] as const).map((state) => `patient_docs_webhook_messages{state="${state}"} ${counts[state]}`),
      '# HELP patient_docs_webhook_failed_attempts_total Failed webhook delivery attempts.',
      '# TYPE patient_docs_webhook_failed_attempts_total counter',
      `patient_docs_webhook_failed_attempts_total ${counts.failed}`,
      '',
    ];
    return reply.type('text/plain; version=0.0.4').send(lines.join('\n'));
  });
}
