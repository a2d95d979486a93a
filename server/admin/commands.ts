/**
 * The admin CLI's commands (the entry, admin-cli.ts, loads this module once the flags asked for one).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../config.js';
import type { ServerConfig } from '../config.js';
import type { ServerContext } from '../context.js';
import type { PostgresStore } from '../db/postgres/store.js';
import type { RestorableFile, Store } from '../db/types.js';
import { DirectoryService } from '../domain/directory.js';
import type { KeyStore } from '../identity/keys.js';
import { openStore, sqliteFile, usesPostgres } from '../open-store.js';
import { prepareContentFolders, prepareStore } from '../prepare-store.js';
import { waitForWriteLock } from '../db/sqlite/write-wait.js';
import { backupDataDir, verifyContent, type ContentProblem, type VerifyReport } from '../db/sqlite/backup.js';
import type { ContentStorage } from '../storage/types.js';
import { contentStorageFor } from '../storage/open.js';
import { looksUnmounted, markContentLost, markContentRestored, type MarkRestoredReport, type MarkRun } from '../domain/lost-content.js';
import { ContentProblems, InputError, UsageError, type ParsedValues } from './cli-common.js';

function required(value: string | undefined, flag: string): string {
  if (!value) throw new UsageError(`--${flag} is required`);
  return value;
}

function overlapSeconds(raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d{1,9}$/.test(raw)) throw new InputError(`--overlap ${JSON.stringify(raw)} must be a whole number of seconds`);
  return Number(raw);
}

function problemLines(problems: ContentProblem[]): string {
  return problems.map((problem) => `  document ${problem.documentId} version ${problem.version}: ${problem.problem} (${problem.key})`).join('\n');
}

function markedBefore(report: VerifyReport): string {
  const count = report.markedLost.length;
  if (count === 0) return '';
  // Missing still, or there again but not as recorded (other bytes: restored from the wrong backup, say): not usable either way.
  const back = notRestorable(report).length;
  const state = back === 0 ? 'still not there' : back === count ? (count === 1 ? 'back, but not with its recorded bytes' : 'back, but not with their recorded bytes') : 'still missing or not with the recorded bytes';
  return `; ${count} ${count === 1 ? 'file was' : 'files were'} marked lost before and ${count === 1 ? 'is' : 'are'} ${state} (${count === 1 ? 'its document waits' : 'their documents wait'} for a new upload)`;
}

/** One line per file marked lost whose stored file is back intact, each saying how to put it back. */
function restorableLines(files: readonly RestorableFile[]): string {
  return files
    .map((file) => `  document ${file.documentId} version ${file.version}: marked lost, but its file is back intact (${file.fileSize} bytes, its sha256 as recorded); run verify --mark-restored to count it as content again (${file.key})`)
    .join('\n');
}

/** Files marked lost of which a file is there again, but not the one recorded: never restored. */
function notRestorable(report: VerifyReport): ContentProblem[] {
  return report.markedLost.filter((problem) => !problem.missing);
}

function notRestorableLines(problems: readonly ContentProblem[]): string {
  return problems.map((problem) => `  document ${problem.documentId} version ${problem.version}: marked lost; a file is there again, but ${problem.problem.replace(/^the file /, 'it ')}, so it is not restored (${problem.key})`).join('\n');
}

/** What verify adds about files marked lost that are there again: the intact ones, then the others. */
function restorableNote(report: VerifyReport): string {
  const count = report.restorable.length;
  const damaged = notRestorable(report);
  const intact = count === 0 ? '' : `\n${count} ${count === 1 ? 'file marked lost is' : 'files marked lost are'} back intact (restored from a backup?):\n${restorableLines(report.restorable)}`;
  return intact + (damaged.length === 0 ? '' : `\n${notRestorableLines(damaged)}`);
}

