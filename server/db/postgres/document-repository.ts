/** Documents on PostgreSQL: placeholders and the search of SPEC §4.3 with DESIGN §3's rules, as in SQLite. */
import { foldKey } from '../../../shared/names.js';
import { filtersFolder, SCAN_DATE, searchesByIds, searchesWholePatient, SORT_COLUMNS } from '../document-search.js';
import { DuplicateError, type DocumentListing, type DocumentQuery, type DocumentRecord, type DocumentRepository, type OutboxEvent, type Page, type PatientGrant } from '../types.js';
import { named, type NamedStatement, type PostgresDatabase } from './database.js';
import { grantColumns } from './directory.js';
import { eventArrays, insertEvents, type PostgresOutbox } from './outbox.js';

/** The columns of a DocumentRecord, named as its fields. */
export const DOCUMENT_COLUMNS = `id, patient_id AS "patientId", organization_id AS "organizationId", file_name AS "fileName", file_type AS "fileType",
  path, created_at AS "createdAt", last_modified_at AS "lastModifiedAt", has_content AS "hasContent", file_size AS "fileSize", sha256, version,
  content_key AS "contentKey", content_type AS "contentType", thumbnail_key AS "thumbnailKey", created_by AS "createdBy", scanned_at AS "scannedAt"`;

/** The columns of a DocumentListing, named as its fields. */
const LISTING_COLUMNS = `id, file_name AS "fileName", file_type AS "fileType", path, created_at AS "createdAt", last_modified_at AS "lastModifiedAt",
  has_content AS "hasContent", file_size AS "fileSize", sha256, version, thumbnail_key AS "thumbnailKey", scanned_at AS "scannedAt"`;

/** A row of LISTING_COLUMNS as a listing (only its own fields: the search selects more). */
function listingFromRow(row: DocumentListing): DocumentListing {
  return {
    id: row.id,
    fileName: row.fileName,
    fileType: row.fileType,
    path: row.path,
    createdAt: row.createdAt,
    lastModifiedAt: row.lastModifiedAt,
    hasContent: row.hasContent,
    fileSize: row.fileSize,
    sha256: row.sha256,
    version: row.version,
    thumbnailKey: row.thumbnailKey,
    scannedAt: row.scannedAt,
  };
}

/** A row of DOCUMENT_COLUMNS as a record (only its own fields: a query may select more). */
export function documentFromRow(row: DocumentRecord): DocumentRecord {
  return {
    ...listingFromRow(row),
    patientId: row.patientId,
    organizationId: row.organizationId,
    contentKey: row.contentKey,
    contentType: row.contentType,
    createdBy: row.createdBy,
    scannedAt: row.scannedAt ?? null,
  };
}

/** The WHERE clause and its parameters ($1 is the patient); a non-empty id list replaces every other filter (SPEC §4.3). */
function buildFilter(query: DocumentQuery): { where: string; params: unknown[] } {
  const params: unknown[] = [query.patientId];
  const bind = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const clauses = ['patient_id = $1', 'deleted_at IS NULL'];
  if (searchesByIds(query)) {
    clauses.push(`id = ANY(${bind(query.ids.map((id) => id.toLowerCase()))}::text[])`);
    return { where: clauses.join(' AND '), params };
  }
  if (filtersFolder(query)) {
    // The folder and everything below it: one range the index serves (['/a', '/a0'), '0' follows
    // '/' in byte order), then a test that drops siblings inside it such as '/a-b' or '/a.b'.
    const folder = bind(query.pathKey);
    clauses.push(`path_key >= ${folder} AND path_key < ${bind(`${query.pathKey}0`)} AND (path_key = ${folder} OR starts_with(path_key, ${folder} || '/'))`);
  }
  if (query.hasContent !== undefined) clauses.push(`has_content = ${bind(query.hasContent)}`);
  if (query.nameContains !== undefined && query.nameContains !== '') clauses.push(`strpos(name_key, ${bind(foldKey(query.nameContains))}) > 0`);
  if (query.fileType !== undefined) clauses.push(`file_type = ${bind(query.fileType.toUpperCase())}`);
  if (query.scannedFrom !== undefined) clauses.push(`${SCAN_DATE} >= ${bind(query.scannedFrom)}`);
  if (query.scannedTo !== undefined) clauses.push(`${SCAN_DATE} < ${bind(query.scannedTo)}`);
  return { where: clauses.join(' AND '), params };
}

