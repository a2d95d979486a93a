/**
 * The audit log's filters, time rules and paging (query.ts holds their schemas), apart from the
 * schemas so the admin CLI's `audit` runs without loading typebox.
 */
import { AUDIT_STATUS_NOT_HTTP, type AuditQuery, type AuditRepository, type StoredAuditEntry } from '../db/types.js';
import { badRequest } from '../errors.js';
import type { AuditListQuery } from './query.js';

export const AUDIT_MAX_LIMIT = 1000;
const AUDIT_DEFAULT_LIMIT = 100;

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
  // A mark of the admin CLI answered no HTTP request and was made by no client: it says neither.
  const http = entry.status !== AUDIT_STATUS_NOT_HTTP;
  const parts = [
    entry.at,
    http ? `${entry.outcome.toUpperCase()} ${entry.status}` : entry.outcome.toUpperCase(),
    entry.action,
    http || entry.clientId !== null ? `client ${entry.clientId ?? '(unknown)'}` : 'no client',
    `org ${entry.organizationId ?? '-'}`,
    `patient ${entry.patientId ?? '-'}`,
  ];
  if (entry.documentId) parts.push(`document ${entry.documentId}${entry.version !== null ? ` v${entry.version}` : ''}`);
  parts.push(`from ${entry.remoteAddress ?? '-'}`, `request ${entry.requestId}`);
  const detail = entry.detail ? Object.entries(entry.detail).map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`) : [];
  return `${parts.join('  ')}${detail.length > 0 ? `  — ${detail.join('; ')}` : ''}`;
}
