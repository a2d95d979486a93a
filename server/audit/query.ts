/**
 * Reading the audit log: the admin API's query and answer (GET /admin/v1/audit) and the CLI's
 * `audit` command share the filters, the time rules and the paging here.
 */
import { Type, type Static } from '#typebox';
import { ClientId, literalUnion, PAGE_FIELDS, Uuid } from '../../shared/schemas.js';
import { AUDIT_ACTIONS, AUDIT_OUTCOMES } from '../db/types.js';
import { AUDIT_MAX_LIMIT } from './query-rules.js';

export { AUDIT_MAX_LIMIT, auditLine, auditQuery, listAudit, parseAuditTime } from './query-rules.js';

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
    action: Type.Optional(literalUnion(AUDIT_ACTIONS as readonly ['list-patients', 'search', 'read', 'versions', 'create', 'upload', 'download', 'thumbnail', 'delete', 'mark-lost', 'mark-restored'])),
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
  action: Type.String({
    description:
      'list-patients, search, read, versions, create, upload, download, thumbnail, delete (HTTP requests); mark-lost, mark-restored (the admin CLI declared a version’s stored file lost, or back intact: `verify --mark-lost`, `verify --mark-restored`)',
  }),
  outcome: Type.String({ description: 'allowed, refused (4xx) or failed (5xx, or the connection closed before an answer: status 499); a mark is always allowed (recorded once done)' }),
  status: Type.Integer({ description: 'the HTTP status answered; 0 for a mark (no HTTP request)' }),
  organizationId: Type.Union([Type.String(), Type.Null()]),
  clientId: Type.Union([Type.String(), Type.Null()], { description: 'null when unknown (no valid token; a link signed before the audit log), and for a mark (the admin CLI: `detail.by`, `detail.osUser`)' }),
  patientId: Type.Union([Type.String(), Type.Null()]),
  documentId: Type.Union([Type.String(), Type.Null()]),
  version: Type.Union([Type.Integer(), Type.Null()]),
  requestId: Type.String({ description: 'as in the server log; for a mark, the CLI run’s id, shared by its entries and by its webhook events’ operationId' }),
  remoteAddress: Type.Union([Type.String(), Type.Null()]),
  detail: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    description:
      'a few facts of the access; for a mark: by, osUser (the account that ran the CLI, when known), fileSize and sha256 (as recorded), current (the document itself lost, or has again, this content; false: an earlier version), and for mark-lost found (missing, other bytes) and reason',
  }),
});

export const AuditListResponse = Type.Object({ entries: Type.Array(AuditEntrySchema), ...PAGE_FIELDS });
export type AuditListResponse = Static<typeof AuditListResponse>;