/** A placeholder's columns, in the order of the create statements' first 19 parameters. */
const INSERT_DOCUMENT = `INSERT INTO documents (id, patient_id, organization_id, file_name, name_key, file_type, path, path_key, created_at,
       last_modified_at, has_content, file_size, sha256, version, content_key, content_type, thumbnail_key, created_by, scanned_at)`;

/**
 * A placeholder and its events in one statement, so one transaction with no round trip in it: the
 * per-patient counters the trigger moves (locked until commit, so one patient's creates take turns
 * there) are held for this statement's end and its commit alone. A duplicate name breaks
 * documents_unique_name, which fails the whole statement: nothing inserted, no event written.
 * A plain insert, not ON CONFLICT DO NOTHING: that one probes every unique index before the insert
 * (which probes them again) and writes a second WAL record to confirm the row, on every create,
 * to spare the rare duplicate an error.
 */
const CREATE = named(
  'document-create',
  `WITH document AS (
     ${INSERT_DOCUMENT}
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
     RETURNING id
   ), appended AS (
     ${insertEvents(20, 'document')}
   )
   SELECT id, CASE WHEN $27::boolean THEN pg_notify($28, $29) END AS notified FROM document`,
);

/**
 * CREATE for an organization that may write the patient's files, found in the same statement (and
 * snapshot): the placeholder is inserted, and its events appended, only when the patient exists and
 * the organization ($3) has access and the patient's consent; the answer is those three either
 * way. One round trip for the check and the create, not two.
 */
const CREATE_IF_ALLOWED = named(
  'document-create-if-allowed',
  `WITH allowed AS (
     SELECT ${grantColumns('$2', '$3')}
   ), document AS (
     ${INSERT_DOCUMENT}
     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19
     FROM allowed WHERE allowed.exists AND allowed.access AND allowed.consent
     RETURNING id
   ), appended AS (
     ${insertEvents(20, 'document')}
   )
   SELECT allowed.exists, allowed.access, allowed.consent, document.id IS NOT NULL AS created,
     CASE WHEN document.id IS NOT NULL AND $27::boolean THEN pg_notify($28, $29) END AS notified
   FROM allowed LEFT JOIN document ON true`,
);

/** PostgreSQL's answer to a create whose (patient, folder, name) a live document already holds. */
function isDuplicateName(error: unknown): boolean {
  const failure = error as { code?: unknown; constraint?: unknown } | null;
  return failure?.code === '23505' && failure.constraint === 'documents_unique_name';
}

