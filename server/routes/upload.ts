/**
 * The one-shot upload (SPEC §4.2): multipart to `{storageUrl}/file`, the file part streamed to a
 * temp object with its SHA-256, then the commit that the resumable upload (tus.ts) ends in too.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { MultipartFile, MultipartValue } from '@fastify/multipart';
import { Type } from '#typebox';
import { checkFileName, FILE_TYPE_PATTERN } from '../../shared/names.js';
import { scanTime } from '../domain/scan-time.js';
import { DocumentSchema, ProblemSchema, Uuid } from '../../shared/schemas.js';
import type { AccessFacts, ContentService, UploadForm } from '../domain/content-service.js';
import { holdEntry } from '../audit/http.js';
import type { DocumentService } from '../domain/document-service.js';
import { ApiError, badRequest, isStoreUnavailable, payloadTooLarge } from '../errors.js';
import { principalOf } from '../plugins/auth.js';
import { SizeLimitError, type ContentStorage, type ReceivedContent } from '../storage/types.js';

export interface UploadRouteOptions {
  /** The audit log's onRequest hook (first, before authentication). */
  auditAccess: onRequestHookHandler;
  content: ContentService;
  documents: DocumentService;
  storage: ContentStorage;
  maxUploadBytes: number;
}

export const StorageParams = Type.Object({ documentId: Uuid });
const errors = { 400: ProblemSchema, 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 409: ProblemSchema, 413: ProblemSchema, 500: ProblemSchema };

/** What the form fields other than `file` may add up to: a Content-Length beyond limit + this is refused unread. */
const FORM_OVERHEAD_BYTES = 64 * 1024;
const FORM_FIELD_BYTES = 4096;
const FILE_PART_HIGH_WATER_MARK = 1024 * 1024;

