/**
 * The signed, bearer-less download and thumbnail links (SPEC §4.3 rule 5): every parameter signed,
 * Range and ETag honoured, a stored file always served as an attachment, the whole file checked
 * against its SHA-256 as it streams.
 */
import { createHash } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '#typebox';
import type { AccessFacts, ContentService } from '../domain/content-service.js';
import { CONTENT_SAFETY_HEADERS, contentDisposition, parseRange, showableInline } from '../domain/http-serving.js';
import type { LinkKind } from '../domain/links.js';
import { notFound } from '../errors.js';
import type { ContentStorage } from '../storage/types.js';
import { StorageParams } from './upload.js';

export interface DownloadRouteOptions {
  /** The audit log's onRequest hook (first, before authentication). */
  auditAccess: onRequestHookHandler;
  content: ContentService;
  storage: ContentStorage;
}

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
    ? verifiedContent(
        storage.read(target.key),
        target.sha256,
        () => {
          request.log.error({ documentId: params.documentId, key: target.key }, 'stored content does not match its sha256; the download was refused or cut off');
          // Answered as such when nothing was sent yet (a file of up to VERIFY_HOLD_BYTES); otherwise the connection is cut.
          return notFound(
            `the stored file of document ${params.documentId} is damaged on the server (its bytes no longer match its sha256); the server administrator must restore it from a backup, or the file must be uploaded again`,
          );
        },
        facts,
      )
    : counted(storage.read(target.key), facts);
  return reply.code(200).header('Content-Length', String(target.size)).send(body);
}

/**
 * Bytes of a download held back until the whole file's sha256 is known: a file this small (a
 * typical PDF, a small scan) is checked whole before its first byte leaves, so damage is answered
 * as a 404 problem whatever size of chunks the storage reads in (a disk's large reads, an object
 * store's network-sized ones).
 */
export const VERIFY_HOLD_BYTES = 1024 * 1024;

/**
 * The whole file as stored, checked against the sha256 its record holds: its last
 * VERIFY_HOLD_BYTES or more (whole chunks) are held back until the hash is known, and a file whose
 * bytes changed in the storage (bit rot, a bad restore, an edit in place) is cut off short of its
 * Content-Length, so the client sees an incomplete download instead of a wrong file that looks
 * complete. `facts` counts the bytes passed on (what the audit log says was sent) in the same stage.
 */
export function verifiedContent(source: Readable, sha256: string, onMismatch: () => Error, facts?: AccessFacts): Readable {
  const hash = createHash('sha256');
  const held: Buffer[] = [];
  let heldBytes = 0;
  if (facts) facts.detail.bytes = 0;
  const passOn = (stream: Transform, chunk: Buffer): void => {
    if (facts) (facts.detail.bytes as number) += chunk.length;
    stream.push(chunk);
  };
  const checker = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      held.push(chunk);
      heldBytes += chunk.length;
      // Chunks go out from the front while what stays held is still at least VERIFY_HOLD_BYTES.
      while (held.length > 1 && heldBytes - held[0]!.length >= VERIFY_HOLD_BYTES) {
        const sent = held.shift()!;
        heldBytes -= sent.length;
        passOn(this, sent);
      }
      callback();
    },
    flush(callback) {
      if (hash.digest('hex') !== sha256) {
        callback(onMismatch());
        return;
      }
      for (const chunk of held) passOn(this, chunk);
      callback();
    },
  });
  source.once('error', (error) => checker.destroy(error));
  return source.pipe(checker);
}

export async function downloadRoutes(appBase: FastifyInstance, options: DownloadRouteOptions): Promise<void> {
  const app = appBase.withTypeProvider<TypeBoxTypeProvider>();
  const { auditAccess, content, storage } = options;

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
