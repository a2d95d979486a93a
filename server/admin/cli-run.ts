/**
 * One run of `patient-docs-admin`: what the command prints and its exit code, without exiting.
 * The entry (cli.ts) prints them and exits; a test that is about several commands' results rather
 * than their start-up runs them one after another in one process through it (adminCommands in test/helpers/processes.ts).
 *
 * This module loads only what parsing the flags and printing the usage need; a command's code (and
 * the database, the schemas…) is loaded once a command is asked for (commands.ts).
 */
import { format, parseArgs } from 'node:util';
import { ContentProblems, InputError, OPTIONS, UsageError } from './cli-common.js';
import { ConfigError } from '../config.js';
import { BackupTargetError, DatabaseBusyError } from '../db/sqlite/refusals.js';
import { ApiError, isDatabaseBusy, isDatabaseUnavailable } from '../errors.js';

/** What one command printed (each stream's text, newline included) and the exit code it asks for. */
export interface AdminRun {
  code: number;
  stdout: string;
  stderr: string;
}

export const USAGE = `Usage: patient-docs-admin <command> [options]

  organization add --name NAME [--id UUID]
  organization list
  patient add --name NAME [--id UUID] [--organization UUID ...] [--consent UUID ...]
              [--identifier 'SYSTEM|VALUE' ...] [--birth-date YYYY-MM-DD]
  patient list [--name PART] [--identifier 'SYSTEM|VALUE'] [--birth-date YYYY-MM-DD]
                         every patient, by name (first 1000), with every filter given
  patient show --id UUID
  patient update --id UUID [--name NAME] [--organization UUID ...] [--consent UUID ...]
              [--identifier 'SYSTEM|VALUE' ... | --identifier none] [--birth-date YYYY-MM-DD|none]
                         --identifier replaces the patient's identifiers (none removes them);
                         an identifier is unique per organization and system (docs/api.md)
  consent grant --patient UUID --organization UUID
  consent revoke --patient UUID --organization UUID
  client add --name NAME --scope SCOPE ... --organization UUID ... [--client-id ID]
             (the secret is generated and printed once)
  client list
  client disable --client-id ID   refuse its token requests now, its tokens within seconds
  client enable --client-id ID
  client rotate-secret --client-id ID   a new secret, printed once; the old one stops working
  order add --patient UUID --organization UUID --status STATUS
  order update --id UUID --status STATUS
  seed --file seed.json  create new entries, update those changed since last applied
  keys rotate            new signing key; the old one keeps verifying until pruned
  keys prune [--overlap SECONDS]   drop keys retired longer ago than the token lifetime
  keys list
  backup --to DIR        copy the database and every content file into a new folder while the
                         server runs; each file is checked against its sha256 as it is copied
  verify [--hashes]      check that every stored version's file is in the data folder with its
                         size (and sha256); run it on a restored backup before starting the server
  verify [--hashes] --mark-lost [--force]
                         then mark the files found missing or damaged as lost, so the record is
                         honest: a document whose current content is lost no longer has content
                         (no download link, not found by hasContent searches; id, name, path and
                         earlier versions stay), workstations that still have the scan upload it
                         again, and integrators hear document.lost; the audit log records each
                         file marked (mark-lost). Safe while the server runs; running it again
                         changes nothing. Restore from a backup first if you can. Refused when
                         the content folder is missing, empty or lacks more than half of its
                         files (a disk not mounted?) unless --force
  verify [--hashes] --mark-restored
                         files marked lost that are back intact (restored from a backup: size
                         and sha256 as recorded, always hashed; verify lists them) count as
                         content again: a document still at that version has its content, links
                         and hasContent back, and integrators hear document.restored; one with a
                         newer version keeps it (the restored one is an earlier version again);
                         the audit log records each file restored (mark-restored). Safe while
                         the server runs; running it again changes nothing
  audit [--patient UUID] [--document UUID] [--client-id ID] [--organization UUID]
        [--action ACTION] [--outcome allowed|refused|failed] [--since TIME] [--until TIME]
        [--limit N (100, at most 1000)] [--offset N] [--json]
                         who accessed a patient's files, and who was refused: one line per
                         entry, newest first (--json: one JSON object per line). TIME is a date
                         (2026-11-21, the server's time zone; --until includes that day) or a
                         date and time (2026-11-21T09:30:00Z). ACTION: list-patients, search,
                         read, versions, create, upload, download, thumbnail, delete, and
                         mark-lost, mark-restored (this CLI's verify marks, one per version)
  migrate --to-database postgres://… [--to-storage URL]
  migrate --to-storage URL
                         with the server stopped, copy this embedded installation (every
                         record, the content, thumbnails, keys, subscriptions and their
                         messages, the audit log) to PostgreSQL and/or another content storage
                         (s3://bucket[/prefix], file:///folder), each file checked against its
                         sha256; interrupted, run it again: it resumes, and after a complete
                         run it changes nothing (docs/several-instances.md)
  audit prune --before TIME   remove the entries recorded before TIME (nothing is removed
                         automatically: keep them as long as your country's rules require)
  webhooks prune --before TIME [--dead] [--json]
                         remove webhook messages delivered or cancelled before TIME with their
                         attempts (--dead: dead letters too, else kept for redelivery), and the
                         outbox events every subscription has been sent and no queued or dead
                         message needs; says how many of each (--json: one JSON object). Never
                         a message still queued or in flight; safe while the server runs
                         (PATIENT_DOCS_WEBHOOK_RETENTION_DAYS makes the server do it on its own)

  --wait SECONDS         how long to wait while another process (the server, a backup)
                         holds the database's write lock (default 30)

Environment: PATIENT_DOCS_DATA_DIR, PATIENT_DOCS_DATABASE_URL (as for the server).`;

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  if (values.help || !positionals[0]) return USAGE;
  const { runCommand } = await import('./commands.js');
  return runCommand(values, positionals);
}

/** The message and exit code of a command that failed: 2 for what to type differently, 1 for the rest. */
function failure(error: unknown): AdminRun {
  const refused = (code: number, ...line: unknown[]): AdminRun => ({ code, stdout: '', stderr: `${format(...line)}\n` });
  if (error instanceof UsageError || (error instanceof TypeError && 'code' in error)) return refused(2, `patient-docs-admin: ${error.message}\n\n${USAGE}`);
  if (error instanceof ConfigError || error instanceof InputError) return refused(2, `patient-docs-admin: ${error.message}`);
  if (error instanceof ApiError) return refused(1, `patient-docs-admin: ${error.detail}`);
  if (error instanceof ContentProblems || error instanceof BackupTargetError || error instanceof DatabaseBusyError) return refused(1, `patient-docs-admin: ${error.message}`);
  // Taken by another process between the wait and the command's own write.
  if (isDatabaseBusy(error)) return refused(1, 'patient-docs-admin: the database was busy (another process held its write lock) and the command did not complete; run it again');
  if (isDatabaseUnavailable(error)) return refused(1, `patient-docs-admin: ${(error as Error).message}; the command did not complete, run it again once the database answers`);
  return refused(1, 'patient-docs-admin:', error instanceof Error ? error.message : error);
}

/** Runs the command `argv` names (the arguments after `patient-docs-admin`). */
export async function runAdminCommand(argv: string[]): Promise<AdminRun> {
  try {
    const result = await run(argv);
    return { code: 0, stdout: `${typeof result === 'string' ? result : JSON.stringify(result, null, 2)}\n`, stderr: '' };
  } catch (error) {
    return failure(error);
  }
}
