/**
 * GET /v1/organizations/{organizationId}: an organization's name for a client that belongs to it
 * (the app shows its clinic by name, not by id). Any scope will do: the name of one's own
 * organization is no patient data.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { OrganizationParams, OrganizationSummarySchema, ProblemSchema } from '../../shared/schemas.js';
import type { OrganizationRepository } from '../db/types.js';
import type { AccessGuard } from '../domain/access.js';
import { notFound } from '../errors.js';
import { principalOf } from '../plugins/auth.js';

export async function organizationRoutes(appBase: FastifyInstance, options: { organizations: OrganizationRepository; access: AccessGuard }): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/v1/organizations/:organizationId',
    {
      schema: {
        tags: ['organizations'],
        summary: "An organization's name, for a client of that organization",
        security: [{ bearer: [] }],
        params: OrganizationParams,
        response: { 200: OrganizationSummarySchema, 400: ProblemSchema, 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema },
      },
    },
    async (request) => {
      const organizationId = request.params.organizationId.toLowerCase();
      await options.access.requireOrganization(principalOf(request), organizationId);
      const organization = await options.organizations.get(organizationId);
      // A client may name an organization that was since removed from the database by hand.
      if (!organization) throw notFound(`organization ${organizationId} does not exist`);
      return { id: organization.id, name: organization.name };
    },
  );
}
