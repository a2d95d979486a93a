/** Document placeholders and search (SPEC §4.1, §4.3) with the rules of DESIGN §3. */
import { promisify } from 'node:util';
import { constants as zlibConstants, gzip } from 'node:zlib';
import { timeOrderedUuid } from './ids.js';
import { checkFileName, checkPath, checkPathFilter, fileTypeFromName, foldKey, ROOT_PATH } from '../../shared/names.js';
import { SEARCH_DEFAULTS, type CreateDocumentBody, type CreateDocumentResponse, type DocumentDto, type SearchBody, type SearchResponse } from '../../shared/schemas.js';
import { DuplicateError, NO_THUMBNAIL, type DocumentListing, type DocumentQuery, type DocumentRecord, type Store } from '../db/types.js';
import { badRequest, conflict } from '../errors.js';
import { checkAccess } from './access.js';
import { outboxEvent } from './events.js';
import type { LinkHolder, Links } from './links.js';
import { scanRange, scanTime } from './scan-time.js';

export interface Actor {
  clientId: string;
  organizationId: string;
  operationId: string;
}

/** Bytes of search-page JSON kept: about 300 pages of 50 documents (~28 KB each); a page's gzip copy (~5 KB) comes on top. */
const PAGE_CACHE_BYTES = 8 * 1024 * 1024;
/** Smaller pages (an empty result, a few documents) are sent as they are: gzip would hardly shrink them. */
const GZIP_FROM_BYTES = 1024;
const gzipAsync = promisify(gzip);

interface CachedPage {
  changeCounter: number;
  linkExpiry: number;
  json: Buffer;
  /** The page's documents, and all that match (the audit log records both). */
  count: number;
  total: number;
  sends: number;
  /** Compressed when first sent again, off the event loop (zlib's thread pool), then kept with the page. */
  gzip?: Promise<Buffer>;
  /** The same bytes once compressed. */
  gzipped?: Buffer;
}

export interface SearchOptions {
  /** Whether the client takes a gzipped body (its Accept-Encoding). */
  acceptsGzip?: boolean;
  /** The patient's change counter, if the caller read it with its access check; read here if not. */
  documentChanges?: number;
}

/** A search page as sent: the JSON of SPEC §4.3, gzipped when the client accepts it and it pays. */
export interface EncodedPage {
  body: Buffer;
  gzip: boolean;
  /** Documents on the page, and matching in all. */
  count: number;
  total: number;
}

/** toEventData signs no links: webhook messages carry none. */
const NO_HOLDER: LinkHolder = { clientId: '', organizationId: '' };

export class DocumentService {
  constructor(
    private readonly store: Store,
    private readonly links: Links,
    /** File types that get a thumbnail: their thumbnail link is handed out with the content's. */
    private readonly previewable: (fileType: string) => boolean = () => false,
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

  /** The document as the API shows it to `holder`, whose signed links it carries. */
  toDto(document: DocumentListing, holder: LinkHolder): DocumentDto {
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
      storageDownloadUri: document.hasContent ? this.links.signed(document.id, document.version, 'content', holder) : null,
      // DESIGN §3: null for types without a preview and before content exists (and when the render
      // failed). While the render runs, the link waits for it (ContentService.resolveLink).
      thumbnailDownloadUri:
        document.hasContent && document.thumbnailKey !== NO_THUMBNAIL && (document.thumbnailKey !== null || this.previewable(document.fileType))
          ? this.links.signed(document.id, document.version, 'thumbnail', holder)
          : null,
      scannedAt: document.scannedAt ?? null,
    };
  }

  /** The document as webhook messages carry it: no signed links. */
  toEventData(document: DocumentRecord): Record<string, unknown> {
    const { storageDownloadUri: _download, thumbnailDownloadUri: _thumbnail, ...rest } = this.toDto({ ...document, hasContent: false }, NO_HOLDER);
    rest.hasContent = document.hasContent;
    return rest;
  }

  /**
   * A placeholder, for an actor whose organization may write the patient's files: the store checks
   * that with the insert (404 for an unknown patient, 403 without access or consent; nothing is
   * written). A body that breaks a rule is refused with 400 only once the patient is found allowed,
   * so a refused patient is told as such whatever the body.
   */
  async create(patientId: string, body: CreateDocumentBody, actor: Actor): Promise<CreateDocumentResponse> {
    let document: DocumentRecord;
    try {
      document = this.placeholder(patientId, body, actor);
    } catch (refusal) {
      checkAccess(await this.store.patients.access(patientId, actor.organizationId), actor.organizationId, patientId);
      throw refusal;
    }
    const event = outboxEvent('document.created', {
      patientId,
      organizationId: actor.organizationId,
      operationId: actor.operationId,
      occurredAt: document.createdAt,
      data: { document: this.toEventData(document) },
    });
    try {
      checkAccess(await this.store.documents.createIfAllowed(document, [event]), actor.organizationId, patientId);
    } catch (error) {
      if (error instanceof DuplicateError) {
        throw conflict(`a document named '${document.fileName}' already exists in '${document.path}' for this patient (names are compared case-insensitively); search for it or choose another name or path`);
      }
      throw error;
    }
    return { id: document.id, storageUrl: this.links.storageUrl(document.id), path: document.path, fileName: document.fileName, fileType: document.fileType };
  }

