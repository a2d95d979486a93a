/**
 * Storage routes (SPEC §4.2, §4.3 rule 5): the one-shot multipart upload to `{storageUrl}/file`
 * and the signed, bearer-less download and thumbnail links. The resumable upload lives beside
 * them (tus.ts) and ends in the same commit.
 */
import { createHash } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import multipart, { type MultipartFile, type MultipartValue } from '@fastify/multipart';
import { Type } from 'typebox';
import { checkFileName, FILE_TYPE_PATTERN } from '../../shared/names.js';
import { DocumentSchema, ProblemSchema, Uuid } from '../../shared/schemas.js';
import type { AccessFacts, ContentService, UploadForm } from '../domain/content-service.js';
import { holdEntry } from '../audit/http.js';
import type { DocumentService } from '../domain/document-service.js';
import { CONTENT_SAFETY_HEADERS, contentDisposition, parseRange, showableInline } from '../domain/http-serving.js';
import type { LinkKind, Links } from '../domain/links.js';
import { ApiError, badRequest, notFound, payloadTooLarge } from '../errors.js';
import { principalOf } from '../plugins/auth.js';
import type { ContentParts } from '../storage/index.js';
import { SizeLimitError, type ContentStorage, type ReceivedContent } from '../storage/types.js';
import { tusRoutes } from './tus.js';

export interface StorageRouteOptions {
  /** The audit log's onRequest hook (first, before authentication). */
  auditAccess: onRequestHookHandler;
  content: ContentService;
  documents: DocumentService;
  storage: ContentStorage;
  maxUploadBytes: number;
}

export const StorageParams = Type.Object({ documentId: Uuid });
/** A parameter given twice arrives as a list: the link was altered (403), not malformed (400). */
const LinkParameter = Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())]));
const LinkQuery = Type.Object({
  v: LinkParameter,
  expires: LinkParameter,
  sig: LinkParameter,
  /** The client and organization the link was handed to (signed with it). */
  client: LinkParameter,
  org: LinkParameter,
});
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
  return result;
}

/** Passes the bytes through, adding their count to `facts.detail.bytes` (what the audit log says was sent). */
function counted(source: Readable, facts: AccessFacts | undefined): Readable {
  if (!facts) return source;
  facts.detail.bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      (facts.detail.bytes as number) += chunk.length;
      callback(null, chunk);
    },
  });
  source.once('error', (error) => counter.destroy(error));
  return source.pipe(counter);
}

async function serveLink(request: FastifyRequest, reply: FastifyReply, content: ContentService, storage: ContentStorage, kind: LinkKind) {
  const params = request.params as { documentId: string };
  const facts = request.auditNote ?? undefined;
  const target = await content.resolveLink(params.documentId, request.query as Record<string, string | string[]>, kind, facts);
  if (facts) facts.detail.size = target.size;
  // A stored file is always saved, never shown on the server's origin (whatever its type, a
  // client chose it); a thumbnail is the server's own PNG.
  const disposition = kind === 'thumbnail' && showableInline(target.mediaType) ? 'inline' : 'attachment';
  void reply
    .headers(CONTENT_SAFETY_HEADERS)
    // A signed link is a capability that carries no cookie or credential: any origin may read it
    // (the app's viewer fetches it from its own loopback origin).
    .header('Access-Control-Allow-Origin', '*')
    .header('Access-Control-Expose-Headers', 'Content-Disposition, Content-Range, ETag')
    .header('ETag', target.etag)
    .header('Accept-Ranges', 'bytes')
    .header('Cache-Control', 'private, max-age=900')
    .header('Content-Disposition', contentDisposition(target.fileName, disposition));
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch !== undefined && ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === target.etag)) {
    return reply.code(304).send();
  }
  const ifRange = request.headers['if-range'];
  const range = ifRange === undefined || ifRange === target.etag ? parseRange(request.headers.range, target.size) : ({ kind: 'whole' } as const);
  if (range.kind === 'unsatisfiable') {
    return reply.problem(416, `the requested range is outside the ${target.size} bytes of the content`, { 'Content-Range': `bytes */${target.size}` });
  }
  void reply.type(target.mediaType);
  if (range.kind === 'partial') {
    if (facts) facts.detail.range = `${range.start}-${range.end}`;
    return reply
      .code(206)
      .header('Content-Range', `bytes ${range.start}-${range.end}/${target.size}`)
      .header('Content-Length', String(range.end - range.start + 1))
      .send(counted(storage.read(target.key, range), facts));
  }
  const body = target.sha256
    ? verifiedContent(storage.read(target.key), target.sha256, () => {
        request.log.error({ documentId: params.documentId, key: target.key }, 'stored content does not match its sha256; the download was refused or cut off');
        // Answered as such when nothing was sent yet (a file of one chunk); otherwise the connection is cut.
        return notFound(
          `the stored file of document ${params.documentId} is damaged on the server (its bytes no longer match its sha256); the server administrator must restore it from a backup, or the file must be uploaded again`,
        );
      })
    : storage.read(target.key);
  return reply.code(200).header('Content-Length', String(target.size)).send(counted(body, facts));
}

