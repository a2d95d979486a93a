/** `audit` and `audit prune` of the admin CLI (loaded by those commands only: their filters' schema loads typebox). */
import type { ParsedValues } from './cli-common.js';
import { InputError } from './cli-common.js';
import { checked } from './check.js';
import { AUDIT_MAX_LIMIT, auditLine, auditQuery, listAudit, parseAuditTime } from '../audit/query-rules.js';
import type { AuditListQuery } from '../audit/query.js';
import { AUDIT_ACTIONS, AUDIT_OUTCOMES, type AuditRepository } from '../db/types.js';
import { ApiError } from '../errors.js';

const UUID = { type: 'string', format: 'uuid' } as const;
const TIME = { type: 'string', maxLength: 40 } as const;

/**
 * The admin API's audit filters (AuditListQuery, audit/query.ts) as a plain JSON schema, so the
 * flags are checked by the same rules without loading typebox and the schemas made with it;
 * admin-audit.test.ts keeps the two the same.
 */
export const AUDIT_FLAGS_SCHEMA = {
  type: 'object',
  properties: {
    patientId: UUID,
    documentId: UUID,
    clientId: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,128}$' },
    organizationId: UUID,
    action: { type: 'string', enum: [...AUDIT_ACTIONS] },
    outcome: { type: 'string', enum: [...AUDIT_OUTCOMES] },
    since: TIME,
    until: TIME,
    offset: { type: 'integer', minimum: 0, maximum: 2_147_483_647 },
    limit: { type: 'integer', minimum: 1, maximum: AUDIT_MAX_LIMIT },
  },
  additionalProperties: false,
} as const;

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
  const input: AuditListQuery = checked<Record<string, unknown>>(AUDIT_FLAGS_SCHEMA, {
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
