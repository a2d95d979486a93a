/** Documents: placeholders, content state and the search of SPEC §4.3 with DESIGN §3's rules. */
import { foldKey } from '../../../shared/names.js';
import type { SortField } from '../../../shared/schemas.js';
import { DuplicateError, type DocumentQuery, type DocumentRecord, type DocumentRepository, type OutboxEvent, type Page } from '../types.js';
import type { SqliteDatabase } from './database.js';
import type { SqliteOutbox } from './outbox.js';

export interface DocumentRow {
  id: string;
  patient_id: string;
  organization_id: string;
  file_name: string;
  file_type: string;
  path: string;
  created_at: string;
  last_modified_at: string;
  has_content: number;
  file_size: number | null;
  sha256: string | null;
  version: number;
  content_key: string | null;
  content_type: string | null;
  thumbnail_key: string | null;
  created_by: string;
}

export function documentFromRow(row: DocumentRow): DocumentRecord {
  return {
    id: row.id,
    patientId: row.patient_id,
    organizationId: row.organization_id,
    fileName: row.file_name,
    fileType: row.file_type,
    path: row.path,
    createdAt: row.created_at,
    lastModifiedAt: row.last_modified_at,
    hasContent: row.has_content === 1,
    fileSize: row.file_size,
    sha256: row.sha256,
    version: row.version,
    contentKey: row.content_key,
    contentType: row.content_type,
    thumbnailKey: row.thumbnail_key,
    createdBy: row.created_by,
  };
}

const SORT_COLUMNS: Record<SortField, string> = {
  lastModifiedAt: 'last_modified_at',
  fileName: 'name_key',
  fileSize: 'file_size',
  fileType: 'file_type',
  path: 'path_key',
};

const COLUMNS = `id, patient_id, organization_id, file_name, file_type, path, created_at, last_modified_at, has_content,
  file_size, sha256, version, content_key, content_type, thumbnail_key, created_by`;

interface Filter {
  where: string;
  params: Record<string, unknown>;
}

/** Builds the WHERE clause; a non-empty id list replaces every other filter (SPEC §4.3). */
export function buildFilter(query: DocumentQuery): Filter {
  const clauses = ['patient_id = @patientId', 'deleted_at IS NULL'];
  const params: Record<string, unknown> = { patientId: query.patientId };
  if (query.ids && query.ids.length > 0) {
    const names = query.ids.map((id, index) => {
      params[`id${index}`] = id.toLowerCase();
      return `@id${index}`;
    });
    clauses.push(`id IN (${names.join(', ')})`);
    return { where: clauses.join(' AND '), params };
  }
  if (query.pathKey !== undefined && query.pathKey !== '/') {
    // '/a' and everything below '/a/': a range the index serves, never '/ab'.
    clauses.push('(path_key = @pathKey OR (path_key >= @pathLow AND path_key < @pathHigh))');
    params.pathKey = query.pathKey;
    params.pathLow = `${query.pathKey}/`;
    params.pathHigh = `${query.pathKey}0`;
  }
  if (query.hasContent !== undefined) {
    clauses.push('has_content = @hasContent');
    params.hasContent = query.hasContent ? 1 : 0;
  }
  if (query.nameContains !== undefined && query.nameContains !== '') {
    clauses.push('instr(name_key, @nameContains) > 0');
    params.nameContains = foldKey(query.nameContains);
  }
  if (query.fileType !== undefined) {
    clauses.push('file_type = @fileType');
    params.fileType = query.fileType.toUpperCase();
  }
  return { where: clauses.join(' AND '), params };
}

export class SqliteDocuments implements DocumentRepository {
  private readonly insert;
  private readonly selectOne;

  constructor(
    protected readonly db: SqliteDatabase,
    protected readonly outbox: SqliteOutbox,
  ) {
    this.insert = db.prepare(
      `INSERT INTO documents (id, patient_id, organization_id, file_name, name_key, file_type, path, path_key, created_at,
         last_modified_at, has_content, file_size, sha256, version, content_key, content_type, thumbnail_key, created_by)
       VALUES (@id, @patientId, @organizationId, @fileName, @nameKey, @fileType, @path, @pathKey, @createdAt,
         @lastModifiedAt, @hasContent, @fileSize, @sha256, @version, @contentKey, @contentType, @thumbnailKey, @createdBy)`,
    );
    this.selectOne = db.prepare(`SELECT ${COLUMNS} FROM documents WHERE id = ? AND patient_id = ? AND deleted_at IS NULL`);
  }

  async create(document: DocumentRecord, events: OutboxEvent[]): Promise<void> {
    try {
      this.db
        .transaction(() => {
          this.insert.run({
            ...document,
            nameKey: foldKey(document.fileName),
            pathKey: foldKey(document.path),
            hasContent: document.hasContent ? 1 : 0,
          });
          this.outbox.appendInTransaction(events);
        })
        .immediate();
    } catch (error) {
      if (isUniqueViolation(error)) throw new DuplicateError(`a document named ${document.fileName} already exists in ${document.path}`);
      throw error;
    }
  }

  async get(patientId: string, id: string): Promise<DocumentRecord | undefined> {
    const row = this.selectOne.get(id.toLowerCase(), patientId) as DocumentRow | undefined;
    return row ? documentFromRow(row) : undefined;
  }

  async search(query: DocumentQuery): Promise<Page<DocumentRecord>> {
    const { where, params } = buildFilter(query);
    const column = SORT_COLUMNS[query.sortBy];
    const direction = query.sortDirection === 'ASC' ? 'ASC' : 'DESC';
    // Ties break by id in the same direction, so DESC is exactly the reverse of ASC and paging is stable.
    const order = `${column} ${direction}, id ${direction}`;
    const rows = this.db
      .prepare(`SELECT ${COLUMNS} FROM documents WHERE ${where} ORDER BY ${order} LIMIT @limit OFFSET @offset`)
      .all({ ...params, limit: query.limit, offset: query.offset }) as DocumentRow[];
    const total = this.db.prepare(`SELECT COUNT(*) FROM documents WHERE ${where}`).pluck().get(params) as number;
    return { rows: rows.map(documentFromRow), total };
  }
}

export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE';
}
