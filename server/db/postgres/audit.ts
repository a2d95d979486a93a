/** The audit log on PostgreSQL: written in batches by server/audit/log.ts, read newest first, mostly "by patient". */
import type { AuditEntryRecord, AuditQuery, AuditRepository, Page, StoredAuditEntry } from '../types.js';
import { named, type PostgresDatabase, type Queryable } from './database.js';

/** Rows deleted per statement by prune: the server's own writes never wait behind one huge delete. */
const PRUNE_BATCH = 5000;

const FILTERS: Array<[keyof AuditQuery, string]> = [
  ['patientId', 'patient_id'],
  ['documentId', 'document_id'],
  ['clientId', 'client_id'],
  ['organizationId', 'organization_id'],
  ['action', 'action'],
  ['outcome', 'outcome'],
  ['since', 'at >='],
  ['until', 'at <'],
];

interface AuditRow extends Omit<StoredAuditEntry, 'detail'> {
  detail: string | null;
}

const COLUMNS = `id, at, action, outcome, status, organization_id AS "organizationId", client_id AS "clientId", patient_id AS "patientId",
  document_id AS "documentId", version, request_id AS "requestId", remote_address AS "remoteAddress", detail`;

/** Every request writes some: planned once per connection. */
const APPEND = named(
  'audit-append',
  `INSERT INTO audit_log (at, action, outcome, status, organization_id, client_id, patient_id, document_id, version, request_id, remote_address, detail)
   SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::text[], $11::text[], $12::text[])`,
);

export class PostgresAudit implements AuditRepository {
  constructor(private readonly db: PostgresDatabase) {}

  /** Call only inside the transaction of the change the entries record (the admin CLI's marks). */
  async appendInTransaction(tx: Queryable, entries: readonly AuditEntryRecord[]): Promise<void> {
    if (entries.length === 0) return;
    const column = <T>(pick: (entry: AuditEntryRecord) => T): T[] => entries.map(pick);
    await tx.run(
      APPEND,
      [
        column((entry) => entry.at),
        column((entry) => entry.action),
        column((entry) => entry.outcome),
        column((entry) => entry.status),
        column((entry) => entry.organizationId),
        column((entry) => entry.clientId),
        column((entry) => entry.patientId),
        column((entry) => entry.documentId),
        column((entry) => entry.version),
        column((entry) => entry.requestId),
        column((entry) => entry.remoteAddress),
        column((entry) => (entry.detail === null ? null : JSON.stringify(entry.detail))),
      ],
    );
  }

  async append(entries: readonly AuditEntryRecord[]): Promise<void> {
    // One statement: all or none.
    if (entries.length > 0) await this.appendInTransaction(this.db, entries);
  }

  async search(query: AuditQuery): Promise<Page<StoredAuditEntry>> {
    const params: unknown[] = [];
    const conditions = FILTERS.filter(([field]) => query[field] !== undefined).map(([field, condition]) => {
      params.push(query[field]);
      return condition.includes(' ') ? `${condition} $${params.length}` : `${condition} = $${params.length}`;
    });
    const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
    params.push(query.limit, query.offset);
    const rows = await this.db.rows<AuditRow & { total: number; rowId: number | null }>(
      `SELECT t.total, page.* FROM (SELECT count(*) AS total FROM audit_log ${where}) t
       LEFT JOIN LATERAL (SELECT ${COLUMNS} FROM audit_log ${where} ORDER BY at DESC, id DESC LIMIT $${params.length - 1} OFFSET $${params.length}) page ON true
       ORDER BY page.at DESC, page.id DESC`,
      params,
    );
    return {
      rows: rows.filter((row) => row.id !== null).map(({ total: _total, rowId: _rowId, ...row }) => ({ ...row, detail: row.detail === null ? null : (JSON.parse(row.detail) as Record<string, unknown>) })),
      total: rows[0]?.total ?? 0,
    };
  }

  async prune(before: string): Promise<number> {
    let removed = 0;
    for (;;) {
      const changes = await this.db.run('DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2)', [before, PRUNE_BATCH]);
      removed += changes;
      if (changes < PRUNE_BATCH) return removed;
    }
  }

  async count(): Promise<number> {
    return (await this.db.row<{ n: number }>('SELECT count(*) AS n FROM audit_log'))!.n;
  }
}
