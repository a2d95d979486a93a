/**
 * The records of an embedded installation (SQLite) copied into PostgreSQL, table by table, as
 * upserts keyed by each table's primary key: a row already there with the same values is left
 * alone (nothing written), one that differs is updated, a missing one inserted. So an interrupted
 * run resumes by running again, and a run after a complete one writes nothing.
 *
 * Rows are copied as stored, ids and sequence numbers included: tokens (signing keys), signed links
 * (the link key in meta), subscriptions (their hmac sealed with the webhook key in meta, wrapped
 * with the same master key), the outbox positions the webhook cursor and subscriptions point at,
 * and the audit log's ids all mean the same on the new database.
 */
import type Database from 'better-sqlite3';
import type { PostgresDatabase } from '../../db/postgres/database.js';
import type { MigrationProgress } from './progress.js';

export interface CopiedTable {
  /** The table's name, alike in both schemas. */
  name: string;
  /** Its primary key: the upsert's conflict target. */
  key: readonly string[];
  /** Columns PostgreSQL numbers itself (GENERATED ALWAYS AS IDENTITY): copied as they are, then the sequence moved past them. */
  identity?: string;
}

/** In the order their references need (parents first). */
export const COPIED_TABLES: readonly CopiedTable[] = [
  { name: 'meta', key: ['key'] },
  { name: 'organizations', key: ['id'] },
  { name: 'patients', key: ['id'] },
  { name: 'patient_identifiers', key: ['patient_id', 'system', 'value'] },
  { name: 'patient_identifier_owners', key: ['organization_id', 'system', 'value'] },
  { name: 'patient_organizations', key: ['patient_id', 'organization_id'] },
  { name: 'patient_consents', key: ['patient_id', 'organization_id'] },
  { name: 'clients', key: ['client_id'] },
  { name: 'client_organizations', key: ['client_id', 'organization_id'] },
  { name: 'signing_keys', key: ['kid'] },
  { name: 'documents', key: ['id'] },
  { name: 'document_versions', key: ['document_id', 'version'] },
  { name: 'orders', key: ['id'] },
  { name: 'outbox_events', key: ['sequence'], identity: 'sequence' },
  { name: 'webhook_subscriptions', key: ['id'] },
  { name: 'webhook_messages', key: ['seq'], identity: 'seq' },
  { name: 'webhook_attempts', key: ['sequence'], identity: 'sequence' },
  { name: 'webhook_cursor', key: ['id'] },
  { name: 'audit_log', key: ['id'], identity: 'id' },
];

/**
 * Tables PostgreSQL keeps by itself and are not copied: per-patient totals and change counters
 * (its triggers count the documents as they arrive), and each database's own bookkeeping.
 */
const DERIVED_TABLES = new Set(['patient_document_counts', 'patient_document_versions', 'schema_migrations', 'sqlite_sequence']);

/**
 * Rows per INSERT statement. The rows go as one array per column (unnest), so a statement has as
 * many parameters as the table has columns whatever the batch's size: PostgreSQL parses and plans a
 * few dozen parameters instead of a VALUES list of ten thousand.
 */
const BATCH_ROWS = 2000;

export class SchemaMismatchError extends Error {
  override name = 'SchemaMismatchError';
}

export interface RowCopyReport {
  /** Rows read from the embedded database, by table. */
  rows: Record<string, number>;
  /** Rows inserted or changed in PostgreSQL (0 when it already held them all). */
  written: number;
}

interface TargetColumn {
  name: string;
  boolean: boolean;
  /** Its type's name as PostgreSQL spells it (text, int8, bool…): the cast of its array parameter. */
  type: string;
}

/** The embedded database's tables, checked against what this build knows how to copy. */
function checkSourceTables(source: Database.Database): void {
  const names = (source.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]).filter((name) => !name.startsWith('sqlite_'));
  const known = new Set(COPIED_TABLES.map((table) => table.name));
  const unknown = names.filter((name) => !known.has(name) && !DERIVED_TABLES.has(name));
  if (unknown.length > 0) throw new SchemaMismatchError(`the embedded database holds tables this build does not know how to copy (${unknown.join(', ')}); use the server version that wrote them`);
}

