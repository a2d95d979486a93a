/**
 * Reading the audit log: the admin API's query and answer (GET /admin/v1/audit) and the CLI's
 * `audit` command share the filters, the time rules and the paging here.
 */
import { Type, type Static } from 'typebox';
import { ClientId, literalUnion, Uuid } from '../../shared/schemas.js';
import { AUDIT_ACTIONS, AUDIT_OUTCOMES, type AuditQuery, type AuditRepository, type StoredAuditEntry } from '../db/types.js';
import { badRequest } from '../errors.js';

export const AUDIT_MAX_LIMIT = 1000;
const AUDIT_DEFAULT_LIMIT = 100;

const TimeText = Type.String({
  maxLength: 40,
  description: 'a date (2026-11-21: midnight at the server, or for `until` the end of that day) or a date and time (2026-11-21T09:30:00Z; without a zone, the server’s time)',
});

/** Unknown keys are refused: a mistyped filter must not quietly list every patient's entries. */
export const AuditListQuery = Type.Object(
  {
    patientId: Type.Optional(Uuid),
    documentId: Type.Optional(Uuid),
    clientId: Type.Optional(ClientId),
    organizationId: Type.Optional(Uuid),
    action: Type.Optional(literalUnion(AUDIT_ACTIONS as readonly ['list-patients', 'search', 'read', 'versions', 'create', 'upload', 'download', 'thumbnail', 'delete'])),
    outcome: Type.Optional(literalUnion(AUDIT_OUTCOMES as readonly ['allowed', 'refused', 'failed'])),
    since: Type.Optional(TimeText),
    until: Type.Optional(TimeText),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: AUDIT_MAX_LIMIT })),
  },
  { additionalProperties: false },
);
export type AuditListQuery = Static<typeof AuditListQuery>;

export const AuditEntrySchema = Type.Object({
  id: Type.Integer(),
  at: Type.String({ description: 'server time, ISO 8601 UTC' }),
  action: Type.String(),
  outcome: Type.String({ description: 'allowed, refused (4xx) or failed (5xx, or the connection closed before an answer: status 499)' }),
  status: Type.Integer(),
  organizationId: Type.Union([Type.String(), Type.Null()]),
  clientId: Type.Union([Type.String(), Type.Null()], { description: 'null when unknown (no valid token; a link signed before the audit log)' }),
  patientId: Type.Union([Type.String(), Type.Null()]),
  documentId: Type.Union([Type.String(), Type.Null()]),
  version: Type.Union([Type.Integer(), Type.Null()]),
  requestId: Type.String(),
  remoteAddress: Type.Union([Type.String(), Type.Null()]),
  detail: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
});

export const AuditListResponse = Type.Object({
  entries: Type.Array(AuditEntrySchema),
  offset: Type.Integer(),
  limit: Type.Integer(),
  total: Type.Integer(),
});
export type AuditListResponse = Static<typeof AuditListResponse>;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * A time filter as stored (ISO 8601 UTC). A date alone is midnight at the server's time zone, or
 * with `endOfDay` the midnight after it (so `until 2026-11-30` includes the 30th). Throws a 400
 * naming `field` for anything else, or for a day the calendar does not have.
 */
export function parseAuditTime(field: string, raw: string, endOfDay = false): string {
  const text = raw.trim();
  const date = DATE.exec(text);
  if (date) {
    const [year, month, day] = [Number(date[1]), Number(date[2]), Number(date[3])];
    const local = new Date(year, month - 1, day);
    if (local.getFullYear() !== year || local.getMonth() !== month - 1 || local.getDate() !== day) throw badRequest(`${field} ${JSON.stringify(raw)} is not a day of the calendar`);
    if (endOfDay) local.setDate(local.getDate() + 1);
    return local.toISOString();
  }
  const match = DATE_TIME.exec(text);
  const parsed = match ? new Date(text.replace(' ', 'T')) : undefined;
  if (!match || !parsed || Number.isNaN(parsed.getTime())) {
    throw badRequest(`${field} ${JSON.stringify(raw.slice(0, 40))} must be a date (2026-11-21) or a date and time (2026-11-21T09:30:00Z)`);
  }
  const [month, day, hour, minute, second] = [Number(match[2]), Number(match[3]), Number(match[4]), Number(match[5]), Number(match[6] ?? 0)];
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) {
    throw badRequest(`${field} ${JSON.stringify(raw)} is not a time of the calendar`);
  }
  return parsed.toISOString();
}

/** The repository's query for the API's (or the CLI's) filters; 400 for times that make no sense. */
export function auditQuery(input: AuditListQuery): AuditQuery {
  const query: AuditQuery = { offset: input.offset ?? 0, limit: input.limit ?? AUDIT_DEFAULT_LIMIT };
  if (input.patientId !== undefined) query.patientId = input.patientId.toLowerCase();
  if (input.documentId !== undefined) query.documentId = input.documentId.toLowerCase();
  if (input.organizationId !== undefined) query.organizationId = input.organizationId.toLowerCase();
  if (input.clientId !== undefined) query.clientId = input.clientId;
  if (input.action !== undefined) query.action = input.action;
  if (input.outcome !== undefined) query.outcome = input.outcome;
  if (input.since !== undefined) query.since = parseAuditTime('since', input.since);
  if (input.until !== undefined) query.until = parseAuditTime('until', input.until, true);
  if (query.since !== undefined && query.until !== undefined && query.since >= query.until) {
    throw badRequest(`since (${query.since}) must be before until (${query.until})`);
  }
  return query;
}

export async function listAudit(repository: AuditRepository, input: AuditListQuery): Promise<{ entries: StoredAuditEntry[]; offset: number; limit: number; total: number }> {
  const query = auditQuery(input);
  const page = await repository.search(query);
  return { entries: page.rows, offset: query.offset, limit: query.limit, total: page.total };
}

/**
 * One entry as a line a person reads (the CLI):
 * `2026-11-21T09:30:00.123Z  REFUSED 403  download  client scanner-pc-1  org 0b7c…  patient 5f0e…  document 0190… v2  from 10.0.0.7  — reason: …`
 */
export function auditLine(entry: StoredAuditEntry): string {
  const parts = [
    entry.at,
    `${entry.outcome.toUpperCase()} ${entry.status}`,
    entry.action,
    `client ${entry.clientId ?? '(unknown)'}`,
    `org ${entry.organizationId ?? '-'}`,
    `patient ${entry.patientId ?? '-'}`,
  ];
  if (entry.documentId) parts.push(`document ${entry.documentId}${entry.version !== null ? ` v${entry.version}` : ''}`);
  parts.push(`from ${entry.remoteAddress ?? '-'}`, `request ${entry.requestId}`);
  const detail = entry.detail ? Object.entries(entry.detail).map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`) : [];
  return `${parts.join('  ')}${detail.length > 0 ? `  — ${detail.join('; ')}` : ''}`;
}