  /** The record of a new placeholder; 400 (thrown) for a name, path or scan time that breaks DESIGN §3's rules. */
  private placeholder(patientId: string, body: CreateDocumentBody, actor: Actor): DocumentRecord {
    const name = checkFileName(body.fileName);
    if (!name.ok) throw badRequest(name.rule);
    const folder = checkPath(body.path ?? ROOT_PATH);
    if (!folder.ok) throw badRequest(folder.rule);
    const timestamp = this.now().toISOString();
    return {
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
      scannedAt: body.scannedAt === undefined ? null : scanTime(body.scannedAt, 'body/scannedAt'),
    };
  }

  /**
   * The SearchResponse of SPEC §4.3 as the route sends it. A page of fifty is ~28 KB of JSON and
   * ~5 KB gzipped. A page is gzipped once it is asked for again (a folder left open, several
   * workstations on one patient), and then sent gzipped to every client that accepts it (got,
   * browsers, fetch). A page asked for once is sent as it is: compressing it would cost more CPU
   * than sending 28 KB on a clinic's network.
   */
  searchPage(patientId: string, body: SearchBody, holder: LinkHolder, options: SearchOptions = {}): EncodedPage | Promise<EncodedPage> {
    const { query, key } = this.searchQuery(patientId, body, holder);
    const pageFor = (changeCounter: number): CachedPage | Promise<CachedPage> => this.cachedPage(key, changeCounter) ?? this.freshPage(query, key, holder, changeCounter);
    // The usual case, a page asked for again, is answered in this turn: no promise, no await.
    const page = options.documentChanges === undefined ? this.store.documents.changeCounter(patientId).then(pageFor) : pageFor(options.documentChanges);
    return page instanceof Promise ? page.then((ready) => this.encode(ready, options)) : this.encode(page, options);
  }

  private encode(page: CachedPage, options: SearchOptions): EncodedPage | Promise<EncodedPage> {
    page.sends += 1;
    const { count, total } = page;
    if (!options.acceptsGzip || page.json.length < GZIP_FROM_BYTES || page.sends === 1) return { body: page.json, gzip: false, count, total };
    if (page.gzipped) return { body: page.gzipped, gzip: true, count, total };
    page.gzip ??= gzipAsync(page.json, { level: zlibConstants.Z_BEST_SPEED }).then((bytes) => (page.gzipped = bytes));
    return page.gzip.then(
      (body) => ({ body, gzip: true, count, total }),
      () => {
        // zlib failed (out of memory, say): this answer goes out as it is, and a later one tries again.
        page.gzip = undefined;
        return { body: page.json, gzip: false, count, total };
      },
    );
  }

  /** The query a search body asks, and its page's key in the cache (per holder: the page carries its links). */
  private searchQuery(patientId: string, body: SearchBody, holder: LinkHolder): { query: DocumentQuery; key: string } {
    const offset = body.offset ?? SEARCH_DEFAULTS.offset;
    const limit = body.limit ?? SEARCH_DEFAULTS.limit;
    let pathKey: string | undefined;
    if (body.path !== undefined) {
      const folder = checkPathFilter(body.path);
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
      ...scanRange(body.scannedFrom, body.scannedTo),
      sortBy: body.sortBy ?? SEARCH_DEFAULTS.sortBy,
      sortDirection: body.sortDirection ?? SEARCH_DEFAULTS.sortDirection,
      offset,
      limit,
    };
    const key = JSON.stringify([holder.clientId, holder.organizationId, query.patientId, query.ids, query.pathKey, query.hasContent, query.nameContains, query.fileType, query.scannedFrom, query.scannedTo, query.sortBy, query.sortDirection, offset, limit]);
    return { query, key };
  }

  /** The cached page under `key` if it is still current (same change counter, same link expiry). */
  private cachedPage(key: string, changeCounter: number): CachedPage | undefined {
    const cached = this.pages.get(key);
    if (!cached) return undefined;
    this.forget(key, cached);
    if (cached.changeCounter !== changeCounter || cached.linkExpiry !== this.links.currentExpiry()) return undefined;
    this.remember(key, cached);
    return cached;
  }

  /** The page read from the store and serialized, kept in the cache unless it is unusually large. */
  private async freshPage(query: DocumentQuery, key: string, holder: LinkHolder, changeCounter: number): Promise<CachedPage> {
    const linkExpiry = this.links.currentExpiry();
    const page = await this.store.documents.search(query);
    const response: SearchResponse = { documents: page.rows.map((row) => this.toDto(row, holder)), offset: query.offset, limit: query.limit, total: page.total };
    const fresh: CachedPage = { changeCounter, linkExpiry, json: Buffer.from(JSON.stringify(response), 'utf8'), count: page.rows.length, total: page.total, sends: 0 };
    if (fresh.json.length <= PAGE_CACHE_BYTES / 16) this.remember(key, fresh);
    return fresh;
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
