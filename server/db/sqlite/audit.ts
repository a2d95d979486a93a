/**
 * The audit log's table: written in batches (one transaction per flush of server/audit/log.ts),
 * read by the admin API and CLI, newest first, mostly "by patient".
 */
import type { Statement } from 'better-sqlite3';
import type { AuditEntryRecord, AuditQuery, AuditRepository, Page, StoredAuditEntry } from '../types.js';
import type { SqliteDatabase } from './database.js';
import type { Migration } from './migrations.js';

export const AUDIT_MIGRATION: Migration = {
  name: '007-audit-log',
  sql: `
    CREATE TABLE audit_log (
      id INTEGER PRIMARY KEY,
      at TEXT NOT NULL,
      action TEXT NOT NULL,
      outcome TEXT NOT NULL,
      status INTEGER NOT NULL,
      organization_id TEXT,
      client_id TEXT,
      patient_id TEXT,
      document_id TEXT,
      version INTEGER,
      request_id TEXT NOT NULL,
      remote_address TEXT,
      detail TEXT
    );
    -- "Who touched Jane Roe's files", newest first: the question the log is for.
    CREATE INDEX audit_log_by_patient ON audit_log(patient_id, at, id);
    CREATE INDEX audit_log_by_document ON audit_log(document_id, at, id) WHERE document_id IS NOT NULL;
    CREATE INDEX audit_log_by_client ON audit_log(client_id, at, id);
    -- Unfiltered listing, since/until, and pruning by age.
    CREATE INDEX audit_log_by_time ON audit_log(at, id);
  `,
};

/** Rows deleted per transaction by prune: the server's own writes wait for at most one such batch. */
const PRUNE_BATCH = 5000;

type AuditRow = [number, string, string, string, number, string | null, string | null, string | null, string | null, number | null, string, string | null, string | null];

const FILTERS: Array<[keyof AuditQuery, string]> = [
  ['patientId', 'patient_id = ?'],
  ['documentId', 'document_id = ?'],
  ['clientId', 'client_id = ?'],
  ['organizationId', 'organization_id = ?'],
  ['action', 'action = ?'],
  ['outcome', 'outcome = ?'],
  ['since', 'at >= ?'],
  ['until', 'at < ?'],
];

export class SqliteAudit implements AuditRepository {
  private readonly insert;
  private readonly appendAll;
  private readonly pruneBatch;
  private readonly countAll;
  /** Prepared per combination of filters (at most 2^8, in practice a handful). */
  private readonly queries = new Map<string, { page: Statement<unknown[]>; total: Statement<unknown[]> }>();

  constructor(private readonly db: SqliteDatabase) {
    this.insert = db.prepare(
      `INSERT INTO audit_log (at, action, outcome, status, organization_id, client_id, patient_id, document_id, version, request_id, remote_address, detail)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.appendAll = db.transaction((entries: readonly AuditEntryRecord[]) => this.appendInTransaction(entries));
    this.pruneBatch = db.prepare('DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ? ORDER BY at LIMIT +?)');
    this.countAll = db.prepare('SELECT count(*) FROM audit_log').pluck();
  }

  /** Call only inside the transaction of the change the entries record (the admin CLI's marks). */
  appendInTransaction(entries: readonly AuditEntryRecord[]): void {
    for (const entry of entries) {
      this.insert.run(
        entry.at,
        entry.action,
        entry.outcome,
        entry.status,
        entry.organizationId,
        entry.clientId,
        entry.patientId,
        entry.documentId,
        entry.version,
        entry.requestId,
        entry.remoteAddress,
        entry.detail === null ? null : JSON.stringify(entry.detail),
      );
    }
  }

  async append(entries: readonly AuditEntryRecord[]): Promise<void> {
    this.appendNow(entries);
  }

  /** append() in the caller's turn (the audit writer thread's). */
  appendNow(entries: readonly AuditEntryRecord[]): void {
    if (entries.length > 0) this.appendAll.immediate(entries);
  }

  async search(query: AuditQuery): Promise<Page<StoredAuditEntry>> {
    const used = FILTERS.filter(([field]) => query[field] !== undefined);
    const key = used.map(([field]) => field).join(',');
    let statements = this.queries.get(key);
    if (!statements) {
      const where = used.length > 0 ? `WHERE ${used.map(([, condition]) => condition).join(' AND ')}` : '';
      statements = {
        page: this.db
          .prepare(
            `SELECT id, at, action, outcome, status, organization_id, client_id, patient_id, document_id, version, request_id, remote_address, detail
             FROM audit_log ${where} ORDER BY at DESC, id DESC LIMIT +? OFFSET ?`,
          )
          .raw(),
        total: this.db.prepare(`SELECT count(*) FROM audit_log ${where}`).pluck(),
      };
      this.queries.set(key, statements);
    }
    const values = used.map(([field]) => query[field]);
    const rows = statements.page.all(...values, query.limit, query.offset) as AuditRow[];
    const total = statements.total.get(...values) as number;
    return { rows: rows.map(entryFromRow), total };
  }

  async prune(before: string): Promise<number> {
    let removed = 0;
    for (;;) {
      const { changes } = this.pruneBatch.run(before, PRUNE_BATCH);
      removed += changes;
      if (changes < PRUNE_BATCH) return removed;
      // Between batches the write lock is free: a running server's writes go on.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  async count(): Promise<number> {
    return this.countAll.get() as number;
  }
}

function entryFromRow([id, at, action, outcome, status, organizationId, clientId, patientId, documentId, version, requestId, remoteAddress, detail]: AuditRow): StoredAuditEntry {
  return {
    id,
    at,
    action: action as StoredAuditEntry['action'],
    outcome: outcome as StoredAuditEntry['outcome'],
    status,
    organizationId,
    clientId,
    patientId,
    documentId,
    version,
    requestId,
    remoteAddress,
    detail: detail === null ? null : (JSON.parse(detail) as Record<string, unknown>),
  };
}
