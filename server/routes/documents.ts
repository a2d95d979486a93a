/** SPEC §4.1 create, §4.3 search, and DESIGN's GET of one document. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { negotiate } from '@fastify/accept-negotiator';
import { Type } from '#typebox';
import {
  CreateDocumentBody,
  CreateDocumentResponse,
  DocumentParams,
  DocumentSchema,
  DocumentVersionsResponse,
  OrganizationHeaders,
  PatientParams,
  ProblemSchema,
  SearchBody,
  SearchResponse,
} from '../../shared/schemas.js';
import type {} from '../audit/http.js';
import type { AccessGuard } from '../domain/access.js';
import type { ContentService } from '../domain/content-service.js';
import type { DocumentService, EncodedPage } from '../domain/document-service.js';
import { notFound } from '../errors.js';
import type { PatientAccess } from '../db/types.js';
import type { Principal } from '../identity/tokens.js';
import { principalOf } from '../plugins/auth.js';
import { emptyBodyAsObject } from '../plugins/validation.js';
import { authorizeOrganization, organizationOf } from './authorize.js';

export interface DocumentRouteOptions {
  documents: DocumentService;
  access: AccessGuard;
  content: ContentService;
  /** PATIENT_DOCS_PUBLIC_URL: Location names the document there, path prefix included. */
  publicUrl: string;
}

/**
 * The problem statuses each route can answer, as the OpenAPI document lists them: SPEC §4.1 for
 * create, §4.3 for search (no 409: a search conflicts with nothing), and the same rules for the
 * extension routes; 503 is a busy or full server (docs/operations.md, "Disk full, data folder read-only, database busy").
 */
function problems<const S extends number>(...statuses: S[]): Record<S, typeof ProblemSchema> {
  return Object.fromEntries(statuses.map((status) => [status, ProblemSchema])) as Record<S, typeof ProblemSchema>;
}
const createErrors = problems(400, 401, 403, 404, 409, 413, 500, 503);
const searchErrors = problems(400, 401, 403, 404, 413, 500, 503);
const readErrors = problems(400, 401, 403, 404, 500, 503);

export interface AuthorizedPatient {
  principal: Principal;
  organizationId: string;
  patientId: string;
  /** The patient's document change counter, read with the check (search pages are proven current by it). */
  documentChanges: number;
}

/** Checks organization membership, patient existence, access and consent; returns lowercased ids. */
export async function authorizePatient(request: FastifyRequest, access: AccessGuard, scope: string, patientId: string): Promise<AuthorizedPatient> {
  return authorizePatientNow(request, access, scope, patientId);
}

/** authorizePatient, answered in this turn when the answers are known (AccessGuard.requirePatientOf). */
function authorizePatientNow(request: FastifyRequest, access: AccessGuard, scope: string, patientId: string): AuthorizedPatient | Promise<AuthorizedPatient> {
  const principal = principalOf(request);
  access.requireScope(principal, scope);
  const organizationId = organizationOf(request);
  const patient = patientId.toLowerCase();
  const authorized = ({ documentChanges }: PatientAccess): AuthorizedPatient => ({ principal, organizationId, patientId: patient, documentChanges });
  const checked = access.requirePatientOf(principal, organizationId, patient);
  return checked instanceof Promise ? checked.then(authorized) : authorized(checked);
}

/** The filters of a search as the audit log keeps them (ids counted, not listed). */
function searchFilters(body: SearchBody | undefined): Record<string, unknown> {
  const filters: Record<string, unknown> = {};
  if (!body || typeof body !== 'object') return filters;
  if (typeof body.path === 'string') filters.path = body.path.slice(0, 300);
  if (typeof body.fileName === 'string') filters.fileName = body.fileName.slice(0, 300);
  if (typeof body.fileType === 'string') filters.fileType = body.fileType.slice(0, 32);
  if (typeof body.hasContent === 'boolean') filters.hasContent = body.hasContent;
  if (typeof body.scannedFrom === 'string') filters.scannedFrom = body.scannedFrom.slice(0, 64);
  if (typeof body.scannedTo === 'string') filters.scannedTo = body.scannedTo.slice(0, 64);
  if (Array.isArray(body.id)) filters.ids = body.id.length;
  return filters;
}

/** Sends a page the service already serialized (the route's schema still documents its shape). */
function sendPage(request: FastifyRequest, reply: FastifyReply, page: EncodedPage): FastifyReply {
  if (request.auditNote) Object.assign(request.auditNote.detail, { results: page.count, total: page.total });
  reply.type('application/json; charset=utf-8').header('Vary', 'Accept-Encoding');
  if (page.gzip) reply.header('Content-Encoding', 'gzip');
  return reply.send(page.body);
}

/** Whether the request's Accept-Encoding takes gzip (over identity; q-values honoured). */
function acceptsGzip(request: FastifyRequest): boolean {
  const header = request.headers['accept-encoding'];
  return typeof header === 'string' && negotiate(header, ['gzip', 'identity']) === 'gzip';
}