function verified(report: VerifyReport, hashes: boolean): string {
  if (report.problems.length > 0) {
    throw new ContentProblems(
      `${report.problems.length} of ${report.versions} stored files are missing or damaged; restore them from a backup, or run verify --mark-lost so their documents stop claiming content they lack and the workstations that still have the scans upload them again:\n${problemLines(report.problems)}${restorableNote(report)}`,
    );
  }
  // Files marked lost that are back are counted apart until --mark-restored puts them back.
  const good = report.versions - report.markedLost.length - report.restorable.length;
  const bytes = report.bytes - report.restorable.reduce((sum, file) => sum + file.fileSize, 0);
  return `all ${good} stored files are in place (${bytes} bytes${hashes ? ', each matching its sha256' : '; add --hashes to check their sha256 too'})${markedBefore(report)}; the audit log holds ${report.auditEntries} entries${restorableNote(report)}`;
}

const RESTORED_OUTCOME: Record<MarkRestoredReport['files'][number]['outcome'], string> = {
  current: 'restored: the document has this content again',
  earlier: 'restored as an intact earlier version: the document has a newer version (or was deleted) and is not changed',
  unchanged: 'no longer marked lost already (another run)',
};

/**
 * `verify --mark-restored`: the files marked lost that verify found back intact count as content
 * again (see domain/lost-content.ts). Returns what was restored, one line per file.
 */
async function markRestored(report: VerifyReport, run: MarkRun, waitForLock: () => Promise<void>, openContext: () => Promise<ServerContext>): Promise<string> {
  if (report.restorable.length === 0) return 'nothing to restore: no file marked lost is back intact';
  await waitForLock();
  const context = await openContext();
  let restored: MarkRestoredReport;
  try {
    restored = await markContentRestored(context.store, context.documents, report.restorable, run);
  } finally {
    await context.store.close();
  }
  const lines = restored.files.map((file) => `  document ${file.documentId} version ${file.version}: ${RESTORED_OUTCOME[file.outcome]} (${file.key})`).join('\n');
  return (
    `restored ${restored.versions} of ${report.restorable.length} files marked lost that are back intact; ${restored.documents} ${restored.documents === 1 ? 'document has its' : 'documents have their'} content again ` +
    `(download links, hasContent searches; integrators hear document.restored):\n${lines}`
  );
}

/** `verify --mark-lost`: the files verify found missing or damaged are marked lost (see domain/lost-content.ts). */
async function markLost(report: VerifyReport, values: ParsedValues, folder: string, run: MarkRun, waitForLock: () => Promise<void>, openContext: () => Promise<ServerContext>): Promise<string> {
  if (report.problems.length === 0) return `nothing to mark: ${verified(report, values.hashes === true)}`;
  const refusal = looksUnmounted({ versions: report.versions, problems: report.problems.length, folderHasFiles: report.folderHasFiles, folder });
  if (refusal && values.force !== true) throw new ContentProblems(refusal);
  const lost = report.problems.filter((problem) => !problem.unreadable);
  const unreadable = report.problems.filter((problem) => problem.unreadable);
  let marked = { versions: 0, documents: 0 };
  if (lost.length > 0) {
    await waitForLock();
    const context = await openContext();
    try {
      marked = await markContentLost(context.store, context.documents, lost, run);
    } finally {
      await context.store.close();
    }
  }
  const line =
    `marked ${marked.versions} of ${report.versions} stored files lost; ${marked.documents} ${marked.documents === 1 ? 'document no longer counts' : 'documents no longer count'} as having content ` +
    `and ${marked.documents === 1 ? 'waits' : 'wait'} for a new upload (workstations that still have the scans upload them again)${markedBefore(report)}:\n${problemLines(lost)}`;
  if (unreadable.length > 0) {
    throw new ContentProblems(`${line}\n${unreadable.length} stored files are there but cannot be read, so they were not marked lost; fix their permissions or the disk and run verify again:\n${problemLines(unreadable)}`);
  }
  return line;
}

/**
 * Who runs the CLI, by the operating system's account, for the audit entries of its marks (the
 * data directory's access is the CLI's authority; there is no token to name). Left out when the
 * system cannot say (a container user without a passwd entry, no USER).
 */
function osAccount(): { osUser?: string } {
  try {
    return { osUser: os.userInfo().username };
  } catch {
    return process.env.USER ? { osUser: process.env.USER } : {};
  }
}

