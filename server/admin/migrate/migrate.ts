/**
 * `admin migrate`: an embedded installation (SQLite and the content folder in PATIENT_DOCS_DATA_DIR)
 * copied to PostgreSQL and/or another content storage, with the server stopped (the data
 * directory's lock is held for the whole run, so none can start meanwhile).
 *
 * While the records are being copied, the new database holds a marker (meta `migration-in-progress`)
 * that stops a server from starting on it: a server on half the records would take the content it
 * does not see yet for orphans and remove it. The marker goes only when a run ends with every
 * record copied and every file checked; an interrupted run leaves it, and running the command again
 * resumes (rows are upserts; files already there intact, or recorded as copied by a batch that was
 * made durable, are not copied again: copy-record.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, type ServerConfig } from '../../config.js';
import { lockDataDir } from '../../db/sqlite/data-dir-lock.js';
import { SqliteStore } from '../../db/sqlite/store.js';
import type { PostgresStore } from '../../db/postgres/store.js';
import type { Store } from '../../db/types.js';
import { SecretWrap } from '../../identity/master-key.js';
import { openStore, sqliteFile } from '../../open-store.js';
import { LocalDiskStorage } from '../../storage/local-disk.js';
import { InputError, ContentProblems } from '../cli-common.js';
import { checkContentInPlace, copyContent, listStoredContent, type ContentReport } from './content.js';
import { CopyRecord } from './copy-record.js';
import { formatBytes, type MigrationProgress } from './progress.js';
import { copyRows, type RowCopyReport } from './rows.js';
import { openTargetStorage, type MigrationTargets } from './targets.js';
import { databaseLabel } from '../../db/postgres/migrations.js';
import { MIGRATION_MARKER } from '../../prepare-store.js';

export interface MigrationReport {
  rows?: RowCopyReport;
  content: ContentReport;
}

/** Takes the data directory's lock, or says in one line that a server holds it. */
function lockAgainstServer(dataDir: string): { release(): void } {
  try {
    return lockDataDir(dataDir);
  } catch (error) {
    if (error instanceof ConfigError && / is in use by /.test(error.message)) {
      throw new ConfigError(`${error.message.replace(/; stop it first.*$/, '')}; stop it before migrating (nothing was copied)`);
    }
    throw error;
  }
}

/** The master key given opens the installation's secrets: the new servers need the same one. */
async function checkMasterKey(source: Store, config: ServerConfig): Promise<void> {
  const linkKey = await source.meta.get('link-signing-key');
  if (linkKey !== undefined) new SecretWrap(config.masterKeys).open(linkKey, 'meta/link-signing-key');
}

async function openTargetDatabase(url: string, config: ServerConfig): Promise<PostgresStore> {
  try {
    return (await openStore({ ...config, databaseUrl: url })) as PostgresStore;
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(error.message.replace(/^PATIENT_DOCS_DATABASE_URL=/, '--to-database '));
    throw error;
  }
}

/**
 * Refuses a database that another installation (or a server started on it alone) already uses,
 * and one where servers have run since an earlier migration: copying again would put back the
 * older state of what changed there since.
 */
async function checkTarget(source: SqliteStore, target: PostgresStore, tenantId: string, url: string): Promise<void> {
  const theirs = await target.meta.get('tenant-id');
  if (theirs !== undefined && theirs !== tenantId) {
    throw new InputError(
      `--to-database ${databaseLabel(url)} holds another installation's data (installation ${theirs}; this one is ${tenantId}); give migrate an empty database (nothing was copied)`,
    );
  }
  for (const [table, column, what] of [
    ['outbox_events', 'sequence', 'changes'],
    ['audit_log', 'id', 'audit entries'],
  ] as const) {
    const here = (source.db.prepare(`SELECT COALESCE(MAX(${column}), 0) FROM ${table}`).pluck().get() as number) ?? 0;
    const there = (await target.db.row<{ last: number }>(`SELECT COALESCE(MAX(${column}), 0) AS last FROM ${table}`))?.last ?? 0;
    if (there > here) {
      throw new InputError(
        `--to-database ${databaseLabel(url)} has ${what} made after this installation's last (a server ran on it since the migration); migrating again would put back older records, so nothing was copied`,
      );
    }
  }
}

function problemLines(content: ContentReport): string {
  return content.problems.map((problem) => `  ${problem.key}: ${problem.problem}`).join('\n');
}