export class PostgresDocuments implements DocumentRepository {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly outbox: PostgresOutbox,
  ) {}

  async create(document: DocumentRecord, events: OutboxEvent[]): Promise<void> {
    await this.insert(CREATE, document, events);
    this.outbox.committed(events);
  }

  async createIfAllowed(document: DocumentRecord, events: OutboxEvent[]): Promise<PatientGrant> {
    const [found] = await this.insert<PatientGrant & { created: boolean }>(CREATE_IF_ALLOWED, document, events);
    if (found?.created) this.outbox.committed(events);
    return { exists: found?.exists === true, access: found?.access === true, consent: found?.consent === true };
  }

  /** Runs a create statement (its parameters: the document's columns, then its events, then the notification). */
  private async insert<T>(statement: NamedStatement, document: DocumentRecord, events: OutboxEvent[]): Promise<T[]> {
    const row = [
      document.id,
      document.patientId,
      document.organizationId,
      document.fileName,
      foldKey(document.fileName),
      document.fileType,
      document.path,
      foldKey(document.path),
      document.createdAt,
      document.lastModifiedAt,
      document.hasContent,
      document.fileSize,
      document.sha256,
      document.version,
      document.contentKey,
      document.contentType,
      document.thumbnailKey,
      document.createdBy,
      document.scannedAt ?? null,
    ];
    try {
      return await this.db.statement<T>(statement, [...row, ...eventArrays(events), ...this.outbox.notifyOnCommit()]);
    } catch (error) {
      if (isDuplicateName(error)) throw new DuplicateError(`a document named ${document.fileName} already exists in ${document.path}`);
      throw error;
    }
  }

  async get(patientId: string, id: string): Promise<DocumentRecord | undefined> {
    const row = await this.db.row<DocumentRecord>(`SELECT ${DOCUMENT_COLUMNS} FROM documents WHERE id = $1 AND patient_id = $2 AND deleted_at IS NULL`, [id.toLowerCase(), patientId]);
    return row ? documentFromRow(row) : undefined;
  }

  async changeCounter(patientId: string): Promise<number> {
    return (await this.db.row<{ version: number }>('SELECT version FROM patient_document_versions WHERE patient_id = $1', [patientId]))?.version ?? 0;
  }

  /**
   * The total and the page in one statement, so in one snapshot: the total matches the rows even
   * when another instance commits in between. A whole patient's total is read from the counts the
   * trigger keeps, not counted.
   *
   * The total rides on each row as a scalar subquery: PostgreSQL spends about 15% less CPU on that
   * than on a join of the count with the page (docs/benchmarks.md, "On PostgreSQL"). A page with no
   * rows carries no total: at offset 0 that total is 0; past the first page the count and the page
   * are read again, joined, still in one snapshot.
   */
  async search(query: DocumentQuery): Promise<Page<DocumentListing>> {
    const { where, params } = buildFilter(query);
    const total = searchesWholePatient(query)
      ? `SELECT COALESCE(SUM(documents), 0)::bigint AS total FROM patient_document_counts WHERE patient_id = $1${query.hasContent === undefined ? '' : ` AND has_content = ${query.hasContent ? 'true' : 'false'}`}`
      : `SELECT count(*) AS total FROM documents WHERE ${where}`;
    const column = SORT_COLUMNS[query.sortBy];
    const direction = query.sortDirection === 'ASC' ? 'ASC' : 'DESC';
    // As SQLite orders them: nulls (a placeholder's size) first ascending, last descending. Ties
    // break by id in the same direction, so DESC is exactly the reverse of ASC and paging is stable.
    const order = `${direction} ${direction === 'ASC' ? 'NULLS FIRST' : 'NULLS LAST'}`;
    params.push(query.limit, query.offset);
    const [limit, offset] = [`$${params.length - 1}`, `$${params.length}`];
    const rows = await this.db.rows<DocumentListing & { total: number }>(
      `SELECT (${total}) AS total, ${LISTING_COLUMNS} FROM documents WHERE ${where}
       ORDER BY ${column} ${order}, id ${direction} LIMIT ${limit} OFFSET ${offset}`,
      params,
    );
    if (rows.length > 0) return { rows: rows.map(listingFromRow), total: rows[0]!.total };
    if (query.offset === 0 && query.limit > 0) return { rows: [], total: 0 };
    const beyond = await this.db.rows<DocumentListing & { total: number; sortValue: unknown }>(
      `SELECT t.total, page.* FROM (${total}) t
       LEFT JOIN LATERAL (
         SELECT ${LISTING_COLUMNS}, ${column} AS "sortValue" FROM documents WHERE ${where}
         ORDER BY ${column} ${order}, id ${direction} LIMIT ${limit} OFFSET ${offset}
       ) page ON true
       ORDER BY page."sortValue" ${order}, page.id ${direction}`,
      params,
    );
    return { rows: beyond.filter((row) => row.id !== null).map(listingFromRow), total: beyond[0]?.total ?? 0 };
  }
}