/** An error thrown while reading the body: the client's fault unless the disk failed. */
export function classifyBodyError(error: unknown, maxBytes: number): unknown {
  if (error instanceof SizeLimitError || (error as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') {
    return payloadTooLarge(`the file is larger than the upload limit of ${maxBytes} bytes`);
  }
  if (error instanceof ApiError) return error;
  // The object store failing (storage/s3.ts) is the server's fault, not the body's: 503 (errors.ts).
  if (isStoreUnavailable(error)) return error;
  const failure = error as { code?: string; syscall?: string };
  if (typeof failure.syscall === 'string' && failure.code !== 'ECONNRESET' && failure.code !== 'EPIPE') return error;
  const message = error instanceof Error ? error.message.split('\n')[0] : 'malformed body';
  return badRequest(`the multipart body could not be read (${message})`);
}

interface ReceivedForm {
  received: ReceivedContent | undefined;
  fields: Map<string, string>;
  problem: string | undefined;
}

/** Streams the form: the file part to a temp object (whatever its position), the text fields into a map. */
async function receiveForm(request: FastifyRequest, storage: ContentStorage, maxBytes: number): Promise<ReceivedForm> {
  const form: ReceivedForm = { received: undefined, fields: new Map(), problem: undefined };
  try {
    const parts = request.parts({
      // One byte more than allowed reaches storage, which then refuses it: the limit is exact.
      limits: { fileSize: maxBytes + 1, files: 4, fields: 16, parts: 24, fieldSize: FORM_FIELD_BYTES, headerPairs: 100 },
      // The file part's buffer: 64 KiB socket reads pass through without pausing the parser on each one.
      fileHwm: FILE_PART_HIGH_WATER_MARK,
    });
    for await (const part of parts) {
      if (part.type === 'file') {
        await receiveFilePart(part, form, storage, maxBytes);
      } else {
        const field = part as MultipartValue;
        if (field.valueTruncated) form.problem ??= `form field ${field.fieldname} is longer than ${FORM_FIELD_BYTES} bytes`;
        else form.fields.set(field.fieldname, String(field.value));
      }
    }
  } catch (error) {
    if (form.received) await storage.discard(form.received.temp);
    throw classifyBodyError(error, maxBytes);
  }
  return form;
}

async function receiveFilePart(part: MultipartFile, form: ReceivedForm, storage: ContentStorage, maxBytes: number): Promise<void> {
  if (part.fieldname !== 'file' || form.received) {
    form.problem ??= part.fieldname === 'file' ? 'the form must carry exactly one file field' : `unexpected file field ${part.fieldname}; the content goes in the field named file`;
    part.file.resume();
    await new Promise((resolve) => part.file.once('end', resolve).once('close', resolve));
    return;
  }
  form.received = await storage.receive(part.file, maxBytes);
  if (part.file.truncated) throw new SizeLimitError(maxBytes);
}

/**
 * Validates the SPEC §4.2 fields; the document keeps its own name, the form's name is recorded.
 * Only `file` is required: SPEC §4.2 describes FileName, Type and Id as what the first-party web
 * client sends, "not guaranteed for other clients", and the storage URL already names the
 * document. Each is checked when it is sent: an Id naming another document is refused.
 */
function uploadForm(form: ReceivedForm, documentId: string): UploadForm {
  if (form.problem) throw badRequest(form.problem);
  const id = form.fields.get('Id');
  if (id !== undefined && id.trim().toLowerCase() !== documentId.toLowerCase()) throw badRequest(`form field Id (${id.slice(0, 64)}) does not match the document of this storage URL`);
  if (!form.received) throw badRequest('form field file is required (the binary content)');
  const result: UploadForm = {};
  const fileName = form.fields.get('FileName');
  if (fileName !== undefined) {
    const check = checkFileName(fileName);
    if (!check.ok) throw badRequest(`form field FileName: ${check.rule}`);
    result.fileName = check.value;
  }
  const type = form.fields.get('Type');
  if (type !== undefined && type !== '') {
    const upper = type.trim().toUpperCase();
    if (!FILE_TYPE_PATTERN.test(upper)) throw badRequest('form field Type must be an uppercase file type of 1–16 letters or digits, such as PDF or STL');
    result.fileType = upper;
  }
  // An extension (docs/api.md "Scan times"): when the file was made.
  const scannedAt = form.fields.get('ScannedAt');
  if (scannedAt !== undefined && scannedAt !== '') result.scannedAt = scanTime(scannedAt, 'form field ScannedAt');
  return result;
}

export async function uploadRoutes(appBase: FastifyInstance, options: UploadRouteOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  const { auditAccess, content, documents, storage, maxUploadBytes } = options;

  /** The one-shot upload once past the route's checks; `facts` collects what the audit log records. */
  const receiveUpload = async (request: FastifyRequest, reply: FastifyReply, documentId: string, facts: AccessFacts | undefined) => {
    const document = await content.authorizeWrite(principalOf(request), documentId, facts);
    content.checkPrecondition(document, request.headers['if-match']);
    if (!request.isMultipart()) throw badRequest('the body must be multipart/form-data with the field file (and, optionally, FileName, Type and Id)');
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxUploadBytes + FORM_OVERHEAD_BYTES) {
      throw payloadTooLarge(`the upload (${declared} bytes) is larger than the upload limit of ${maxUploadBytes} bytes`);
    }
    const release = content.claim(document.id);
    let form: ReceivedForm | undefined;
    try {
      form = await receiveForm(request, storage, maxUploadBytes);
      const fields = uploadForm(form, document.id);
      const received = form.received!;
      form.received = undefined;
      const updated = await content.commit(document, received, fields, { clientId: principalOf(request).clientId, organizationId: document.organizationId, operationId: request.id });
      if (facts) {
        facts.completed = true;
        facts.version = updated.version;
        facts.detail = { bytes: received.size, sha256: received.sha256 };
      }
      return reply.code(201).header('ETag', `"${updated.sha256 ?? ''}"`).send(documents.toDto(updated, { clientId: principalOf(request).clientId, organizationId: document.organizationId }));
    } finally {
      if (form?.received) await storage.discard(form.received.temp);
      release();
    }
  };

  app.post(
    '/storage/v1/documents/:documentId/file',
    {
      onRequest: [auditAccess, app.authenticate],
      config: { audit: { action: 'upload' } },
      schema: {
        tags: ['storage'],
        summary: 'Upload the document content (multipart: file, FileName, Type, Id, ScannedAt; Patient.File.Write)',
        description:
          'Only the field file is required. FileName, Type and Id (SPEC §4.2) are checked when sent: Id must name the document of this URL, ' +
          'Type must be a file type such as STL. ScannedAt (an extension) is when the file was made, ISO 8601 with a time zone; without it the document keeps its scan time. A document with content takes a new version only with If-Match: "<sha256 of the current content>".',
        security: [{ bearer: [] }],
        consumes: ['multipart/form-data'],
        params: StorageParams,
        response: { 201: DocumentSchema, ...errors },
      },
    },
    async (request, reply) => {
      const facts = request.auditNote ?? undefined;
      const settled = holdEntry(request);
      try {
        return await receiveUpload(request, reply, request.params.documentId, facts);
      } finally {
        settled();
      }
    },
  );
}