export async function migrateInstallation(config: ServerConfig, targets: MigrationTargets, progress: MigrationProgress): Promise<MigrationReport> {
  const file = sqliteFile(config);
  if (!fs.existsSync(file)) throw new InputError(`there is no database at ${file}: set PATIENT_DOCS_DATA_DIR to the embedded installation's data folder`);
  const lock = lockAgainstServer(config.dataDir);
  let source: SqliteStore | undefined;
  let target: PostgresStore | undefined;
  try {
    source = SqliteStore.open(file);
    await checkMasterKey(source, config);
    const tenantId = await source.meta.get('tenant-id');
    if (tenantId === undefined) throw new InputError(`${file} was never used by a server (it has no installation id); there is nothing to migrate`);
    // Only read: a content folder not mounted stays missing (and every file is reported so) rather than made empty.
    const currentContent = new LocalDiskStorage(path.join(config.dataDir, 'content'), { create: false });
    // Opened before anything is written, so a bad target costs nothing.
    const targetStorage = targets.storage === undefined ? undefined : await openTargetStorage(targets.storage, currentContent.root);
    let rows: RowCopyReport | undefined;
    if (targets.database !== undefined) {
      target = await openTargetDatabase(targets.database, config);
      await checkTarget(source, target, tenantId, targets.database);
      await target.meta.set(MIGRATION_MARKER, JSON.stringify({ from: config.dataDir, startedAt: new Date().toISOString() }));
      rows = await copyRows(source.db, target.db, progress);
    }
    const listed = listStoredContent(source.db);
    const content = targetStorage
      ? await copyContent(currentContent, targetStorage, listed, progress, { record: CopyRecord.open(config.dataDir, targetStorage.location) })
      : await checkContentInPlace(currentContent, listed, progress);
    if (content.problems.length > 0) {
      throw new ContentProblems(
        `${content.problems.length} of ${content.files} stored files are missing or damaged in ${currentContent.root}, so the migration is not complete` +
          `${target ? ' (the new database stays marked incomplete and no server starts on it)' : ''}; restore them from a backup, or run verify --mark-lost on this installation, then run migrate again:\n${problemLines(content)}`,
      );
    }
    if (target) await target.db.run('DELETE FROM meta WHERE key = $1', [MIGRATION_MARKER]);
    return { ...(rows ? { rows } : {}), content };
  } finally {
    await target?.close().catch(() => undefined);
    if (source?.db.open) source.db.close();
    lock.release();
  }
}

const plural = (count: number, one: string, many: string): string => `${count} ${count === 1 ? one : many}`;

/** The closing line: what is where now, what changed, and how to start the servers on it. */
export function migrationSummary(report: MigrationReport, targets: MigrationTargets): string {
  const parts: string[] = [];
  if (report.rows) {
    const rows = report.rows.rows;
    const count = (table: string): number => rows[table] ?? 0;
    parts.push(
      `${plural(count('organizations'), 'organization', 'organizations')}, ${plural(count('patients'), 'patient', 'patients')}, ${plural(count('clients'), 'client', 'clients')}, ` +
        `${plural(count('signing_keys'), 'signing key', 'signing keys')}, ${plural(count('documents'), 'document', 'documents')} with ${plural(count('document_versions'), 'version', 'versions')}, ` +
        `${plural(count('webhook_subscriptions'), 'subscription', 'subscriptions')} with ${plural(count('webhook_messages'), 'message', 'messages')}, ${plural(count('audit_log'), 'audit entry', 'audit entries')} ` +
        `in ${databaseLabel(targets.database!)} (${plural(report.rows.written, 'row', 'rows')} written)`,
    );
  }
  const content = report.content;
  const where = targets.storage ? `in ${targets.storage}` : 'in place';
  parts.push(
    `${plural(content.files - content.lostLeftBehind, 'stored file', 'stored files')} (${formatBytes(content.bytes)}) ${where}, each checked against its sha256` +
      (targets.storage ? ` (${content.copied} copied, ${formatBytes(content.copiedBytes)}), ${plural(content.thumbnails - content.thumbnailsMissing, 'thumbnail', 'thumbnails')} (${content.thumbnailsCopied} copied)` : ''),
  );
  if (content.lostLeftBehind > 0) parts.push(`${plural(content.lostLeftBehind, 'file', 'files')} marked lost before left behind`);
  const nothing = (report.rows?.written ?? 0) === 0 && content.copied === 0 && content.thumbnailsCopied === 0;
  const start = [targets.database ? `PATIENT_DOCS_DATABASE_URL=${databaseLabel(targets.database)}` : '', targets.storage?.startsWith('s3:') ? `PATIENT_DOCS_STORAGE_URL=${targets.storage}` : '']
    .filter(Boolean)
    .join(' ');
  const next = start ? `; start the servers with ${start}, the same PATIENT_DOCS_PUBLIC_URL and master key` : '';
  return `migrated: ${parts.join('; ')}${nothing ? '; nothing changed (the target already held all of it)' : ''}${next}`;
}