async function targetColumns(target: PostgresDatabase, table: string): Promise<Map<string, TargetColumn>> {
  const rows = await target.rows<{ column_name: string; data_type: string; udt_name: string }>(
    'SELECT column_name, data_type, udt_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1',
    [table],
  );
  return new Map(rows.map((row) => [row.column_name, { name: row.column_name, boolean: row.data_type === 'boolean', type: row.udt_name }]));
}

function sourceColumns(source: Database.Database, table: string): string[] {
  return (source.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((column) => column.name);
}

const quoted = (name: string): string => `"${name}"`;

/** The upsert of the rows given as one array per column: inserted when missing, updated only where a value differs. */
function upsertSql(table: CopiedTable, columns: readonly TargetColumn[]): string {
  const arrays = columns.map((column, index) => `$${index + 1}::${quoted(column.type)}[]`).join(', ');
  const names = columns.map((column) => column.name);
  const overriding = table.identity ? ' OVERRIDING SYSTEM VALUE' : '';
  const rest = names.filter((column) => !table.key.includes(column));
  const onConflict =
    rest.length === 0
      ? 'DO NOTHING'
      : `DO UPDATE SET ${rest.map((column) => `${quoted(column)} = EXCLUDED.${quoted(column)}`).join(', ')} ` +
        `WHERE (${rest.map((column) => `${quoted(table.name)}.${quoted(column)}`).join(', ')}) IS DISTINCT FROM (${rest.map((column) => `EXCLUDED.${quoted(column)}`).join(', ')})`;
  return `INSERT INTO ${quoted(table.name)} (${names.map(quoted).join(', ')})${overriding} SELECT * FROM unnest(${arrays}) ON CONFLICT (${table.key.map(quoted).join(', ')}) ${onConflict}`;
}

async function copyTable(source: Database.Database, target: PostgresDatabase, table: CopiedTable, progress: MigrationProgress): Promise<{ rows: number; written: number }> {
  const columns = sourceColumns(source, table.name);
  const known = await targetColumns(target, table.name);
  const missing = columns.filter((column) => !known.has(column));
  if (known.size === 0 || missing.length > 0) {
    throw new SchemaMismatchError(`the PostgreSQL database lacks ${known.size === 0 ? `the table ${table.name}` : `${table.name}.${missing.join(`, ${table.name}.`)}`}; it must be migrated by this server version`);
  }
  const targets = columns.map((column) => known.get(column)!);
  const sql = upsertSql(table, targets);
  const total = source.prepare(`SELECT COUNT(*) FROM ${quoted(table.name)}`).pluck().get() as number;
  progress.begin(`copying ${table.name.replaceAll('_', ' ')}`, total);
  const statement = source.prepare(`SELECT ${columns.map(quoted).join(', ')} FROM ${quoted(table.name)} ORDER BY ${table.key.map(quoted).join(', ')}`).raw();
  let rows = 0;
  let written = 0;
  let batch: unknown[][] = [];
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const params = targets.map((column, index) => batch.map((row) => (column.boolean && row[index] !== null ? row[index] !== 0 : row[index])));
    written += await target.run(sql, params);
    progress.advance(batch.length);
    batch = [];
  };
  // One read of the table in key order (a snapshot: the data directory is locked against the server).
  for (const row of statement.iterate() as Iterable<unknown[]>) {
    batch.push(row);
    rows += 1;
    if (batch.length >= BATCH_ROWS) await flush();
  }
  await flush();
  progress.end();
  return { rows, written };
}

/** Moves a table's identity sequence past the ids copied, so the next row PostgreSQL numbers follows them. */
async function advanceSequence(target: PostgresDatabase, table: CopiedTable): Promise<void> {
  if (!table.identity) return;
  await target.run(
    `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT MAX(${quoted(table.identity)}) FROM ${quoted(table.name)}), 1), (SELECT COUNT(*) > 0 FROM ${quoted(table.name)}))`,
    [table.name, table.identity],
  );
}

export async function copyRows(source: Database.Database, target: PostgresDatabase, progress: MigrationProgress): Promise<RowCopyReport> {
  checkSourceTables(source);
  const report: RowCopyReport = { rows: {}, written: 0 };
  for (const table of COPIED_TABLES) {
    const copied = await copyTable(source, target, table, progress);
    report.rows[table.name] = copied.rows;
    report.written += copied.written;
    await advanceSequence(target, table);
  }
  return report;
}
