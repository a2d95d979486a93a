/**
 * The storage area (SPEC §4.2, §4.3 rule 5) under /storage/v1: the one-shot upload (upload.ts), the
 * signed download and thumbnail links (download.ts) and the resumable upload (tus.ts), with the
 * body handling they share and the background work's lifecycle.
 */
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import multipart from '@fastify/multipart';
import type { DocumentService } from '../domain/document-service.js';
import type { Links } from '../domain/links.js';
import type { ContentParts } from '../storage/index.js';
import { downloadRoutes } from './download.js';
import { tusRoutes } from './tus.js';
import { uploadRoutes } from './upload.js';

export interface StorageAreaOptions {
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
export async function storageArea(app: FastifyInstance, options: StorageAreaOptions): Promise<void> {
  const { parts } = options;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));
  // The size limit is storage's to enforce (exactly, while streaming): busboy only stops one byte past it.
  await app.register(multipart, { throwFileSizeLimit: false });
  await app.register(uploadRoutes, { auditAccess: options.auditAccess, content: parts.service, documents: options.documents, storage: parts.storage, maxUploadBytes: options.maxUploadBytes });
  await app.register(downloadRoutes, { auditAccess: options.auditAccess, content: parts.service, storage: parts.storage });
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
