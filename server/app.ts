/** The HTTP composition root: plugins first, then routes by area. */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { capConnectionsPerAddress, httpServerOptions, lingerAfterEarlyAnswer, watchRequestBodies } from './connections.js';
import { memoryFor, type ServerContext } from './context.js';
import { redactedUrl } from './log-redaction.js';
import { auditAccess, auditHookFor, auditPlugin } from './audit/http.js';
import { ClientStandings } from './identity/client-standing.js';
import authPlugin from './plugins/auth.js';
import { lazySerializerFactory } from './plugins/lazy-serializers.js';
import problemsPlugin, { clientErrors, frameworkErrors } from './plugins/problems.js';
import validationPlugin from './plugins/validation.js';
import { adminRoutes } from './routes/admin.js';
import { documentRoutes } from './routes/documents.js';
import { identityRoutes } from './routes/identity.js';
import { organizationRoutes } from './routes/organizations.js';
import { patientRoutes } from './routes/patients.js';
import { problemPages } from './routes/problem-pages.js';
import { storageArea } from './routes/storage.js';
import { webhookMetricsRoutes, webhookRoutes } from './routes/webhooks.js';

export interface AppOptions {
  /** SHA-256 of the admin token. */
  adminTokenHash: Buffer;
  logger?: boolean | object;
}

export async function buildApp(context: ServerContext, options: AppOptions): Promise<FastifyInstance> {
  const { config } = context;
  const logging = {
    level: config.logLevel,
    redact: ['req.headers.authorization', 'req.headers.cookie', 'req.body.client_secret', 'req.body.hmac'],
    serializers: {
      // Fastify's own request fields, with the URL's signatures and secrets replaced (see log-redaction.ts).
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: redactedUrl(request.url),
        host: request.host,
        remoteAddress: request.ip,
        remotePort: request.socket?.remotePort,
      }),
    },
  };
  const app = Fastify({
    // A test or the desktop app may pass its own level and stream; the redaction always applies.
    logger: options.logger === false ? false : { ...logging, ...(typeof options.logger === 'object' ? options.logger : {}) },
    genReqId: () => randomUUID(),
    bodyLimit: config.maxJsonBytes,
    routerOptions: { maxParamLength: 512 },
    frameworkErrors: frameworkErrors(config.publicUrl),
    clientErrorHandler: clientErrors(config.publicUrl),
    // Only the proxies IT names are believed about the client's address (X-Forwarded-For).
    trustProxy: config.trustedProxies.length > 0 ? config.trustedProxies : false,
    ajv: { customOptions: { coerceTypes: false } },
    schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory() } },
    // Header time-out here; body rate and connections per address just below (connections.ts).
    http: httpServerOptions(config),
  });
  const unwatch = [watchRequestBodies(app.server, config, config.publicUrl), capConnectionsPerAddress(app.server, config)];
  app.addHook('onClose', async () => {
    for (const stop of unwatch) stop();
  });
  // An answer before the whole body arrived (a 413, a 401) lets the sender finish instead of resetting it.
  // Fastify answers a JSON body it refused unread (over PATIENT_DOCS_MAX_JSON_BYTES) with
  // `Connection: close`, on which Node would close at once: the linger closes after the body instead.
  app.addHook('onSend', async (request, reply, payload) => {
    if (lingerAfterEarlyAnswer(request.raw, reply.raw)) reply.removeHeader('connection');
    return payload;
  });

  // JSON only: a text body is a wrong content type (415), not a string to validate.
  app.removeContentTypeParser('text/plain');
  await app.register(problemsPlugin, { typeBase: config.publicUrl });
  await app.register(validationPlugin);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Patient Docs API', version: '1.0.0', description: 'Patient document placeholders, content, search and webhooks (SPEC.md).' },
      servers: [{ url: config.publicUrl }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          admin: { type: 'http', scheme: 'bearer', description: 'PATIENT_DOCS_ADMIN_TOKEN' },
          metrics: { type: 'http', scheme: 'bearer', description: 'PATIENT_DOCS_METRICS_TOKEN' },
        },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(authPlugin, { tokens: context.tokens, standings: new ClientStandings(context.store.clients, Date.now, memoryFor(context.store)) });
  // Every access to a patient's files goes into the audit log, refused ones included (server/audit/).
  await app.register(auditPlugin);
  const trackAccess = auditAccess(context.audit);
  await app.register(identityRoutes, {
    clients: context.store.clients,
    tokens: context.tokens,
    keys: context.keys,
    limiter: context.tokenLimiter,
    verifier: context.secretVerifier,
    issuer: config.publicUrl,
    audience: config.audience,
  });
  await app.register(problemPages);

  // Everything under /v1 carries a bearer token (the autohooks pattern of STYLE.md). Each route gets
  // its hooks when it is registered: the audit entry first (so a request refused for its token is
  // recorded too) where the route names an action, then the token check, then the route's own.
  await app.register(async (api) => {
    api.addHook('onRoute', (route) => {
      const own = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
      const audit = route.config?.audit;
      route.onRequest = [...(audit ? [auditHookFor(context.audit, audit)] : []), api.authenticate, ...own];
    });
    await api.register(documentRoutes, { documents: context.documents, access: context.access, content: context.content.service, publicUrl: config.publicUrl });
    await api.register(patientRoutes, { patients: context.store.patients, access: context.access });
    await api.register(organizationRoutes, { organizations: context.store.organizations, access: context.access });
    await api.register(webhookRoutes, { webhooks: context.webhooks, access: context.access, publicUrl: config.publicUrl });
  });

  await app.register(webhookMetricsRoutes, { webhooks: context.webhooks, metricsToken: config.metricsToken });
  await app.register(storageArea, {
    auditAccess: trackAccess,
    parts: context.content,
    documents: context.documents,
    links: context.links,
    maxUploadBytes: config.maxUploadBytes,
    typeBase: config.publicUrl,
  });
  await app.register(adminRoutes, { directory: context.directory, audit: context.store.audit, auditLog: context.audit, adminTokenHash: options.adminTokenHash });

  app.get('/healthz', { schema: { tags: ['operations'], summary: 'Liveness (also the no-op baseline of the benchmark)' } }, async () => ({ status: 'ok' }));
  return app;
}
