/**
 * Resumable upload: tus 1.0 (core, creation, expiration, termination, checksum with sha256) at
 * `{storageUrl}/uploads`. A clinic's 1 GiB scan survives a dropped connection: the client asks
 * for the offset (HEAD) and continues from it (PATCH). The last byte ends in the same atomic
 * commit and `document.uploaded` event as the one-shot upload.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '#typebox';
import { checkFileName, FILE_TYPE_PATTERN } from '../../shared/names.js';
import { scanTime } from '../domain/scan-time.js';
import { buildProblem, PROBLEM_CONTENT_TYPE } from '../../shared/problem.js';
import { Uuid } from '../../shared/schemas.js';
import type { ContentService, UploadForm } from '../domain/content-service.js';
import type { Links } from '../domain/links.js';
import { ApiError, badRequest, isTransientStorageFault, notFound, payloadTooLarge } from '../errors.js';
import { holdEntry } from '../audit/http.js';
import { principalOf } from '../plugins/auth.js';
import { instanceOf } from '../plugins/problems.js';
import { ChecksumMismatchError, OffsetMismatchError, SizeLimitError, type ResumableStore, type ResumableUpload } from '../storage/types.js';

export const TUS_VERSION = '1.0.0';
export const TUS_EXTENSIONS = 'creation,expiration,termination,checksum';
/** An upload not touched for this long is abandoned; the janitor removes it. */
export const RESUMABLE_LIFETIME_MS = 24 * 3_600_000;
const OFFSET_CONTENT_TYPE = 'application/offset+octet-stream';

export interface TusRouteOptions {
  /** The audit log's onRequest hook: a resumable upload is recorded when it completes or is refused. */
  auditAccess: onRequestHookHandler;
  content: ContentService;
  resumable: ResumableStore;
  links: Links;
  maxUploadBytes: number;
  /** Base of problem `type` URLs (the public URL). */
  typeBase: string;
}

const UploadsParams = Type.Object({ documentId: Uuid });
const UploadParams = Type.Object({ documentId: Uuid, uploadId: Type.String({ maxLength: 64 }) });

/** Upload-Metadata: comma-separated `key base64value` pairs (the value may be absent). */
export function parseUploadMetadata(header: string | undefined): Record<string, string> {
  const metadata: Record<string, string> = {};
  if (header === undefined || header.trim() === '') return metadata;
  for (const pair of header.split(',')) {
    const [key, value, extra] = pair.trim().split(' ');
    if (!key || extra !== undefined || !/^[\x21-\x7e]+$/.test(key) || (value !== undefined && !/^[A-Za-z0-9+/]*={0,2}$/.test(value))) {
      throw badRequest('Upload-Metadata must be comma-separated "key base64value" pairs');
    }
    metadata[key] = value === undefined ? '' : Buffer.from(value, 'base64').toString('utf8');
  }
  return metadata;
}

/** The form fields of SPEC §4.2 as tus clients name them (filename/filetype) or as the form does. */
export function formFromMetadata(metadata: Record<string, string>, documentId: string): UploadForm {
  const id = metadata.Id ?? metadata.id;
  if (id !== undefined && id.toLowerCase() !== documentId.toLowerCase()) throw badRequest('Upload-Metadata Id does not match the document of this storage URL');
  const form: UploadForm = {};
  const fileName = metadata.FileName ?? metadata.filename;
  if (fileName !== undefined) {
    const check = checkFileName(fileName);
    if (!check.ok) throw badRequest(`Upload-Metadata filename: ${check.rule}`);
    form.fileName = check.value;
  }
  const type = (metadata.Type ?? metadata.filetype)?.trim().toUpperCase();
  // tus clients often send a media type here (model/stl); only an uppercase file type counts.
  if (type !== undefined && FILE_TYPE_PATTERN.test(type)) form.fileType = type;
  // An extension (docs/api.md "Scan times"): when the file was made.
  const scannedAt = metadata.ScannedAt ?? metadata.scannedAt;
  if (scannedAt !== undefined && scannedAt !== '') form.scannedAt = scanTime(scannedAt, 'Upload-Metadata ScannedAt');
  return form;
}

function nonNegativeInteger(header: string | string[] | undefined, name: string): number {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !/^\d{1,16}$/.test(value)) throw badRequest(`${name} must be a non-negative integer`);
  return Number(value);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Upload-Checksum: `sha256 <base64 digest>`; other algorithms are refused (Tus-Checksum-Algorithm). */
