/** The admin API of DESIGN §2 (bearer PATIENT_DOCS_ADMIN_TOKEN). */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '#typebox';
import {
  AdminClientBody,
  AdminClientPatch,
  AdminClientSecretBody,
  AdminClientSchema,
  ClientId,
  AdminOrderBody,
  AdminOrderPatch,
  AdminOrganizationBody,
  AdminPatientBody,
  AdminPatientPatch,
  AdminPatientList,
  AdminPatientSchema,
  OrderSchema,
  PatientListQuery,
  OrganizationSchema,
  ProblemSchema,
  Uuid,
} from '../../shared/schemas.js';
import { AuditListQuery, AuditListResponse, listAudit } from '../audit/query.js';
import type { AuditLog } from '../audit/log.js';
import type { AuditRepository } from '../db/types.js';
import type { DirectoryService } from '../domain/directory.js';
import { unauthorized } from '../errors.js';
import { bearerToken } from '../plugins/auth.js';

export function hashAdminToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

const errors = { 400: ProblemSchema, 401: ProblemSchema, 404: ProblemSchema, 409: ProblemSchema };
const IdParams = Type.Object({ id: Uuid });

export async function adminRoutes(appBase: FastifyInstance, options: { directory: DirectoryService; audit: AuditRepository; auditLog: AuditLog; adminTokenHash: Buffer }): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  const { directory } = options;

  app.addHook('onRequest', async (request: FastifyRequest) => {
    const given = hashAdminToken(bearerToken(request));
    if (!timingSafeEqual(given, options.adminTokenHash)) throw unauthorized('the admin token is not valid');
  });

  const security = [{ admin: [] }];
  const tags = ['admin'];

  app.post('/admin/v1/organizations', { schema: { tags, security, body: AdminOrganizationBody, response: { 200: OrganizationSchema, 201: OrganizationSchema, ...errors } } }, async (request, reply) => {
    const { organization, created } = await directory.upsertOrganization(request.body);
    return reply.code(created ? 201 : 200).send(organization);
  });

  app.get('/admin/v1/organizations', { schema: { tags, security, response: { 200: Type.Array(OrganizationSchema), ...errors } } }, async () => directory.listOrganizations());

  app.post('/admin/v1/patients', { schema: { tags, security, body: AdminPatientBody, response: { 201: AdminPatientSchema, ...errors } } }, async (request, reply) => {
    return reply.code(201).send(await directory.createPatient(request.body, request.id));
  });

  app.get(
    '/admin/v1/patients',
    { schema: { tags, security, querystring: PatientListQuery, response: { 200: AdminPatientList, ...errors } } },
    async (request) => directory.listPatients(request.query),
  );

  app.get('/admin/v1/patients/:id', { schema: { tags, security, params: IdParams, response: { 200: AdminPatientSchema, ...errors } } }, async (request) =>
    directory.getPatient(request.params.id),
  );

  app.patch('/admin/v1/patients/:id', { schema: { tags, security, params: IdParams, body: AdminPatientPatch, response: { 200: AdminPatientSchema, ...errors } } }, async (request) =>
    directory.updatePatient(request.params.id, request.body, request.id),
  );

  const ConsentParams = Type.Object({ id: Uuid, organizationId: Uuid });
  app.put('/admin/v1/patients/:id/consents/:organizationId', { schema: { tags, security, params: ConsentParams, response: { 200: AdminPatientSchema, ...errors } } }, async (request) =>
    directory.setConsent(request.params.id, request.params.organizationId, true),
  );
  app.delete('/admin/v1/patients/:id/consents/:organizationId', { schema: { tags, security, params: ConsentParams, response: { 200: AdminPatientSchema, ...errors } } }, async (request) =>
    directory.setConsent(request.params.id, request.params.organizationId, false),
  );

  app.post('/admin/v1/clients', { schema: { tags, security, body: AdminClientBody, response: { 201: AdminClientSchema, ...errors } } }, async (request, reply) => {
    return reply.code(201).header('Cache-Control', 'no-store').send(await directory.createClient(request.body));
  });
  app.get('/admin/v1/clients', { schema: { tags, security, response: { 200: Type.Array(AdminClientSchema), ...errors } } }, async () => directory.listClients());
  const ClientParams = Type.Object({ clientId: ClientId });
  app.patch('/admin/v1/clients/:clientId', { schema: { tags, security, params: ClientParams, body: AdminClientPatch, response: { 200: AdminClientSchema, ...errors } } }, async (request) =>
    directory.updateClient(request.params.clientId, request.body),
  );
  app.post(
    '/admin/v1/clients/:clientId/secret',
    { schema: { tags, security, params: ClientParams, body: AdminClientSecretBody, response: { 200: AdminClientSchema, ...errors } } },
    async (request, reply) => reply.header('Cache-Control', 'no-store').send(await directory.rotateClientSecret(request.params.clientId, request.body?.clientSecret)),
  );

  app.get(
    '/admin/v1/audit',
    {
      schema: {
        tags,
        security,
        summary: 'The audit log: who accessed which patient files, when, from where — and who was refused (newest first)',
        description:
          'Filters combine (AND). `since` is inclusive and `until` exclusive; a date alone is midnight at the server (for `until`, the end of that day). Entries still buffered (at most about 200 ms old) appear once written.',
        querystring: AuditListQuery,
        response: { 200: AuditListResponse, ...errors },
      },
    },
    async (request) => {
      // What this server has buffered goes in first, so the answer includes the accesses of the last moments.
      await options.auditLog.flush();
      return listAudit(options.audit, request.query);
    },
  );

  app.post('/admin/v1/orders', { schema: { tags, security, body: AdminOrderBody, response: { 201: OrderSchema, ...errors } } }, async (request, reply) => {
    return reply.code(201).send(await directory.createOrder(request.body, request.id));
  });
  app.patch('/admin/v1/orders/:id', { schema: { tags, security, params: IdParams, body: AdminOrderPatch, response: { 200: OrderSchema, ...errors } } }, async (request) =>
    directory.updateOrder(request.params.id, request.body.status, request.id),
  );
}
