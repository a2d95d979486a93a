/** `audit` and `audit prune` of the admin CLI (loaded by those commands only: their filters' schema loads typebox). */
import type { ParsedValues } from './admin-cli-common.js';
import { InputError } from './admin-cli-common.js';
import { checked } from './admin-flag-checks.js';
import { auditLine, AuditListQuery, auditQuery, listAudit, parseAuditTime } from './audit/query.js';
import type { AuditRepository } from './db/types.js';
import { ApiError } from './errors.js';

function wholeNumber(raw: string | undefined, flag: string): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d{1,10}$/.test(raw)) throw new InputError(`--${flag} ${JSON.stringify(raw)} must be a whole number`);
  return Number(raw);
}

/** A time filter's 400 as the flag it came from. */
function timeFlag(parse: () => string): string {
  try {
    return parse();
  } catch (error) {
    if (error instanceof ApiError) throw new InputError(`--${error.detail}`);
    throw error;
  }
}

export async function auditCommand(audit: AuditRepository, values: ParsedValues): Promise<string> {
  const input: AuditListQuery = checked<Record<string, unknown>>(AuditListQuery, {
    patientId: values.patient,
    documentId: values.document,
    clientId: values['client-id'],
    organizationId: values.organization?.[0],
    action: values.action,
    outcome: values.outcome,
    since: values.since,
    until: values.until,
    limit: wholeNumber(values.limit, 'limit'),
    offset: wholeNumber(values.offset, 'offset'),
  });
  timeFlag(() => JSON.stringify(auditQuery(input)));
  const page = await listAudit(audit, input);
  if (values.json) return page.entries.map((entry) => JSON.stringify(entry)).join('\n');
  if (page.entries.length === 0) return page.total === 0 ? 'no audit entries match' : `no audit entries on this page (${page.total} match; lower --offset)`;
  const more = page.offset + page.entries.length < page.total ? `; --offset ${page.offset + page.entries.length} for the next ones` : '';
  return [`${page.entries.length} of ${page.total} audit entries, newest first${more}:`, ...page.entries.map(auditLine)].join('\n');
}

export async function pruneCommand(audit: AuditRepository, raw: string): Promise<string> {
  const before = timeFlag(() => parseAuditTime('before', raw));
  if (Date.parse(before) > Date.now()) throw new InputError(`--before ${JSON.stringify(raw)} is in the future; entries of accesses that already happened are not removed by a date to come`);
  const removed = await audit.prune(before);
  return `removed ${removed} audit ${removed === 1 ? 'entry' : 'entries'} recorded before ${before}; ${await audit.count()} remain`;
}