export function parseChecksum(header: string | undefined): Buffer | undefined {
  if (header === undefined) return undefined;
  const [algorithm, digest] = header.trim().split(/\s+/);
  if (algorithm?.toLowerCase() !== 'sha256') throw badRequest('Upload-Checksum algorithm must be sha256');
  const bytes = Buffer.from(digest ?? '', 'base64');
  if (bytes.length !== 32) throw badRequest('Upload-Checksum must carry a base64 sha256 digest');
  return bytes;
}

export async function tusRoutes(appBase: FastifyInstance, options: TusRouteOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  const { auditAccess, content, resumable, links, maxUploadBytes } = options;
  const audit = { audit: { action: 'upload', resumable: true } } as const;
  const facts = (request: FastifyRequest) => request.auditNote ?? undefined;
  const base = '/storage/v1/documents/:documentId/uploads';

  app.addHook('onSend', async (_request, reply) => {
    void reply.header('Tus-Resumable', TUS_VERSION);
  });

  /** Every tus request but OPTIONS names the protocol version it speaks (tus core). */
  const requireTusVersion = async (request: FastifyRequest): Promise<void> => {
    if (request.headers['tus-resumable'] !== TUS_VERSION) {
      throw new ApiError(412, `the Tus-Resumable header must be ${TUS_VERSION}`, { 'Tus-Version': TUS_VERSION });
    }
  };

  const loadUpload = async (documentId: string, uploadId: string): Promise<ResumableUpload> => {
    const upload = await resumable.get(uploadId);
    if (!upload || upload.documentId !== documentId.toLowerCase()) throw notFound(`upload ${uploadId} does not exist or has expired`);
    return upload;
  };

  const uploadHeaders = (reply: FastifyReply, upload: ResumableUpload): void => {
    void reply.header('Upload-Offset', String(upload.offset)).header('Upload-Expires', new Date(upload.expiresAt).toUTCString()).header('Cache-Control', 'no-store');
  };

  /** The last byte arrived: the same commit as the one-shot upload. */
  const finish = async (request: FastifyRequest, upload: ResumableUpload): Promise<void> => {
    const principal = principalOf(request);
    const document = await content.authorizeWrite(principal, upload.documentId, facts(request));
    content.checkPrecondition(document, upload.ifMatch === null ? undefined : `"${upload.ifMatch}"`);
    const release = content.claim(document.id);
    try {
      const received = await resumable.complete(upload.id);
      try {
        const updated = await content.commit(
          document,
          received,
          formFromMetadata(upload.metadata, document.id),
          { clientId: principal.clientId, organizationId: document.organizationId, operationId: request.id },
          { keepOnFault: true },
        );
        const note = facts(request);
        if (note) {
          note.completed = true;
          note.version = updated.version;
          note.detail = { bytes: received.size, sha256: received.sha256, resumable: true };
        }
      } catch (error) {
        // Disk full, read-only or busy at the last moment: the upload stays resumable (the client
        // retries after the 503's Retry-After and sends its last byte again) instead of starting over.
        if (isTransientStorageFault(error)) await resumable.reopen(upload, received).catch(() => undefined);
        throw error;
      }
    } finally {
      release();
    }
  };

  app.options(base, { schema: { tags: ['storage'], summary: 'tus 1.0 capabilities', params: UploadsParams } }, async (_request, reply) =>
    reply
      .code(204)
      .header('Tus-Version', TUS_VERSION)
      .header('Tus-Extension', TUS_EXTENSIONS)
      .header('Tus-Max-Size', String(maxUploadBytes))
      .header('Tus-Checksum-Algorithm', 'sha256')
      .send(),
  );

  app.post(
    base,
    {
      onRequest: [auditAccess, app.authenticate, requireTusVersion],
      config: audit,
      schema: { tags: ['storage'], summary: 'tus creation: start a resumable upload (Patient.File.Write)', security: [{ bearer: [] }], params: UploadsParams },
    },
    async (request, reply) => {
      // The commit at the last byte may outlive the connection: the entry waits to say whether it was stored.
      const settled = holdEntry(request);
      try {
        const document = await content.authorizeWrite(principalOf(request), request.params.documentId, facts(request));
        const ifMatch = request.headers['if-match'];
        content.checkPrecondition(document, ifMatch);
        if (request.headers['upload-defer-length'] !== undefined) throw badRequest('Upload-Defer-Length is not supported; send Upload-Length');
        const length = nonNegativeInteger(request.headers['upload-length'], 'Upload-Length');
        if (length > maxUploadBytes) throw payloadTooLarge(`Upload-Length ${length} is larger than the upload limit of ${maxUploadBytes} bytes`);
        const metadata = parseUploadMetadata(headerValue(request.headers['upload-metadata']));
        formFromMetadata(metadata, document.id);
        const createdAt = new Date();
        const upload = await resumable.create({
          id: randomUUID(),
          documentId: document.id,
          length,
          metadata,
          ifMatch: document.hasContent ? document.sha256 : null,
          createdBy: principalOf(request).clientId,
          createdAt: createdAt.toISOString(),
          expiresAt: new Date(createdAt.getTime() + RESUMABLE_LIFETIME_MS).toISOString(),
        });
        if (length === 0) await resumable.exclusively(upload.id, () => finish(request, upload));
        return reply
          .code(201)
          .header('Location', `${links.storageUrl(document.id)}/uploads/${upload.id}`)
          .header('Upload-Expires', new Date(upload.expiresAt).toUTCString())
          .send();
      } finally {
        settled();
      }
    },
  );

  app.head(
    `${base}/:uploadId`,
    { onRequest: [auditAccess, app.authenticate, requireTusVersion], config: audit, schema: { tags: ['storage'], summary: 'tus core: the offset to resume from', security: [{ bearer: [] }], params: UploadParams } },
    async (request, reply) => {
      await content.authorizeWrite(principalOf(request), request.params.documentId, facts(request));
      const upload = await loadUpload(request.params.documentId, request.params.uploadId);
      uploadHeaders(reply, upload);
      return reply.code(200).header('Upload-Length', String(upload.length)).send();
    },
  );

  app.patch(
    `${base}/:uploadId`,
    {
      onRequest: [auditAccess, app.authenticate, requireTusVersion],
      config: audit,
      schema: { tags: ['storage'], summary: 'tus core: append bytes at Upload-Offset', security: [{ bearer: [] }], params: UploadParams },
    },
    async (request, reply) => {
      // The commit at the last byte may outlive the connection: the entry waits to say whether it was stored.
      const settled = holdEntry(request);
      try {
        await content.authorizeWrite(principalOf(request), request.params.documentId, facts(request));
        if (request.headers['content-type']?.split(';')[0]?.trim().toLowerCase() !== OFFSET_CONTENT_TYPE) {
          throw new ApiError(415, `PATCH bodies must be ${OFFSET_CONTENT_TYPE}`);
        }
        const offset = nonNegativeInteger(request.headers['upload-offset'], 'Upload-Offset');
        const checksum = parseChecksum(headerValue(request.headers['upload-checksum']));
        const upload = await loadUpload(request.params.documentId, request.params.uploadId);
        const declared = Number(request.headers['content-length']);
        if (Number.isFinite(declared) && offset + declared > upload.length) throw payloadTooLarge(`the chunk would end past Upload-Length ${upload.length}`);
        let updated: ResumableUpload;
        try {
          // The upload's only writer, on every instance, from the first byte to the database commit
          // at the last: a second PATCH or a DELETE meanwhile gets a 409, the clean-up passes it by.
          updated = await resumable.exclusively(upload.id, async () => {
            const appended = await resumable.append(upload.id, offset, request.raw, checksum);
            if (appended.offset === appended.length) await finish(request, appended);
            return appended;
          });
        } catch (error) {
          if (error instanceof OffsetMismatchError) throw new ApiError(409, error.message);
          if (error instanceof SizeLimitError) throw payloadTooLarge(`the chunk would end past Upload-Length ${upload.length}`);
          if (error instanceof ChecksumMismatchError) {
            // 460 is tus's own status; the body is still problem details.
            const body = { ...buildProblem({ status: 400, detail: error.message, instance: instanceOf(request), typeBase: options.typeBase }), status: 460, title: 'Checksum Mismatch', messageKey: 'CHECKSUM_MISMATCH' };
            return reply.code(460).type(PROBLEM_CONTENT_TYPE).send(body);
          }
          throw error;
        }
        uploadHeaders(reply, updated);
        return reply.code(204).send();
      } finally {
        settled();
      }
    },
  );

  app.delete(
    `${base}/:uploadId`,
    { onRequest: [auditAccess, app.authenticate, requireTusVersion], config: audit, schema: { tags: ['storage'], summary: 'tus termination: abandon an upload', security: [{ bearer: [] }], params: UploadParams } },
    async (request, reply) => {
      await content.authorizeWrite(principalOf(request), request.params.documentId, facts(request));
      const upload = await loadUpload(request.params.documentId, request.params.uploadId);
      try {
        await resumable.exclusively(upload.id, () => resumable.remove(upload.id));
      } catch (error) {
        if (error instanceof OffsetMismatchError) throw new ApiError(409, error.message);
        throw error;
      }
      return reply.code(204).send();
    },
  );
}