/** The flags' schemas and their validator, loaded by the commands that check flags (admin-flag-checks.ts). */
const flagChecks = () => import('./flag-checks.js');

/** verify's check of the stored files against the versions PostgreSQL records (db/postgres/verify.ts). */
async function verifyOnPostgres(config: ServerConfig, storage: ContentStorage, hashes: boolean): Promise<VerifyReport> {
  const store = await openStore(config);
  try {
    const { verifyPostgresContent } = await import('../db/postgres/verify.js');
    return await verifyPostgresContent((store as PostgresStore).db, storage, { hashes });
  } finally {
    await store.close();
  }
}

/** How long a command waits for the database's write lock before giving up (--wait). */
const DEFAULT_WAIT_SECONDS = 30;

async function waitForLock(file: string, wait: string | undefined): Promise<void> {
  const waitSeconds = wait === undefined ? DEFAULT_WAIT_SECONDS : Number(wait);
  if (!Number.isFinite(waitSeconds) || waitSeconds < 0 || waitSeconds > 3600) throw new InputError('--wait must be a number of seconds from 0 to 3600');
  await waitForWriteLock(file, waitSeconds * 1000, () =>
    process.stderr.write(`patient-docs-admin: the database is busy (another process is writing to it); waiting up to ${waitSeconds} s…\n`),
  );
}

/**
 * The part of the server's context (context.ts) the commands use, opened with the same first steps
 * (prepare-store.ts), without loading what only the HTTP side needs (routes, thumbnails, webhooks).
 */
async function openAdminContext(config: ServerConfig): Promise<{ store: Store; keys: KeyStore; directory: DirectoryService }> {
  const store = await openStore(config);
  const { keys } = await prepareStore(store, config.masterKeys);
  prepareContentFolders(config.dataDir);
  return { store, keys, directory: new DirectoryService(store) };
}

const READ_ONLY = new Set(['organization list', 'patient list', 'patient show', 'client list', 'keys list', 'audit']);

