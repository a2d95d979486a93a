/** Document placeholders and search (SPEC §4.1, §4.3) with the rules of DESIGN §3. */
import { randomUUID } from 'node:crypto';
import { checkFileName, checkPath, fileTypeFromName, foldKey, ROOT_PATH } from '../../shared/names.js';
import { SEARCH_DEFAULTS, type CreateDocumentBody, type CreateDocumentResponse, type DocumentDto, type SearchBody, type SearchResponse } from '../../shared/schemas.js';
import { DuplicateError, type DocumentRecord, type Store } from '../db/types.js';
import { badRequest, conflict } from '../errors.js';
import { outboxEvent } from './events.js';
import type { Links } from './links.js';

export interface Actor {
  clientId: string;
  organizationId: string;
  operationId: string;
}

export class DocumentService {
  constructor(
    private readonly store: Store,
    private readonly links: Links,
    private readonly now: () => Date = () => new Date(),
  ) {}

  toDto(document: DocumentRecord): DocumentDto {
    return {
      id: document.id,
      storageUrl: this.links.storageUrl(document.id),
      fileName: document.fileName,
      fileType: document.fileType,
      path: document.path,
      lastModifiedAt: document.lastModifiedAt,
      createdAt: document.createdAt,
      hasContent: document.hasContent,
      fileSize: document.fileSize,
      sha256: document.sha256,
      version: document.version,
      storageDownloadUri: document.hasContent ? this.links.signed(document.id, document.version, 'content') : null,
      thumbnailDownloadUri: document.hasContent && document.thumbnailKey ? this.links.signed(document.id, document.version, 'thumbnail') : null,
    };
  }

  /** The document as webhook messages carry it: no signed links. */
  toEventData(document: DocumentRecord): Record<string, unknown> {
    const { storageDownloadUri: _download, thumbnailDownloadUri: _thumbnail, ...rest } = this.toDto(document);
    return rest;
  }

  async create(patientId: string, body: CreateDocumentBody, actor: Actor): Promise<CreateDocumentResponse> {
    const name = checkFileName(body.fileName);
    if (!name.ok) throw badRequest(name.rule);
    const folder = checkPath(body.path ?? ROOT_PATH);
    if (!folder.ok) throw badRequest(folder.rule);
    const timestamp = this.now().toISOString();
    const document: DocumentRecord = {
      id: randomUUID(),
      patientId,
      organizationId: actor.organizationId,
      fileName: name.value,
      fileType: body.fileType ?? fileTypeFromName(name.value),
      path: folder.value,
      createdAt: timestamp,
      lastModifiedAt: timestamp,
      hasContent: false,
      fileSize: null,
      sha256: null,
      version: 0,
      contentKey: null,
      contentType: null,
      thumbnailKey: null,
      createdBy: actor.clientId,
    };
    const event = outboxEvent('document.created', {
      patientId,
      organizationId: actor.organizationId,
      operationId: actor.operationId,
      occurredAt: timestamp,
      data: { document: this.toEventData(document) },
    });
    try {
      await this.store.documents.create(document, [event]);
    } catch (error) {
      if (error instanceof DuplicateError) {
        throw conflict(`a document named '${document.fileName}' already exists in '${document.path}' for this patient (names are compared case-insensitively); search for it or choose another name or path`);
      }
      throw error;
    }
    return { id: document.id, storageUrl: this.links.storageUrl(document.id), path: document.path, fileName: document.fileName, fileType: document.fileType };
  }

  async search(patientId: string, body: SearchBody): Promise<SearchResponse> {
    const offset = body.offset ?? SEARCH_DEFAULTS.offset;
    const limit = body.limit ?? SEARCH_DEFAULTS.limit;
    let pathKey: string | undefined;
    if (body.path !== undefined) {
      const folder = checkPath(body.path);
      if (!folder.ok) throw badRequest(folder.rule);
      pathKey = foldKey(folder.value);
    }
    const page = await this.store.documents.search({
      patientId,
      ids: body.id?.map((id) => id.toLowerCase()),
      pathKey,
      hasContent: body.hasContent,
      nameContains: body.fileName,
      fileType: body.fileType,
      sortBy: body.sortBy ?? SEARCH_DEFAULTS.sortBy,
      sortDirection: body.sortDirection ?? SEARCH_DEFAULTS.sortDirection,
      offset,
      limit,
    });
    return { documents: page.rows.map((row) => this.toDto(row)), offset, limit, total: page.total };
  }

  async get(patientId: string, documentId: string): Promise<DocumentRecord | undefined> {
    return this.store.documents.get(patientId, documentId);
  }
}
