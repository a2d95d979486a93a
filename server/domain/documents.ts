/** Document placeholders and search (SPEC §4.1, §4.3) with the rules of DESIGN §3. */
import { timeOrderedUuid } from './ids.js';
import { checkFileName, checkPath, fileTypeFromName, foldKey, ROOT_PATH } from '../../shared/names.js';
import { SEARCH_DEFAULTS, type CreateDocumentBody, type CreateDocumentResponse, type DocumentDto, type SearchBody, type SearchResponse } from '../../shared/schemas.js';
import { DuplicateError, type DocumentQuery, type DocumentRecord, type Store } from '../db/types.js';
import { badRequest, conflict } from '../errors.js';
import { outboxEvent } from './events.js';
import type { Links } from './links.js';

export interface Actor {
  clientId: string;
  organizationId: string;
  operationId: string;
}

/** Bytes of serialized search pages kept: about 300 pages of 50 documents (~28 KB each). */
const PAGE_CACHE_BYTES = 8 * 1024 * 1024;

interface CachedPage {
  changeCounter: number;
  linkExpiry: number;
  json: Buffer;
}

export class DocumentService {
  constructor(
    private readonly store: Store,
    private readonly links: Links,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Search pages as the bytes sent, cached per query and proven current by the patient's change
   * counter (one primary-key read) and by the links' expiry step (signed links change each minute).
   * A page re-opened, or several workstations on one patient, costs no index walk, no row reads
   * and no serialization. Bounded by bytes, least recently used first out.
   */
  private readonly pages = new Map<string, CachedPage>();
  private pageBytes = 0;

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
      id: timeOrderedUuid(),
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

  /** The SearchResponse of SPEC §4.3 serialized as JSON: what the route sends. */
  async searchJson(patientId: string, body: SearchBody): Promise<Buffer> {
    const offset = body.offset ?? SEARCH_DEFAULTS.offset;
    const limit = body.limit ?? SEARCH_DEFAULTS.limit;
    let pathKey: string | undefined;
    if (body.path !== undefined) {
      const folder = checkPath(body.path);
      if (!folder.ok) throw badRequest(folder.rule);
      pathKey = foldKey(folder.value);
    }
    const query: DocumentQuery = {
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
    };
    const key = JSON.stringify([query.patientId, query.ids, query.pathKey, query.hasContent, query.nameContains, query.fileType, query.sortBy, query.sortDirection, offset, limit]);
    const changeCounter = await this.store.documents.changeCounter(patientId);
    const linkExpiry = this.links.currentExpiry();
    const cached = this.pages.get(key);
    if (cached) {
      this.forget(key, cached);
      if (cached.changeCounter === changeCounter && cached.linkExpiry === linkExpiry) {
        this.remember(key, cached);
        return cached.json;
      }
    }
    const page = await this.store.documents.search(query);
    const response: SearchResponse = { documents: page.rows.map((row) => this.toDto(row)), offset, limit, total: page.total };
    const json = Buffer.from(JSON.stringify(response), 'utf8');
    if (json.length <= PAGE_CACHE_BYTES / 16) this.remember(key, { changeCounter, linkExpiry, json });
    return json;
  }

  private remember(key: string, page: CachedPage): void {
    this.pages.set(key, page);
    this.pageBytes += page.json.length;
    for (const [oldest, entry] of this.pages) {
      if (this.pageBytes <= PAGE_CACHE_BYTES) break;
      this.forget(oldest, entry);
    }
  }

  private forget(key: string, page: CachedPage): void {
    this.pages.delete(key);
    this.pageBytes -= page.json.length;
  }

  async get(patientId: string, documentId: string): Promise<DocumentRecord | undefined> {
    return this.store.documents.get(patientId, documentId);
  }
}
