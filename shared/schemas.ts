/**
 * Wire schemas: the single source of truth for request validation, response serialization,
 * the OpenAPI document, the sync engine's API client and the tests.
 */
import { Type, type Static } from '#typebox';
import { SEARCH_DEFAULTS } from './search-defaults.js';
import { IDENTIFIER_SYSTEM_MAX, IDENTIFIER_VALUE_MAX, IDENTIFIERS_PER_PATIENT_MAX } from './patient-identifiers.js';

/** A union of string literals that keeps its static type (a mapped array would widen it). */
export function literalUnion<const T extends readonly string[]>(values: T) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values] });
}

export const Uuid = Type.String({ format: 'uuid', description: 'UUID' });
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC, e.g. 2026-11-21T09:30:00.000Z' });
/**
 * Nullable scalars as JSON-Schema type arrays, not anyOf unions: the response serializer writes
 * a type array directly, while an anyOf makes it validate every value to pick a branch.
 */
function Nullable<T extends 'string' | 'integer'>(type: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T extends 'string' ? string | null : number | null>({ type: [type, 'null'], ...options });
}
const NullableString = Nullable('string');

export const SORT_FIELDS = ['lastModifiedAt', 'fileName', 'fileSize', 'fileType', 'path', 'scannedAt'] as const;
export type SortField = (typeof SORT_FIELDS)[number];
export { SEARCH_DEFAULTS };
export const MAX_SEARCH_IDS = 30;

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    instance: Type.String(),
    messageKey: Type.String(),
    occurredAt: Type.String(),
    requestId: Type.Optional(Type.String()),
  },
  { $id: 'Problem', description: 'Problem details (SPEC §7)' },
);

export const DocumentSchema = Type.Object(
  {
    id: Uuid,
    storageUrl: Type.String({ description: 'Base of the storage endpoint; upload to {storageUrl}/file' }),
    fileName: Type.String(),
    fileType: Type.String(),
    path: Type.String(),
    lastModifiedAt: Timestamp,
    createdAt: Timestamp,
    hasContent: Type.Boolean(),
    fileSize: Nullable('integer', { description: 'Bytes; null before content exists' }),
    sha256: Nullable('string', { description: 'Lowercase hex SHA-256 of the current content' }),
    version: Type.Integer({ description: 'Content version; 0 before the first upload' }),
    storageDownloadUri: NullableString,
    thumbnailDownloadUri: NullableString,
    // An extension (docs/api.md "Scan times"). Nullable and always present, as the links are.
    scannedAt: Nullable('string', {
      format: 'date-time',
      description: "When the file was made (its modification time on the scanner PC), as the client said on create or upload; null when no client said",
    }),
  },
  { $id: 'Document' },
);
export type DocumentDto = Static<typeof DocumentSchema>;

export const PatientParams = Type.Object({ patientId: Uuid });
export const DocumentParams = Type.Object({ patientId: Uuid, documentId: Uuid });
export const OrganizationHeaders = Type.Object({ 'organization-id': Uuid });
export const OrganizationParams = Type.Object({ organizationId: Uuid });
/** GET /v1/organizations/{organizationId}: what a client of the organization may know of it. */
export const OrganizationSummarySchema = Type.Object({ id: Uuid, name: Type.String() });
export type OrganizationSummaryDto = Static<typeof OrganizationSummarySchema>;

/** A scan time a client sends: ISO 8601 with a time zone (stored as UTC). */
export const ScanTime = Type.String({
  format: 'date-time',
  maxLength: 64,
  description: 'When the file was made (its modification time), ISO 8601 with a time zone, e.g. 2026-11-20T16:45:00Z',
});

export const CreateDocumentBody = Type.Object({
  fileName: Type.String({ maxLength: 4096, description: 'Not blank; 1–255 characters after NFC' }),
  path: Type.Optional(Type.String({ maxLength: 8192, description: "Folder path beginning with '/'; default '/'" })),
  fileType: Type.Optional(Type.String({ pattern: '^[A-Z0-9]{1,16}$', description: 'Uppercase type; default from the extension' })),
  scannedAt: Type.Optional(ScanTime),
});
export type CreateDocumentBody = Static<typeof CreateDocumentBody>;

export const CreateDocumentResponse = Type.Object({
  id: Uuid,
  storageUrl: Type.String(),
  path: Type.String(),
  fileName: Type.String(),
  fileType: Type.String(),
});
export type CreateDocumentResponse = Static<typeof CreateDocumentResponse>;

