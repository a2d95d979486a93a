/** GET /v1/patients: the patients an organization may see (access and consent), by name, identifier and birth date. */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { OrganizationHeaders, PatientListQuery, PatientListResponse, ProblemSchema, SEARCH_DEFAULTS } from '../../shared/schemas.js';
import type { PatientRepository } from '../db/types.js';
import type { AccessGuard } from '../domain/access.js';
import { patientFilter, patientSummary } from '../domain/directory.js';
import { authorizeOrganization } from './authorize.js';
import type {} from '../audit/http.js';

export async function patientRoutes(appBase: FastifyInstance, options: { patients: PatientRepository; access: AccessGuard }): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/v1/patients',
    {
      // Who is a patient of the clinic is itself personal data: every listing is in the audit log.
      config: { audit: { action: 'list-patients' } },
      schema: {
        tags: ['patients'],
        summary: 'List the patients the organization may see (Patient.Read or Patient.File.Read)',
        security: [{ bearer: [] }],
        headers: OrganizationHeaders,
        querystring: PatientListQuery,
        response: { 200: PatientListResponse, 400: ProblemSchema, 401: ProblemSchema, 403: ProblemSchema },
      },
    },
    async (request) => {
      const { organizationId } = await authorizeOrganization(request, options.access, 'Patient.Read', 'Patient.File.Read');
      const offset = request.query.offset ?? 0;
      const limit = request.query.limit ?? SEARCH_DEFAULTS.limit;
      const filter = patientFilter(request.query);
      const page = await options.patients.listVisible(organizationId, filter, offset, limit);
      if (request.auditNote) {
        request.auditNote.detail = {
          ...(request.query.name ? { name: request.query.name } : {}),
          ...(request.query.identifier ? { identifier: request.query.identifier } : {}),
          ...(request.query.birthDate ? { birthDate: request.query.birthDate } : {}),
          offset,
          results: page.rows.length,
          total: page.total,
        };
      }
      return {
        patients: page.rows.map(patientSummary),
        offset,
        limit,
        total: page.total,
      };
    },
  );
}