/** Runs the command the positionals name (`area action`); its result is printed by the entry. */
export async function runCommand(values: ParsedValues, positionals: string[]): Promise<unknown> {
  const [area, action] = positionals;
  const config = loadConfig();
  if (area === 'migrate' && action === undefined) {
    const { migrateCommand } = await import('./migrate/command.js');
    return migrateCommand(config, values);
  }
  // A mistyped or missing data dir must not pass unnoticed: a command that only reads refuses it,
  // and one that writes says it is creating a new database when it opens it (IT may set things up
  // before the server).
  const file = sqliteFile(config);
  if (!usesPostgres(config) && !fs.existsSync(file)) {
    if (READ_ONLY.has(`${area} ${action ?? ''}`.trim())) {
      throw new InputError(`there is no database at ${file}: set PATIENT_DOCS_DATA_DIR (or PATIENT_DOCS_DATABASE_URL) as for the server`);
    }
  }
  const command = `${area} ${action ?? ''}`.trim();
  if (command === 'backup' && usesPostgres(config)) {
    // A copy of the embedded database file beside the content; a PostgreSQL database is backed up
    // with PostgreSQL's own tools, and the content folder with the file system's.
    throw new InputError(
      `backup copies the embedded SQLite database and the content folder; with PATIENT_DOCS_DATABASE_URL=postgres://… back up the database with pg_dump and ${path.join(config.dataDir, 'content')} with your file backup (docs/several-instances.md, "Backup"); nothing was written`,
    );
  }
  if (command === 'backup' || command === 'verify') {
    // Read-only on the database: no write lock to wait for, no migration, works beside the server.
    const postgres = usesPostgres(config);
    if (!postgres && !fs.existsSync(file)) throw new InputError(`there is no database at ${file}: set PATIENT_DOCS_DATA_DIR (or PATIENT_DOCS_DATABASE_URL) as for the server`);
    const storage = await contentStorageFor(config, { create: false });
    if (command === 'verify') {
      if (values.force === true && values['mark-lost'] !== true) throw new UsageError('--force goes with --mark-lost');
      const report = postgres ? await verifyOnPostgres(config, storage, values.hashes === true) : await verifyContent(file, storage, { hashes: values.hashes === true });
      // PostgreSQL has no database-wide write lock to wait for: each mark is a transaction of its own beside the instances'.
      const lock = postgres ? async () => undefined : () => waitForLock(file, values.wait);
      const openContext = async () => (await import('../context.js')).createContext(config);
      // One id for the run's audit entries and events, so they can be found together.
      const run: MarkRun = { id: randomUUID(), operator: { by: 'admin CLI', ...osAccount() } };
      if (values['mark-restored'] !== true) {
        if (values['mark-lost'] !== true) return verified(report, values.hashes === true);
        return markLost(report, values, storage.location, run, lock, openContext);
      }
      // Restoring first: it only gives back content whose bytes are there; a lost mark then starts from it.
      const restored = await markRestored(report, run, lock, openContext);
      const after: VerifyReport = { ...report, restorable: [] };
      try {
        if (values['mark-lost'] === true) return `${restored}\n${await markLost(after, values, storage.location, run, lock, openContext)}`;
        if (report.problems.length > 0) verified(after, values.hashes === true);
        const damaged = notRestorable(report);
        return damaged.length === 0 ? restored : `${restored}\n${notRestorableLines(damaged)}`;
      } catch (error) {
        if (error instanceof ContentProblems) throw new ContentProblems(`${restored}\n${error.message}`);
        throw error;
      }
    }
    const report = await backupDataDir({ databaseFile: file, dataDir: config.dataDir, storage, target: required(values.to, 'to') });
    if (report.problems.length > 0) throw new ContentProblems(`backup written to ${report.directory}, but ${report.problems.length} of ${report.versions} stored files could not be copied:\n${problemLines(report.problems)}`);
    const copied = report.versions - report.markedLost.length;
    const back = report.restorable.length;
    const restorable =
      back === 0 ? '' : `; ${back} of them ${back === 1 ? 'was' : 'were'} marked lost and ${back === 1 ? 'is' : 'are'} back intact (run verify --mark-restored on the server's data to count ${back === 1 ? 'it' : 'them'} as content again)`;
    return `backup written to ${report.directory}: the database and ${copied} stored files (${report.bytes} bytes), each checked against its sha256${restorable}${markedBefore(report)}; the audit log's ${report.auditEntries} entries are in the database copy`;
  }
  // The flags are checked before the database is opened: a refused command waits for no lock,
  // creates no database, and loads neither the driver nor the signing keys.
  let context: Awaited<ReturnType<typeof openAdminContext>> | undefined;
  const open = async (): Promise<Awaited<ReturnType<typeof openAdminContext>>> => {
    if (!usesPostgres(config)) {
      if (!fs.existsSync(file)) process.stderr.write(`patient-docs-admin: no database at ${file} yet; creating it\n`);
      await waitForLock(file, values.wait);
    }
    context = await openAdminContext(config);
    return context;
  };
  const directory = async (): Promise<DirectoryService> => (await open()).directory;
  try {
    switch (command) {
      case 'organization add': {
        const { checked, AdminOrganizationBody } = await flagChecks();
        const body = checked(AdminOrganizationBody, { id: values.id, name: required(values.name, 'name') });
        return (await (await directory()).upsertOrganization(body)).organization;
      }
      case 'organization list':
        return await (await directory()).listOrganizations();
      case 'patient add': {
        const { checked, AdminPatientBody, identifierFlags } = await flagChecks();
        const body = checked(AdminPatientBody, {
          id: values.id,
          name: required(values.name, 'name'),
          organizations: values.organization,
          consents: values.consent,
          identifiers: identifierFlags(values.identifier),
          birthDate: values['birth-date'],
        });
        return await (await directory()).createPatient(body);
      }
      case 'patient list': {
        if ((values.identifier?.length ?? 0) > 1) throw new UsageError('patient list takes one --identifier');
        return (await (await directory()).listPatients({ name: values.name, identifier: values.identifier?.[0], birthDate: values['birth-date'], limit: 1000 })).patients;
      }
      case 'patient show': {
        const { checked, IdFlags } = await flagChecks();
        const { id } = checked(IdFlags, { id: required(values.id, 'id') });
        return await (await directory()).getPatient(id);
      }
      case 'patient update': {
        const { checked, IdFlags, AdminPatientPatch, identifierFlags } = await flagChecks();
        const birthDate = values['birth-date'] === 'none' ? null : values['birth-date'];
        const { id } = checked(IdFlags, { id: required(values.id, 'id') });
        const patch = checked(AdminPatientPatch, { name: values.name, organizations: values.organization, consents: values.consent, identifiers: identifierFlags(values.identifier), birthDate });
        return await (await directory()).updatePatient(id, patch);
      }
      case 'consent grant':
      case 'consent revoke': {
        const { checked, ConsentFlags } = await flagChecks();
        const consent = checked(ConsentFlags, { patientId: required(values.patient, 'patient'), organizationId: required(values.organization?.[0], 'organization') });
        return await (await directory()).setConsent(consent.patientId, consent.organizationId, action === 'grant');
      }
      case 'client add': {
        const { checked, AdminClientBody } = await flagChecks();
        const body = checked(AdminClientBody, {
          clientId: values['client-id'],
          name: required(values.name, 'name'),
          scopes: values.scope ?? [],
          organizations: values.organization ?? [],
        });
        return await (await directory()).createClient(body);
      }
      case 'client list':
        return await (await directory()).listClients();
      case 'client disable':
      case 'client enable': {
        const { checked, ClientFlags } = await flagChecks();
        const { clientId } = checked(ClientFlags, { clientId: required(values['client-id'], 'client-id') });
        return await (await directory()).updateClient(clientId, { disabled: action === 'disable' });
      }
      case 'client rotate-secret': {
        const { checked, ClientFlags } = await flagChecks();
        const { clientId } = checked(ClientFlags, { clientId: required(values['client-id'], 'client-id') });
        return await (await directory()).rotateClientSecret(clientId);
      }
      case 'order add': {
        const { checked, AdminOrderBody } = await flagChecks();
        const body = checked(AdminOrderBody, {
          patientId: required(values.patient, 'patient'),
          organizationId: required(values.organization?.[0], 'organization'),
          status: required(values.status, 'status'),
        });
        return await (await directory()).createOrder(body);
      }
      case 'order update': {
        const { checked, IdFlags, AdminOrderPatch } = await flagChecks();
        const { id } = checked(IdFlags, { id: required(values.id, 'id') });
        const { status } = checked(AdminOrderPatch, { status: required(values.status, 'status') });
        return await (await directory()).updateOrder(id, status);
      }
      case 'seed': {
        const { readSeedFile } = await import('../domain/seed-file.js');
        const seed = readSeedFile(required(values.file, 'file'), '--file');
        return await (await directory()).applySeed(seed);
      }
      case 'keys rotate':
        return { kid: await (await open()).keys.rotate(), note: 'new tokens are signed with this key; tokens signed before keep verifying until `keys prune`' };
      case 'keys prune': {
        const overlap = overlapSeconds(values.overlap, config.tokenLifetimeSeconds);
        return { removed: await (await open()).keys.prune(overlap) };
      }
      case 'audit':
        return await (await import('./audit.js')).auditCommand((await open()).store.audit, values);
      case 'audit prune': {
        const { pruneCommand } = await import('./audit.js');
        return await pruneCommand((await open()).store.audit, required(values.before, 'before'));
      }
      case 'webhooks prune': {
        const { webhooksPruneCommand } = await import('./webhooks.js');
        return await webhooksPruneCommand(async () => (await open()).store.webhooks, values, required(values.before, 'before'));
      }
      case 'keys list':
        return (await (await open()).store.signingKeys.list()).map(({ kid, createdAt, retiredAt }) => ({ kid, createdAt, retiredAt }));
      default:
        throw new UsageError(`unknown command: ${positionals.join(' ')}`);
    }
  } finally {
    await context?.store.close();
  }
}