export const SearchBody = Type.Object({
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: SEARCH_DEFAULTS.maxLimit })),
  path: Type.Optional(Type.String({ maxLength: 8192 })),
  hasContent: Type.Optional(Type.Boolean()),
  fileName: Type.Optional(Type.String({ maxLength: 1024 })),
  // An empty type would match no document at all: refused rather than answered with an empty page.
  fileType: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  id: Type.Optional(Type.Array(Uuid, { maxItems: MAX_SEARCH_IDS })),
  sortBy: Type.Optional(literalUnion(SORT_FIELDS)),
  sortDirection: Type.Optional(literalUnion(['ASC', 'DESC'] as const)),
  // Extensions: the scan date range, inclusive from, exclusive to (docs/api.md "Scan times").
  scannedFrom: Type.Optional(ScanTime),
  scannedTo: Type.Optional(ScanTime),
});
export type SearchBody = Static<typeof SearchBody>;

/** Where a page of a list starts, how long it may be, and how many items the whole list holds: every list answer carries them beside its items. */
export const PAGE_FIELDS = { offset: Type.Integer(), limit: Type.Integer(), total: Type.Integer() };

export const SearchResponse = Type.Object({ documents: Type.Array(DocumentSchema), ...PAGE_FIELDS });
export type SearchResponse = Static<typeof SearchResponse>;

export const DocumentVersionSchema = Type.Object(
  {
    version: Type.Integer(),
    current: Type.Boolean({ description: 'Whether this is the content the document serves now' }),
    fileType: Type.String(),
    fileSize: Type.Integer({ description: 'Bytes' }),
    sha256: Type.String(),
    originalFileName: Type.Union([Type.String(), Type.Null()], { description: 'FileName of the upload form' }),
    uploadedAt: Timestamp,
    uploadedBy: Type.String({ description: 'Client id' }),
    scannedAt: Nullable('string', { format: 'date-time', description: "When the file of this version was made: what its upload said, else the document's scan time then; null when no client said" }),
    thumbnailStatus: Type.Union([Type.Literal('none'), Type.Literal('pending'), Type.Literal('ready'), Type.Literal('failed')]),
    storageDownloadUri: Nullable('string', {
      description: 'Signed link to this version, 15 minutes; null while its stored file is marked lost (contentLostAt)',
    }),
    // Nullable and always present, as the Document's storageDownloadUri is before content exists: a
    // client reads one field the same way everywhere, and the OpenAPI document lists it as required.
    contentLostAt: Nullable('string', {
      format: 'date-time',
      description:
        "When the server's stored file of this version was marked lost by its administrator (verify --mark-lost; no download link then); " +
        'null when it is stored, or since it was restored from a backup (verify --mark-restored)',
    }),
  },
  { $id: 'DocumentVersion' },
);
export type DocumentVersionDto = Static<typeof DocumentVersionSchema>;
export const DocumentVersionsResponse = Type.Object({ versions: Type.Array(DocumentVersionSchema) });

/** An identifier of a patient (shared/patient-identifiers.ts): unique per organization and system. */
export const PatientIdentifierSchema = Type.Object(
  {
    system: Type.String({ minLength: 1, maxLength: IDENTIFIER_SYSTEM_MAX, format: 'identifier-system', description: 'What the value identifies in, e.g. "chart" (the chart number); no "|"' }),
    value: Type.String({ minLength: 1, maxLength: IDENTIFIER_VALUE_MAX, format: 'identifier-value', description: 'e.g. "10231"' }),
  },
  { additionalProperties: false },
);
export const PatientIdentifiers = Type.Array(PatientIdentifierSchema, { maxItems: IDENTIFIERS_PER_PATIENT_MAX, description: 'Unique per organization and system; a (system, value) at most once per patient' });
export const BirthDate = Type.String({ format: 'birth-date', maxLength: 10, description: 'YYYY-MM-DD, a real date from 1850-01-01 to today' });

export const PatientSchema = Type.Object({
  id: Uuid,
  name: Type.String(),
  identifiers: Type.Array(PatientIdentifierSchema),
  birthDate: Nullable('string', { description: 'YYYY-MM-DD; null when not known' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type PatientDto = Static<typeof PatientSchema>;

/** Filters of GET /v1/patients (and the admin API's list), all optional, combined with AND. */
export const PatientListQuery = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 256, description: 'Every word, in any order, ignoring case, accents and punctuation' })),
  identifier: Type.Optional(
    Type.String({ maxLength: IDENTIFIER_SYSTEM_MAX * 4 + IDENTIFIER_VALUE_MAX * 4 + 1, format: 'identifier-filter', description: 'system|value, exact (e.g. chart|10231); given at most once' }),
  ),
  birthDate: Type.Optional(Type.String({ maxLength: 10, format: 'birth-date', description: 'YYYY-MM-DD, exact' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: SEARCH_DEFAULTS.maxLimit })),
});
export const PatientListResponse = Type.Object({ patients: Type.Array(PatientSchema), ...PAGE_FIELDS });
export type PatientListResponse = Static<typeof PatientListResponse>;

