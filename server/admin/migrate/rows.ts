/**
 * The records of an embedded installation (SQLite) copied into PostgreSQL, table by table, as
 * upserts keyed by each table's primary key: a row already there with the same values is left
 * alone (nothing written), one that differs is updated, a missing one inserted. So an interrupted
 * run resumes by running again, and a run after a complete one writes nothing.
 *
 * A batch reaches PostgreSQL as one JSON parameter (an array of rows, each an array of values),
 * taken apart there by column; only the rows missing or different from what the table holds are
 * written: rows alike are neither rewritten nor locked, so a run after a complete one writes no
 * row and leaves the tables' pages as they were. The documents are written with the row trigger that
 * keeps the per-patient totals switched off (inside each batch's transaction, so a killed run never
 * leaves it off); the totals, which the embedded database keeps the same way, are copied after them.
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
  /**
   * Row triggers off while this table's batches are written: they keep tables copied after it
   * (from the embedded database, which keeps them by its own triggers), so firing them per row
   * would only do that work twice.
   */
  quietTriggers?: readonly string[];
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
  { name: 'documents', key: ['id'], quietTriggers: ['documents_keep_counts'] },
  // What documents_keep_counts keeps: the per-patient totals and change counters, as the embedded database counted them.
  { name: 'patient_document_counts', key: ['patient_id', 'has_content'] },
  { name: 'patient_document_versions', key: ['patient_id'] },
  { name: 'document_versions', key: ['document_id', 'version'] },
  { name: 'orders', key: ['id'] },
  { name: 'outbox_events', key: ['sequence'], identity: 'sequence' },
  { name: 'webhook_subscriptions', key: ['id'] },
  { name: 'webhook_messages', key: ['seq'], identity: 'seq' },
  { name: 'webhook_attempts', key: ['sequence'], identity: 'sequence' },
  { name: 'webhook_cursor', key: ['id'] },
  { name: 'audit_log', key: ['id'], identity: 'id' },
];

/** Each database's own bookkeeping, not copied. */
const DERIVED_TABLES = new Set(['schema_migrations', 'sqlite_sequence']);

/**
 * Rows per statement (and per transaction: an interrupted run keeps every batch it committed).
 * A batch is one JSON parameter, which Node writes natively and PostgreSQL reads as jsonb; the
 * driver's own encoding of one text array per column cost several times the CPU on the Node side.
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
  /** Its type's name as PostgreSQL spells it (text, int8, bool…): the cast of its value taken from the JSON row. */
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
  const rows = await target.rows<{ column_name: string; udt_name: string }>(
    'SELECT column_name, udt_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1',
    [table],
  );
  return new Map(rows.map((row) => [row.column_name, { name: row.column_name, type: row.udt_name }]));
}