/**
 * The whole file as stored, checked against the sha256 its record holds: the last chunk is held
 * back until the hash is known, and a file whose bytes changed on the disk (bit rot, a bad
 * restore, an edit in place) is cut off one chunk short of its Content-Length, so the client sees
 * an incomplete download instead of a wrong file that looks complete.
 */
export function verifiedContent(source: Readable, sha256: string, onMismatch: () => Error): Readable {
  const hash = createHash('sha256');
  let held: Buffer | undefined;
  const checker = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      const previous = held;
      held = chunk;
      callback(null, previous);
    },
    flush(callback) {
      if (hash.digest('hex') !== sha256) {
        callback(onMismatch());
        return;
      }
      callback(null, held);
    },
  });
  source.once('error', (error) => checker.destroy(error));
  return source.pipe(checker);
}

export async function storageRoutes(appBase: FastifyInstance, options: StorageRouteOptions): Promise<void> {
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
        summary: 'Upload the document content (multipart: file, FileName, Type, Id; Patient.File.Write)',
        description:
          'Only the field file is required. FileName, Type and Id (SPEC §4.2) are checked when sent: Id must name the document of this URL, ' +
          'Type must be a file type such as STL. A document with content takes a new version only with If-Match: "<sha256 of the current content>".',
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

  for (const kind of ['content', 'thumbnail'] as const) {
    app.get(
      `/storage/v1/documents/:documentId/${kind}`,
      {
        onRequest: auditAccess,
        config: { audit: { action: kind === 'content' ? 'download' : 'thumbnail' } },
        schema: {
          tags: ['storage'],
          summary: kind === 'content' ? 'Download the content through a signed link (storageDownloadUri)' : 'Download the PNG thumbnail through a signed link (thumbnailDownloadUri)',
          params: StorageParams,
          querystring: LinkQuery,
        },
      },
      async (request, reply) => serveLink(request, reply, content, storage, kind),
    );
  }
}

export interface ContentRouteOptions {
  auditAccess: onRequestHookHandler;
  parts: ContentParts;
  documents: DocumentService;
  links: Links;
  maxUploadBytes: number;
  typeBase: string;
}

/**
 * The storage area: its own body handling (multipart streamed, tus chunks read raw, anything
 * else left unread so the route can say 400 rather than 415), the routes, and the background
 * work's lifecycle (garbage collection and thumbnail renders resumed at start).
 */
export async function contentRoutes(app: FastifyInstance, options: ContentRouteOptions): Promise<void> {
  const { parts } = options;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));
  // The size limit is storage's to enforce (exactly, while streaming): busboy only stops one byte past it.
  await app.register(multipart, { throwFileSizeLimit: false });
  await app.register(storageRoutes, { auditAccess: options.auditAccess, content: parts.service, documents: options.documents, storage: parts.storage, maxUploadBytes: options.maxUploadBytes });
  await app.register(tusRoutes, { auditAccess: options.auditAccess, content: parts.service, resumable: parts.resumable, links: options.links, maxUploadBytes: options.maxUploadBytes, typeBase: options.typeBase });
  app.addHook('onReady', async () => {
    await parts.janitor.start();
    await parts.thumbnails.resumePending();
  });
  app.addHook('onClose', async () => {
    parts.janitor.stop();
    await parts.thumbnails.close();
  });
}