export const TokenResponse = Type.Object({
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  access_token: Type.String(),
  scope: Type.String(),
});
export type TokenResponse = Static<typeof TokenResponse>;

export const OAuthError = Type.Object({
  error: Type.String(),
  error_description: Type.Optional(Type.String()),
});

// --- Webhooks ------------------------------------------------------------------------------

export const SubscribeBody = Type.Object({
  events: Type.Array(Type.String({ maxLength: 64 }), { minItems: 1, maxItems: 32 }),
  callback: Type.String({ maxLength: 2048 }),
  hmac: Type.String({ minLength: 1, maxLength: 1024 }),
});
export type SubscribeBody = Static<typeof SubscribeBody>;

export const SubscriptionSchema = Type.Object({
  id: Uuid,
  events: Type.Array(Type.String()),
  callback: Type.String(),
  organizationId: Uuid,
  createdAt: Timestamp,
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled')]),
  disabledReason: Type.Optional(Type.String({ description: 'Why the subscription stopped, e.g. the callback answered 410 Gone' })),
});
export type SubscriptionDto = Static<typeof SubscriptionSchema>;

export const WebhookParams = Type.Object({ id: Uuid });
export const DeadLetterParams = Type.Object({ id: Uuid, messageId: Uuid });
export const WebhookPageQuery = Type.Object({
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: SEARCH_DEFAULTS.maxLimit })),
});

export const DeliveryAttemptSchema = Type.Object({
  messageId: Uuid,
  attempt: Type.Integer({ description: '1 for the first attempt' }),
  attemptedAt: Timestamp,
  statusCode: Type.Union([Type.Integer(), Type.Null()], { description: 'null when no HTTP answer came (refused, network error, time-out)' }),
  latencyMs: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()]),
  outcome: Type.Union([Type.Literal('delivered'), Type.Literal('retry'), Type.Literal('dead'), Type.Literal('gone')]),
});
export type DeliveryAttemptDto = Static<typeof DeliveryAttemptSchema>;
export const DeliveryLogResponse = Type.Object({ attempts: Type.Array(DeliveryAttemptSchema), ...PAGE_FIELDS });

export const DeadLetterSchema = Type.Object({
  messageId: Uuid,
  eventType: Type.String(),
  patientId: Type.Union([Uuid, Type.Null()]),
  attempts: Type.Integer(),
  lastStatus: Type.Union([Type.Integer(), Type.Null()]),
  lastError: Type.Union([Type.String(), Type.Null()]),
  createdAt: Timestamp,
  deadAt: Timestamp,
});
export type DeadLetterDto = Static<typeof DeadLetterSchema>;
export const DeadLetterListResponse = Type.Object({ messages: Type.Array(DeadLetterSchema), ...PAGE_FIELDS });

export const WebhookMetricsSchema = Type.Object({
  queued: Type.Integer({ description: 'Messages waiting for an attempt or in one' }),
  delivered: Type.Integer(),
  dead: Type.Integer({ description: 'In the dead-letter queue' }),
  cancelled: Type.Integer({ description: 'Stopped: consent withdrawn, subscription deleted or gone (410)' }),
  failed: Type.Integer({ description: 'Failed attempts, each retry counted' }),
});
export type WebhookMetricsDto = Static<typeof WebhookMetricsSchema>;

// --- Admin ---------------------------------------------------------------------------------

/** The name of a patient, an organization or a client (shared/names.ts `isDisplayName`). */
export const DisplayName = Type.String({ minLength: 1, maxLength: 256, format: 'display-name', description: 'Not blank; no control or bidirectional control characters' });

/**
 * Admin bodies take no unknown keys: a typo such as "consent" would otherwise create a patient
 * without consent, silently.
 */
const strict = { additionalProperties: false } as const;

export const AdminOrganizationBody = Type.Object({ id: Type.Optional(Uuid), name: DisplayName }, strict);
export const OrganizationSchema = Type.Object({ id: Uuid, name: Type.String(), createdAt: Timestamp });
export type OrganizationDto = Static<typeof OrganizationSchema>;