function sourceColumns(source: Database.Database, table: string): string[] {
  return (source.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((column) => column.name);
}

const quoted = (name: string): string => `"${name}"`;

/**
 * The statement that writes one batch, given as $1: a JSON array of rows, each an array of the
 * columns' values in order (SQLite's 0 and 1 read as PostgreSQL booleans). The rows are taken apart
 * once (MATERIALIZED), compared with the table's by key, and only those missing or different go on
 * to the upsert: a row alike is not even locked, which an ON CONFLICT DO UPDATE … WHERE does to every
 * row it finds (a WAL record and a dirtied page each). The upsert's own WHERE stays as the guard.
 * `compare` false (the table was empty when the copy began): no comparison, which would cost every
 * new row a second probe of the primary key.
 */
export function upsertSql(table: CopiedTable, columns: readonly TargetColumn[], compare = true): string {
  const names = columns.map((column) => column.name);
  const rest = names.filter((column) => !table.key.includes(column));
  const taken = columns.map((column, index) => `(row ->> ${index})::${quoted(column.type)} AS ${quoted(column.name)}`).join(', ');
  const tuple = (alias: string, list: readonly string[]): string => `(${list.map((column) => `${alias}.${quoted(column)}`).join(', ')})`;
  const matches = table.key.map((column) => `target.${quoted(column)} = source.${quoted(column)}`).join(' AND ');
  const differs = `target.${quoted(table.key[0]!)} IS NULL${rest.length === 0 ? '' : ` OR ${tuple('target', rest)} IS DISTINCT FROM ${tuple('source', rest)}`}`;
  const overriding = table.identity ? ' OVERRIDING SYSTEM VALUE' : '';
  const onConflict =
    rest.length === 0
      ? 'DO NOTHING'
      : `DO UPDATE SET ${rest.map((column) => `${quoted(column)} = EXCLUDED.${quoted(column)}`).join(', ')} ` +
        `WHERE ${tuple(quoted(table.name), rest)} IS DISTINCT FROM ${tuple('EXCLUDED', rest)}`;
  return (
    `WITH source AS MATERIALIZED (SELECT ${taken} FROM jsonb_array_elements($1::jsonb) AS row) ` +
    `INSERT INTO ${quoted(table.name)} (${names.map(quoted).join(', ')})${overriding} ` +
    `SELECT ${names.map((column) => `source.${quoted(column)}`).join(', ')} FROM source` +
    (compare ? ` LEFT JOIN ${quoted(table.name)} AS target ON ${matches} WHERE ${differs} ` : ' ') +
    `ON CONFLICT (${table.key.map(quoted).join(', ')}) ${onConflict}`
  );
}

/**
 * The triggers of `table.quietTriggers` to switch off while its batches are written: none when the
 * target already holds as many rows as the source (nothing to insert: a run after a complete one
 * touches not even the catalog), or when this connection does not own the table (they fire as usual).
 */
async function triggersToQuiet(target: PostgresDatabase, table: CopiedTable, sourceRows: number, held: number): Promise<string[]> {
  if (!table.quietTriggers?.length || held >= sourceRows) return [];
  const owned = await target.rows<{ tgname: string }>(
    `SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
      WHERE t.tgrelid = to_regclass($1) AND t.tgname = ANY($2::text[]) AND pg_has_role(current_user, c.relowner, 'USAGE')`,
    [quoted(table.name), table.quietTriggers],
  );
  return owned.map((row) => row.tgname);
}

/** Every value of the row is text, a number or null, which JSON carries as they are (a BLOB would arrive as an object). */
function checkRow(table: string, columns: readonly string[], row: readonly unknown[]): void {
  for (let index = 0; index < row.length; index += 1) {
    const value = row[index];
    if (value !== null && typeof value === 'object') throw new SchemaMismatchError(`${table}.${columns[index]} holds binary data in the embedded database; the tables copied hold text and numbers only`);
  }
}

async function copyTable(source: Database.Database, target: PostgresDatabase, table: CopiedTable, progress: MigrationProgress): Promise<{ rows: number; written: number }> {
  const columns = sourceColumns(source, table.name);
  const known = await targetColumns(target, table.name);
  const missing = columns.filter((column) => !known.has(column));
  if (known.size === 0 || missing.length > 0) {
    throw new SchemaMismatchError(`the PostgreSQL database lacks ${known.size === 0 ? `the table ${table.name}` : `${table.name}.${missing.join(`, ${table.name}.`)}`}; it must be migrated by this server version`);
  }
  const targets = columns.map((column) => known.get(column)!);
  const held = (await target.row<{ rows: number }>(`SELECT COUNT(*) AS rows FROM ${quoted(table.name)}`))?.rows ?? 0;
  const sql = upsertSql(table, targets, held > 0);
  const total = source.prepare(`SELECT COUNT(*) FROM ${quoted(table.name)}`).pluck().get() as number;
  progress.begin(`copying ${table.name.replaceAll('_', ' ')}`, total);
  const statement = source.prepare(`SELECT ${columns.map(quoted).join(', ')} FROM ${quoted(table.name)} ORDER BY ${table.key.map(quoted).join(', ')}`).raw();
  const triggers = await triggersToQuiet(target, table, total, held);
  const write = async (json: string): Promise<number> => {
    if (triggers.length === 0) return target.run(sql, [json]);
    // Off and on again inside the batch's transaction: a run killed half-way leaves them on.
    return target.transaction(async (tx) => {
      for (const trigger of triggers) await tx.run(`ALTER TABLE ${quoted(table.name)} DISABLE TRIGGER ${quoted(trigger)}`);
      const count = await tx.run(sql, [json]);
      for (const trigger of triggers) await tx.run(`ALTER TABLE ${quoted(table.name)} ENABLE TRIGGER ${quoted(trigger)}`);
      return count;
    });
  };
  let rows = 0;
  let written = 0;
  let batch: unknown[][] = [];
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    written += await write(JSON.stringify(batch));
    progress.advance(batch.length);
    batch = [];
  };
  // One read of the table in key order (a snapshot: the data directory is locked against the server).
  for (const row of statement.iterate() as Iterable<unknown[]>) {
    checkRow(table.name, columns, row);
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