export async function documentRoutes(appBase: FastifyInstance, options: DocumentRouteOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  const { documents, access, content } = options;

  app.post(
    '/v1/patients/:patientId/documents',
    {
      config: { audit: { action: 'create' } },
      schema: {
        tags: ['documents'],
        summary: 'Create a document placeholder (Patient.File.Write)',
        security: [{ bearer: [] }],
        params: PatientParams,
        headers: OrganizationHeaders,
        body: CreateDocumentBody,
        response: { 201: CreateDocumentResponse, ...createErrors },
      },
    },
    // The patient's access and consent are checked by the create itself (DocumentService.create).
    async (request, reply) => {
      const { principal, organizationId } = await authorizeOrganization(request, access, 'Patient.File.Write');
      const patientId = request.params.patientId.toLowerCase();
      const created = await documents.create(patientId, request.body, { clientId: principal.clientId, organizationId, operationId: request.id });
      if (request.auditNote) {
        request.auditNote.documentId = created.id;
        request.auditNote.detail = { path: created.path, fileName: created.fileName };
      }
      return reply.code(201).header('Location', `${options.publicUrl}/v1/patients/${patientId}/documents/${created.id}`).send(created);
    },
  );

  app.post(
    '/v1/patients/:patientId/documents/search',
    {
      config: { audit: { action: 'search' }, bodyOptional: true },
      preValidation: emptyBodyAsObject,
      schema: {
        tags: ['documents'],
        summary: 'Search a patient’s documents (Patient.File.Read)',
        security: [{ bearer: [] }],
        params: PatientParams,
        headers: OrganizationHeaders,
        body: SearchBody,
        response: { 200: SearchResponse, ...searchErrors },
      },
    },
    // Not async: a page asked for again, by a client whose access is known, is answered within
    // this call (no promise from here to the socket); anything to read first goes the async way.
    (request, reply) => {
      if (request.auditNote) request.auditNote.detail = searchFilters(request.body);
      const search = ({ principal, organizationId, patientId, documentChanges }: AuthorizedPatient) => {
        const holder = { clientId: principal.clientId, organizationId };
        // Already serialized (and often cached) by the service: sent as is, past the response serializer.
        const page = documents.searchPage(patientId, request.body, holder, { acceptsGzip: acceptsGzip(request), documentChanges });
        if (!(page instanceof Promise)) return void sendPage(request, reply, page);
        return page.then((encoded) => void sendPage(request, reply, encoded));
      };
      const authorized = authorizePatientNow(request, access, 'Patient.File.Read', request.params.patientId);
      return authorized instanceof Promise ? authorized.then(search) : search(authorized);
    },
  );

  app.get(
    '/v1/patients/:patientId/documents/:documentId',
    {
      config: { audit: { action: 'read' } },
      schema: {
        tags: ['documents'],
        summary: 'Read one document (Patient.File.Read)',
        security: [{ bearer: [] }],
        params: DocumentParams,
        headers: OrganizationHeaders,
        response: { 200: DocumentSchema, ...readErrors },
      },
    },
    async (request) => {
      const { principal, organizationId, patientId } = await authorizePatient(request, access, 'Patient.File.Read', request.params.patientId);
      const document = await documents.get(patientId, request.params.documentId);
      if (!document) throw notFound(`document ${request.params.documentId} does not exist for patient ${patientId}`);
      if (request.auditNote && document.hasContent) request.auditNote.version = document.version;
      return documents.toDto(document, { clientId: principal.clientId, organizationId });
    },
  );

  app.delete(
    '/v1/patients/:patientId/documents/:documentId',
    {
      config: { audit: { action: 'delete' } },
      schema: {
        tags: ['documents'],
        summary: 'Delete a document (Patient.File.Write); it leaves search, its history stays for audit',
        security: [{ bearer: [] }],
        params: DocumentParams,
        headers: OrganizationHeaders,
        response: { 204: Type.Null({ description: 'Deleted' }), ...readErrors },
      },
    },
    async (request, reply) => {
      const { principal, organizationId, patientId } = await authorizePatient(request, access, 'Patient.File.Write', request.params.patientId);
      const removed = await content.remove(patientId, request.params.documentId, { clientId: principal.clientId, organizationId, operationId: request.id });
      if (request.auditNote) {
        if (removed.hasContent) request.auditNote.version = removed.version;
        request.auditNote.detail = { path: removed.path, fileName: removed.fileName };
      }
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/v1/patients/:patientId/documents/:documentId/versions',
    {
      config: { audit: { action: 'versions' } },
      schema: {
        tags: ['documents'],
        summary: 'The content versions of a document, newest first (Patient.File.Read)',
        description:
          'Each version says whether it is the current content and carries a signed download link (15 minutes). ' +
          "A version whose stored file the server's administrator marked lost (verify --mark-lost) has contentLostAt " +
          '(when it was marked) and storageDownloadUri null; once the file is restored from a backup (verify --mark-restored) ' +
          'contentLostAt is null and the link is back. A version marked lost stays marked when a newer version is uploaded.',
        security: [{ bearer: [] }],
        params: DocumentParams,
        headers: OrganizationHeaders,
        response: { 200: DocumentVersionsResponse, ...readErrors },
      },
    },
    async (request) => {
      const { principal, organizationId, patientId } = await authorizePatient(request, access, 'Patient.File.Read', request.params.patientId);
      const versions = await content.versions(patientId, request.params.documentId, { clientId: principal.clientId, organizationId });
      if (request.auditNote) request.auditNote.detail = { versions: versions.length };
      return { versions };
    },
  );
}