export const AdminPatientBody = Type.Object({
  id: Type.Optional(Uuid),
  name: DisplayName,
  organizations: Type.Optional(Type.Array(Uuid, { maxItems: 1000 })),
  consents: Type.Optional(Type.Array(Uuid, { maxItems: 1000 })),
  identifiers: Type.Optional(PatientIdentifiers),
  birthDate: Type.Optional(BirthDate),
}, strict);
/** Changes to a patient: `identifiers` replaces the whole list (`[]` removes them); `birthDate: null` removes it. */
export const AdminPatientPatch = Type.Object({
  name: Type.Optional(DisplayName),
  organizations: Type.Optional(Type.Array(Uuid, { maxItems: 1000 })),
  consents: Type.Optional(Type.Array(Uuid, { maxItems: 1000 })),
  identifiers: Type.Optional(PatientIdentifiers),
  birthDate: Type.Optional(Type.Union([BirthDate, Type.Null()])),
}, strict);
export const AdminPatientSchema = Type.Object({
  id: Uuid,
  name: Type.String(),
  organizations: Type.Array(Uuid),
  consents: Type.Array(Uuid),
  identifiers: Type.Array(PatientIdentifierSchema),
  birthDate: Nullable('string', { description: 'YYYY-MM-DD; null when not known' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type AdminPatientDto = Static<typeof AdminPatientSchema>;
/** Every patient, whatever organization may see them (the admin API: IT finds a patient by name). */
export const AdminPatientList = Type.Object({ patients: Type.Array(AdminPatientSchema), ...PAGE_FIELDS });

export const SCOPES = ['Patient.File.Read', 'Patient.File.Write', 'Patient.Read', 'Webhook.Manage'] as const;
export type Scope = (typeof SCOPES)[number];

export const ClientId = Type.String({ pattern: '^[A-Za-z0-9._-]{1,128}$' });
export const ClientSecret = Type.String({ minLength: 16, maxLength: 512 });
export const AdminClientBody = Type.Object({
  clientId: Type.Optional(ClientId),
  clientSecret: Type.Optional(ClientSecret),
  name: DisplayName,
  scopes: Type.Array(literalUnion(SCOPES), { maxItems: 16 }),
  organizations: Type.Array(Uuid, { maxItems: 1000 }),
}, strict);
/** Changes to a client; `disabled: true` refuses its token requests and, within seconds, its tokens. */
export const AdminClientPatch = Type.Object(
  {
    name: Type.Optional(DisplayName),
    scopes: Type.Optional(Type.Array(literalUnion(SCOPES), { maxItems: 16 })),
    organizations: Type.Optional(Type.Array(Uuid, { maxItems: 1000 })),
    disabled: Type.Optional(Type.Boolean()),
  },
  strict,
);
/** A new secret for a client (generated when left out); the old one stops working at once. */
export const AdminClientSecretBody = Type.Object({ clientSecret: Type.Optional(ClientSecret) }, strict);
export const AdminClientSchema = Type.Object({
  clientId: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  organizations: Type.Array(Uuid),
  createdAt: Timestamp,
  disabledAt: Type.Union([Timestamp, Type.Null()]),
  clientSecret: Type.Optional(Type.String({ description: 'Shown once, at creation' })),
});
export type AdminClientDto = Static<typeof AdminClientSchema>;

export const ORDER_STATUS_PATTERN = '^[A-Za-z0-9_.-]{1,64}$';
export const AdminOrderBody = Type.Object({ patientId: Uuid, organizationId: Uuid, status: Type.String({ pattern: ORDER_STATUS_PATTERN }) }, strict);
export const AdminOrderPatch = Type.Object({ status: Type.String({ pattern: ORDER_STATUS_PATTERN }) }, strict);
export const OrderSchema = Type.Object({
  id: Uuid,
  patientId: Uuid,
  organizationId: Uuid,
  status: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type OrderDto = Static<typeof OrderSchema>;

/**
 * The seed file (DESIGN §2): each entry is checked by the admin API's own body schema, with the id
 * required and no unknown keys. A client's name may be left out: it is then its clientId.
 */
export const SeedOrganization = Type.Object({ ...AdminOrganizationBody.properties, id: Uuid }, strict);
export const SeedPatient = Type.Object({ ...AdminPatientBody.properties, id: Uuid }, strict);
export const SeedClient = Type.Object({ ...AdminClientBody.properties, clientId: ClientId, clientSecret: ClientSecret, name: Type.Optional(DisplayName) }, strict);
export const SeedFile = Type.Object(
  {
    organizations: Type.Optional(Type.Array(SeedOrganization)),
    patients: Type.Optional(Type.Array(SeedPatient)),
    clients: Type.Optional(Type.Array(SeedClient)),
  },
  strict,
);
export type SeedOrganization = Static<typeof SeedOrganization>;
export type SeedPatient = Static<typeof SeedPatient>;
export type SeedClient = Static<typeof SeedClient>;
export type SeedFile = Static<typeof SeedFile>;
