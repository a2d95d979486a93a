/** Documents: placeholders, content state and the search of SPEC §4.3 with DESIGN §3's rules. */
import { foldKey } from '../../../shared/names.js';
import { filtersFolder, SCAN_DATE, searchesByIds, searchesWholePatient, SORT_COLUMNS } from '../document-search.js';
import { DuplicateError, type DocumentListing, type DocumentQuery, type DocumentRecord, type DocumentRepository, type OutboxEvent, type Page, type PatientGrant } from '../types.js';
import type { SqliteDatabase } from './database.js';
import type { SqlitePatients } from './directory.js';
import type { SqliteOutbox } from './outbox.js';
import type { Statement } from 'better-sqlite3';

const LARGE_RESULT = 2000;

interface PendingCreate {
  document: DocumentRecord;
  events: OutboxEvent[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** The columns of a DocumentListing, in the order listingFromColumns reads them. */
const LISTING_COLUMNS = 'id, file_name, file_type, path, created_at, last_modified_at, has_content, file_size, sha256, version, thumbnail_key, scanned_at';

/** A row of LISTING_COLUMNS read as an array. */
function listingFromColumns(row: unknown[]): DocumentListing {
  return {
    id: row[0] as string,
    fileName: row[1] as string,
    fileType: row[2] as string,
    path: row[3] as string,
    createdAt: row[4] as string,
    lastModifiedAt: row[5] as string,
    hasContent: row[6] === 1,
    fileSize: row[7] as number | null,
    sha256: row[8] as string | null,
    version: row[9] as number,
    thumbnailKey: row[10] as string | null,
    scannedAt: row[11] as string | null,
  };
}

/** The columns of a DocumentRecord, in the order documentFromColumns reads them. */
export const DOCUMENT_COLUMNS = `${LISTING_COLUMNS}, patient_id, organization_id, content_key, content_type, created_by`;

/**
 * A row of DOCUMENT_COLUMNS read as an array (statement.raw()): better-sqlite3 builds a row object
 * property by property, which costs more than the query itself for a page of fifty.
 */
export function documentFromColumns(row: unknown[]): DocumentRecord {
  return {
    ...listingFromColumns(row),
    patientId: row[12] as string,
    organizationId: row[13] as string,
    contentKey: row[14] as string | null,
    contentType: row[15] as string | null,
    createdBy: row[16] as string,
  };
}

interface Filter {
  where: string;
  params: Record<string, unknown>;
}

/**
 * Builds the WHERE clause; a non-empty id list replaces every other filter (SPEC §4.3).
 *
 * A value compared with an indexed column is written `+@name`, never a bare parameter: with the
 * statistics the database keeps (sqlite_stat4), SQLite plans with the value bound to a bare
 * parameter there, and binding it again, as every run does, makes the statement prepare itself
 * anew — for a search page, more than a plain query costs. The indexes each search uses are named
 * in the queries (INDEXED BY, chosen by the count), so no plan needs the bound value.
 */
export function buildFilter(query: DocumentQuery): Filter {
  const clauses = ['patient_id = +@patientId', 'deleted_at IS NULL'];
  const params: Record<string, unknown> = { patientId: query.patientId };
  if (searchesByIds(query)) {
    const names = query.ids.map((id, index) => {
      params[`id${index}`] = id.toLowerCase();
      return `+@id${index}`;
    });
    clauses.push(`id IN (${names.join(', ')})`);
    return { where: clauses.join(' AND '), params };
  }
  if (filtersFolder(query)) {
    // '/a' and everything below '/a/' as ONE range the index serves (['/a', '/a0') — '0' follows '/'),
    // then a cheap residual test that drops siblings inside that range such as '/a-b' or '/a.b'.
    clauses.push("path_key >= +@pathKey AND path_key < +@pathHigh AND (path_key = +@pathKey OR substr(path_key, @pathLength + 1, 1) = '/')");
    params.pathKey = query.pathKey;
    params.pathHigh = `${query.pathKey}0`;
    params.pathLength = query.pathKey.length;
  }
  if (query.hasContent !== undefined) {
    clauses.push('has_content = +@hasContent');
    params.hasContent = query.hasContent ? 1 : 0;
  }
  if (query.nameContains !== undefined && query.nameContains !== '') {
    clauses.push('instr(name_key, @nameContains) > 0');
    params.nameContains = foldKey(query.nameContains);
  }
  if (query.fileType !== undefined) {
    clauses.push('file_type = +@fileType');
    params.fileType = query.fileType.toUpperCase();
  }
  if (query.scannedFrom !== undefined) {
    clauses.push(`${SCAN_DATE} >= +@scannedFrom`);
    params.scannedFrom = query.scannedFrom;
  }
  if (query.scannedTo !== undefined) {
    clauses.push(`${SCAN_DATE} < +@scannedTo`);
    params.scannedTo = query.scannedTo;
  }
  return { where: clauses.join(' AND '), params };
}

export class SqliteDocuments implements DocumentRepository {
  private readonly insert;
  private readonly selectOne;
  private readonly selectChangeCounter;

  constructor(
    protected readonly db: SqliteDatabase,
    protected readonly outbox: SqliteOutbox,
    private readonly patients: Pick<SqlitePatients, 'knownAccess'>,
  ) {
    this.insert = db.prepare(
      `INSERT INTO documents (id, patient_id, organization_id, file_name, name_key, file_type, path, path_key, created_at,
         last_modified_at, has_content, file_size, sha256, version, content_key, content_type, thumbnail_key, created_by, scanned_at)
       VALUES (@id, @patientId, @organizationId, @fileName, @nameKey, @fileType, @path, @pathKey, @createdAt,
         @lastModifiedAt, @hasContent, @fileSize, @sha256, @version, @contentKey, @contentType, @thumbnailKey, @createdBy, @scannedAt)
       ON CONFLICT DO NOTHING`,
    );
    this.selectOne = db.prepare(`SELECT ${DOCUMENT_COLUMNS} FROM documents WHERE id = ? AND patient_id = ? AND deleted_at IS NULL`).raw();
    this.selectChangeCounter = db.prepare('SELECT version FROM patient_document_versions WHERE patient_id = ?').pluck();
    this.searchInSnapshot = db.transaction((query: DocumentQuery) => this.searchNow(query));
    const insertInTransaction = db.transaction((batch: PendingCreate[]) => this.insertEach(batch));
    this.insertBatch = (batch) => insertInTransaction.immediate(batch);
  }

  /**
   * Group commit: creates that arrive in the same turn of the event loop share one transaction.
   * A WAL commit writes every touched page, so under load this is most of the cost of a create;
   * alone, a create still commits at once. The caller hears back only after the commit.
   *
   * A duplicate name is not an error inside the batch: the insert does nothing (ON CONFLICT DO
   * NOTHING) and that create alone is refused. Any other failure rolls the batch back, and its
   * creates are then tried one transaction each, so the failure stays with the create that caused
   * it. (A savepoint per create would do the same, but costs more than the insert itself.)
   */
  create(document: DocumentRecord, events: OutboxEvent[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pendingCreates.push({ document, events, resolve, reject });
      if (this.pendingCreates.length === 1) setImmediate(() => this.flushCreates());
    });
  }

  /**
   * The check is a read of this process's own database just before the insert (one writer: the
   * data folder's lock), as quick as a look in memory; the insert joins the next batch as create() does.
   */
  async createIfAllowed(document: DocumentRecord, events: OutboxEvent[]): Promise<PatientGrant> {
    const { exists, access, consent } = this.patients.knownAccess(document.patientId, document.organizationId);
    if (exists && access && consent) await this.create(document, events);
    return { exists, access, consent };
  }

  private pendingCreates: PendingCreate[] = [];

  /** Inserts the batch in one transaction; per create, whether it was stored (false: a duplicate). */
  private readonly insertBatch: (batch: PendingCreate[]) => boolean[];

  private insertEach(batch: PendingCreate[]): boolean[] {
    return batch.map(({ document, events }) => {
      const { changes } = this.insert.run({
        ...document,
        nameKey: foldKey(document.fileName),
        pathKey: foldKey(document.path),
        hasContent: document.hasContent ? 1 : 0,
        scannedAt: document.scannedAt ?? null,
      });
      if (changes === 0) return false;
      this.outbox.appendInTransaction(events);
      return true;
    });
  }

  private flushCreates(): void {
    const batch = this.pendingCreates;
    this.pendingCreates = [];
    let stored: boolean[];
    try {
      stored = this.insertBatch(batch);
    } catch (error) {
      if (batch.length === 1) batch[0]!.reject(error);
      else for (const item of batch) this.settle(item, () => this.insertBatch([item])[0]!);
      return;
    }
    batch.forEach((item, index) => this.settle(item, () => stored[index]!));
  }

  private settle(item: PendingCreate, outcome: () => boolean): void {
    try {
      if (outcome()) item.resolve();
      else item.reject(new DuplicateError(`a document named ${item.document.fileName} already exists in ${item.document.path}`));
    } catch (error) {
      item.reject(error);
    }
  }

  async get(patientId: string, id: string): Promise<DocumentRecord | undefined> {
    const row = this.selectOne.get(id.toLowerCase(), patientId) as unknown[] | undefined;
    return row ? documentFromColumns(row) : undefined;
  }

  async changeCounter(patientId: string): Promise<number> {
    return (this.selectChangeCounter.get(patientId) as number | undefined) ?? 0;
  }

  async search(query: DocumentQuery): Promise<Page<DocumentListing>> {
    return this.searchInSnapshot(query);
  }

  /**
   * The count and the page in one read transaction: the total matches the rows even when another
   * process (the admin CLI, another instance) commits in between, and the WAL read lock is taken once.
   */
  private readonly searchInSnapshot: (query: DocumentQuery) => Page<DocumentListing>;

  private searchNow(query: DocumentQuery): Page<DocumentListing> {
    const { where, params } = buildFilter(query);
    const byIds = searchesByIds(query);
    // The count comes first: it is needed anyway, and its size tells which way pages faster.
    const total = this.count(query, where, params, byIds);
    if (total === 0 || query.offset >= total) return { rows: [], total };
    const column = SORT_COLUMNS[query.sortBy];
    const direction = query.sortDirection === 'ASC' ? 'ASC' : 'DESC';
    // Ties break by id in the same direction, so DESC is exactly the reverse of ASC and paging is stable.
    const order = `${column} ${direction}, id ${direction}`;
    const page = { ...params, limit: query.limit, offset: query.offset };
    const folder = !byIds && filtersFolder(query);
    let sql: string;
    if (folder && total <= LARGE_RESULT) {
      // The table is keyed by (patient, folder, id): a folder's rows sit together, so they are read
      // in one short range and sorted, with no lookup per row.
      sql = `SELECT ${LISTING_COLUMNS} FROM documents NOT INDEXED WHERE ${where} ORDER BY ${order} LIMIT +@limit OFFSET @offset`;
    } else {
      // Page the ids inside a covering index, then read just those rows.
      const index = byIds ? '' : this.pageIndex(query, total);
      sql = `SELECT ${LISTING_COLUMNS} FROM documents WHERE id IN (SELECT id FROM documents ${index} WHERE ${where} ORDER BY ${order} LIMIT +@limit OFFSET @offset) ORDER BY ${order}`;
    }
    const rows = this.statement(sql).raw().all(page) as unknown[][];
    return { rows: rows.map(listingFromColumns), total };
  }

  private count(query: DocumentQuery, where: string, params: Record<string, unknown>, byIds: boolean): number {
    if (searchesWholePatient(query)) {
      const sql = 'SELECT COALESCE(SUM(documents), 0) FROM patient_document_counts WHERE patient_id = +@patientId AND (@hasContent IS NULL OR has_content = +@hasContent)';
      return this.statement(sql).pluck().get({ patientId: query.patientId, hasContent: query.hasContent === undefined ? null : query.hasContent ? 1 : 0 }) as number;
    }
    return this.statement(`SELECT COUNT(*) FROM documents ${byIds ? '' : this.countIndex(query)} WHERE ${where}`).pluck().get(params) as number;
  }

  private countIndex(query: DocumentQuery): string {
    return filtersFolder(query) ? 'INDEXED BY documents_by_path' : '';
  }

  /**
   * A large folder is paged through the path index; a large result sorted by time is walked in
   * time order instead, stopping after one page. SQLite cannot know the folder's size from a bound
   * parameter, so we tell it, using the count we just made.
   */
  private pageIndex(query: DocumentQuery, total: number): string {
    const folder = filtersFolder(query);
    if (query.sortBy === 'lastModifiedAt' && (!folder || total > LARGE_RESULT)) return 'INDEXED BY documents_by_modified';
    return folder ? 'INDEXED BY documents_by_path' : '';
  }

  private readonly statements = new Map<string, Statement>();

  private statement(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}
