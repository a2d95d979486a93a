/**
 * What the admin CLI's entry (admin-cli.ts) and its commands (admin-commands.ts) share: the flags,
 * and the errors that decide the message and the exit code.
 */
import type { parseArgs } from 'node:util';

export const OPTIONS = {
  name: { type: 'string' },
  id: { type: 'string' },
  organization: { type: 'string', multiple: true },
  consent: { type: 'string', multiple: true },
  identifier: { type: 'string', multiple: true },
  'birth-date': { type: 'string' },
  patient: { type: 'string' },
  scope: { type: 'string', multiple: true },
  'client-id': { type: 'string' },
  status: { type: 'string' },
  file: { type: 'string' },
  overlap: { type: 'string' },
  wait: { type: 'string' },
  to: { type: 'string' },
  'to-database': { type: 'string' },
  'to-storage': { type: 'string' },
  hashes: { type: 'boolean' },
  'mark-lost': { type: 'boolean' },
  'mark-restored': { type: 'boolean' },
  force: { type: 'boolean' },
  document: { type: 'string' },
  action: { type: 'string' },
  outcome: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  before: { type: 'string' },
  dead: { type: 'boolean' },
  limit: { type: 'string' },
  offset: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type ParsedValues = ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS; allowPositionals: true; strict: true }>>['values'];

/** A command or flag the CLI does not know, or one missing: the usage follows, exit code 2. */
export class UsageError extends Error {}

/** A value the admin API would refuse: one line naming the flag, exit code 2. */
export class InputError extends Error {}

/** Stored files that are missing or damaged: listed, exit code 1. */
export class ContentProblems extends Error {}
