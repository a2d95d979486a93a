/**
 * The records the server keeps and the repository interface between routes and storage.
 * Every method that changes state takes the outbox events it causes and writes both in one
 * transaction, so a webhook is never lost and never sent for a change that did not happen.
 * Methods are async so that a PostgreSQL implementation fits without touching routes.
 */
import type { TokenAttemptLimiter, TokenLimits } from '../identity/rate-limit.js';
import type { EventType } from '../../shared/events.js';
import type { PatientIdentifier } from '../../shared/patient-identifiers.js';
import type { SortField } from '../../shared/schemas.js';

export interface OrganizationRecord {
  id: string;
  name: string;
  createdAt: string;
}

export interface PatientRecord {
  id: string;
  name: string;
  organizations: string[];
  consents: string[];
  /** In the order given; (system, value) unique per organization of `organizations` (IdentifierTakenError). */
  identifiers: PatientIdentifier[];
  /** YYYY-MM-DD, or null when not known. */
  birthDate: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ClientRecord {
  clientId: string;
  name: string;
  secretHash: string;
  scopes: string[];
  organizations: string[];
  createdAt: string;
  disabledAt: string | null;
}

export interface DocumentRecord {
  id: string;
  patientId: string;
  organizationId: string;
  fileName: string;
  fileType: string;
  path: string;
  createdAt: string;
  lastModifiedAt: string;
  hasContent: boolean;
  fileSize: number | null;
  sha256: string | null;
  version: number;
  contentKey: string | null;
  contentType: string | null;
  /** The current version's thumbnail: null while there is none yet, NO_THUMBNAIL when its render failed. */
  thumbnailKey: string | null;
  createdBy: string;
  /**
   * When the file was made (its mtime on the scanner PC, ISO 8601 UTC), as the create or the latest
   * upload said; null (or absent in a record being written) when no client said.
   */
  scannedAt?: string | null;
}

/**
 * A document as a search page lists it: the fields its DTO shows (and the thumbnail key that says
 * whether it has a thumbnail link). A search reads only these: reading and building the other
 * columns cost an uncached page of fifty about 6% of its main-thread instructions.
 */
export type DocumentListing = Pick<
  DocumentRecord,
  'id' | 'fileName' | 'fileType' | 'path' | 'createdAt' | 'lastModifiedAt' | 'hasContent' | 'fileSize' | 'sha256' | 'version' | 'thumbnailKey' | 'scannedAt'
>;

/** DocumentRecord.thumbnailKey of a version whose thumbnail could not be rendered. */
export const NO_THUMBNAIL = '';

export interface OrderRecord {
  id: string;
  patientId: string;
  organizationId: string;
  status: string;
  createdAt: string;
  updatedAt: string;
}

export interface OutboxEvent {
  id: string;
  eventType: EventType;
  patientId: string | null;
  /** The organization whose action caused the event, when there is one. */
  organizationId: string | null;
  operationId: string;
  occurredAt: string;
  data: Record<string, unknown>;
}

/** An outbox event as routed: which event, of what kind, about whom, caused by whom. */
export type OutboxEventHead = Pick<OutboxEvent, 'id' | 'eventType' | 'patientId' | 'organizationId'> & { sequence: number };

export interface SigningKeyRecord {
  kid: string;
  privateJwk: string;
  publicJwk: string;
  createdAt: string;
  retiredAt: string | null;
}

export interface PatientAccess {
  exists: boolean;
  access: boolean;
  consent: boolean;
  /**
   * The patient's document change counter (DocumentRepository.changeCounter) read with the same
   * check: a search proves its cached page current without a read of its own.
   */
  documentChanges: number;
}

export interface DocumentQuery {
  patientId: string;
  ids?: string[];
  /** Folded (case-insensitive) folder path; the folder and all descendants. */
  pathKey?: string;
  hasContent?: boolean;
  /** Folded substring of the file name. */
  nameContains?: string;
  fileType?: string;
  /** Scan dates from (inclusive) and to (exclusive), ISO 8601 UTC; a document without a scan time counts by its lastModifiedAt. */
  scannedFrom?: string;
  scannedTo?: string;
  sortBy: SortField;
  sortDirection: 'ASC' | 'DESC';
  offset: number;
  limit: number;
}

export interface Page<T> {
  rows: T[];
  total: number;
}

export class DuplicateError extends Error {
  override name = 'DuplicateError';
}

/**
 * A patient's identifier is already another patient's in one of its organizations: the store
 * refuses the write (a unique index, so two writers at once cannot both win).
 */
export class IdentifierTakenError extends DuplicateError {
  override name = 'IdentifierTakenError';
}

/** What GET /v1/patients and the admin list filter by; every filter given must hold. */
export interface PatientFilter {
  /** Words of the name, in any order (shared/name-search.ts). */
  name?: string | undefined;
  /** Exact (system, value). */
  identifier?: PatientIdentifier | undefined;
  /** YYYY-MM-DD, exact. */
  birthDate?: string | undefined;
}

/** A patient holding an identifier in an organization (the owner IdentifierTakenError names). */
export interface IdentifierOwner {
  organizationId: string;
  identifier: PatientIdentifier;
  patientId: string;
}

export interface OrganizationRepository {
  upsert(organization: OrganizationRecord): Promise<'created' | 'updated' | 'unchanged'>;
  get(id: string): Promise<OrganizationRecord | undefined>;
  list(): Promise<OrganizationRecord[]>;
}

export interface PatientRepository {
  create(patient: PatientRecord, events: OutboxEvent[]): Promise<void>;
  get(id: string): Promise<PatientRecord | undefined>;
  update(patient: PatientRecord, events: OutboxEvent[]): Promise<void>;
  access(patientId: string, organizationId: string): Promise<PatientAccess>;
  /**
   * access() answered from memory when the implementation knows the answer is current (nothing
   * written since it was read), without I/O or a promise; undefined when it must be asked.
   */
  knownAccess?(patientId: string, organizationId: string): PatientAccess | undefined;
  /** Patients the organization has access to and consent from, by name, filtered. */
  listVisible(organizationId: string, filter: PatientFilter, offset: number, limit: number): Promise<Page<PatientRecord>>;
  /** Every patient, by name, filtered (the admin API and CLI). */
  list(filter: PatientFilter, offset: number, limit: number): Promise<Page<PatientRecord>>;
  /**
   * Other patients than `patientId` that hold one of these identifiers in one of these
   * organizations: the ones a write of the patient would clash with.
   */
  identifierOwners(patientId: string, organizations: readonly string[], identifiers: readonly PatientIdentifier[]): Promise<IdentifierOwner[]>;
}

export interface ClientRepository {
  create(client: ClientRecord): Promise<void>;
  get(clientId: string): Promise<ClientRecord | undefined>;
  update(client: ClientRecord): Promise<void>;
  list(): Promise<ClientRecord[]>;
}

/** Whether an organization may work with a patient's files: all three must hold (SPEC §5.3–5.4). */
export type PatientGrant = Pick<PatientAccess, 'exists' | 'access' | 'consent'>;

export interface DocumentRepository {
  /** Throws DuplicateError when (patient, path, fileName) exists, compared case-insensitively. */
  create(document: DocumentRecord, events: OutboxEvent[]): Promise<void>;
  /**
   * create(), when the document's organization may write the patient's files (the patient exists,
   * the organization has access and the patient's consent), found with the insert rather than
   * asked for first: on PostgreSQL in the insert's own statement, one round trip for both. When it
   * may not, nothing is written (no document, no event) and the answer says what is missing.
   */
  createIfAllowed(document: DocumentRecord, events: OutboxEvent[]): Promise<PatientGrant>;
  get(patientId: string, id: string): Promise<DocumentRecord | undefined>;
  search(query: DocumentQuery): Promise<Page<DocumentListing>>;
  /**
   * A number that grows with every change to the patient's documents (create, content, thumbnail,
   * delete), kept in the database so every instance sees it: what a caller derived from a search
   * is still current while this number has not moved.
   */
  changeCounter(patientId: string): Promise<number>;
}

/** none: the type has no preview; pending: queued or rendering; ready; failed (the file's fault, kept for audit). */
export type ThumbnailStatus = 'none' | 'pending' | 'ready' | 'failed';

/** One committed content of a document; the history stays after replacement and deletion. */
export interface DocumentVersionRecord {
  documentId: string;
  version: number;
  fileType: string;
  /** FileName of the upload form, as the client sent it. */
  originalFileName: string | null;
  fileSize: number;
  sha256: string;
  contentKey: string;
  contentType: string;
  thumbnailKey: string | null;
  thumbnailStatus: ThumbnailStatus;
  thumbnailError: string | null;
  uploadedAt: string;
  uploadedBy: string;
  /** When its stored file was marked lost (admin `verify --mark-lost`); null while it is not (never, or restored since). */
  contentLostAt: string | null;
  /** When the file of this version was made: its upload's scannedAt, else the document's then; null (or absent) when none. */
  scannedAt?: string | null;
}

export interface DocumentContentRepository {
  /** By id alone (storage routes carry no patient); undefined when missing or deleted. */
  find(id: string): Promise<DocumentRecord | undefined>;
  /** Makes `version` current if the document is still at `expectedVersion` and not deleted; false otherwise. */
  commitVersion(version: DocumentVersionRecord, expectedVersion: number, events: OutboxEvent[]): Promise<boolean>;
  /** Newest first. */
  versions(documentId: string): Promise<DocumentVersionRecord[]>;
  version(documentId: string, version: number): Promise<DocumentVersionRecord | undefined>;
  setThumbnail(documentId: string, version: number, result: { status: ThumbnailStatus; key: string | null; error: string | null }): Promise<void>;
  pendingThumbnails(limit: number): Promise<DocumentVersionRecord[]>;
  /**
   * Counts a render of a pending thumbnail as started by process `by`, in one write before the render
   * starts: a render that takes its process down leaves the count behind, and the next process to
   * start it counts again (a process starting it once more, after a full disk, does not). Returns
   * how many processes have started it, this one included, or undefined when it is no longer
   * pending. `setThumbnail` sets the count back to none.
   */
  startThumbnailRender(documentId: string, version: number, by: string): Promise<number | undefined>;
  /** Removes the document from search (its versions stay); false when it does not exist. */
  remove(patientId: string, id: string, deletion: { at: string; by: string }, events: OutboxEvent[]): Promise<boolean>;
  /** Does any version name this storage key (content or thumbnail)? For garbage collection. */
  isKeyReferenced(key: string): Promise<boolean>;
  /**
   * Records that a version's stored file is lost, in one transaction: the version is marked, and
   * when it is still the document's current content (same version and key) the document goes back
   * to having none and `events` are written. Idempotent: `version`/`current` say what changed now.
   */
  markLost(lost: LostContent, events: OutboxEvent[], audit: MarkAudit): Promise<{ version: boolean; current: boolean }>;
  /**
   * Undoes `markLost` once the stored file is back intact (restored from a backup), in one
   * transaction: the version is no longer marked lost, and when it is still the document's version
   * and the document still has no content (nothing uploaded since, not deleted), the document has
   * this version's content again and `events` are written. A compare-and-set on the version, key
   * and sha256; idempotent: `version`/`current` say what changed now.
   */
  markRestored(restored: RestoredContent, events: OutboxEvent[], audit: MarkAudit): Promise<{ version: boolean; current: boolean }>;
}

/**
 * The audit entry of a mark (`mark-lost`, `mark-restored`), written in the mark's transaction when
 * it changed something, and only then: a mark never exists without its entry, and a run that
 * changes nothing writes none. The repository adds the document's patient and organization (also
 * of a deleted document) and `current` to the detail: whether the mark changed the document itself
 * (it lost, or has again, this content) or only an earlier version.
 */
export interface MarkAudit {
  at: string;
  /** The CLI run's id, shared by its entries and its events' operationId. */
  requestId: string;
  /** What the mark was about (the file's recorded size and sha256, what was found, who ran it); never secrets. */
  detail: Record<string, unknown>;
}

/** A version marked lost whose stored file verify found back intact (its recorded size and sha256). */
export interface RestorableFile {
  documentId: string;
  version: number;
  key: string;
  sha256: string;
  fileSize: number;
}

export interface RestoredContent {
  documentId: string;
  version: number;
  contentKey: string;
  /** The sha256 the file was found to have: it must still be the version's. */
  sha256: string;
}

export interface LostContent {
  documentId: string;
  version: number;
  contentKey: string;
  at: string;
  /** What was found (`the file is missing`, `the file has 10 of its 20 bytes`…). */
  reason: string;
}

export interface OrderRepository {
  create(order: OrderRecord, events: OutboxEvent[]): Promise<void>;
  get(id: string): Promise<OrderRecord | undefined>;
  update(order: OrderRecord, events: OutboxEvent[]): Promise<void>;
}

export interface OutboxRepository {
  /** Events in commit order after the given sequence number, whole (for audits and tests). */
  after(sequence: number, limit: number): Promise<Array<OutboxEvent & { sequence: number }>>;
  /** The same, without the event data: all that fan-out needs to route an event (the webhook dispatcher). */
  headsAfter(sequence: number, limit: number): Promise<OutboxEventHead[]>;
  /**
   * Calls the listener soon after this process commits events, so the dispatcher need not wait for
   * its next poll. Other writers (the admin CLI, other instances) are found by polling, or by
   * onNotified where the database tells.
   */
  onAppended(listener: () => void): () => void;
  /**
   * Where the database tells every instance of work another process committed (PostgreSQL
   * LISTEN/NOTIFY: events appended, messages queued or due again): calls the listener then, and
   * once after a lost notification connection is back (anything may have been missed meanwhile).
   * A hint, not a guarantee: the dispatcher still looks now and then (safetyPollMs).
   */
  onNotified?(listener: () => void): () => void;
}

export interface SigningKeyRepository {
  list(): Promise<SigningKeyRecord[]>;
  add(key: SigningKeyRecord): Promise<void>;
  retire(kid: string, at: string): Promise<void>;
  remove(kid: string): Promise<void>;
  /** Stores the key's private part in another form (wrapped with a new master key: identity/master-key.ts); an opaque string here. */
  replacePrivateJwk(kid: string, privateJwk: string): Promise<void>;
}

export interface MetaRepository {
  get(key: string): Promise<string | undefined>;
  /** Sets the value unless one exists; returns the stored value. */
  setIfAbsent(key: string, value: string): Promise<string>;
  /** Sets the value, replacing any (e.g. the hash of a seed entry as last applied). */
  set(key: string, value: string): Promise<void>;
}

export type WebhookSubscriptionStatus = 'active' | 'disabled';

export interface WebhookSubscriptionRecord {
  id: string;
  organizationId: string;
  clientId: string;
  events: string[];
  callback: string;
  /** The hmac, AES-256-GCM sealed (server/webhooks/secret-box.ts); never the plain value. */
  sealedSecret: string;
  status: WebhookSubscriptionStatus;
  disabledReason: string | null;
  createdAt: string;
  /** Events at or below this outbox sequence predate the subscription and never reach it. */
  fromSequence: number;
}

/** pending → delivering → delivered, or back to pending (retry), dead (retries exhausted) or cancelled. */
export type WebhookMessageState = 'pending' | 'delivering' | 'delivered' | 'dead' | 'cancelled';

export interface WebhookMessageRecord {
  id: string;
  subscriptionId: string;
  eventId: string;
  eventType: EventType;
  patientId: string | null;
  /**
   * The body sent, as stored by releases that fixed it at fan-out; null for messages queued since,
   * whose body is composed at each attempt from `event` (the same bytes every time).
   */
  body: string | null;
  /** The outbox event the message carries, as stored (read with due messages; null elsewhere or if pruned). */
  event: StoredEvent | null;
  state: WebhookMessageState;
  attempts: number;
  /** Epoch milliseconds. */
  nextAttemptAt: number;
  createdAt: string;
  updatedAt: string;
  lastStatus: number | null;
  lastError: string | null;
  /**
   * The per-attempt checks as the claim found them (where claimDue reads them in its own
   * statement: PostgreSQL, one round trip instead of three): the subscription's status (undefined:
   * deleted) and whether its organization has access to and consent from the patient.
   */
  claimChecks?: { status: WebhookSubscriptionRecord['status'] | undefined; routable: boolean };
}

/** An outbox event's fields a webhook body is made of, `data` as the JSON text stored with the change. */
export interface StoredEvent {
  occurredAt: string;
  operationId: string;
  dataJson: string;
}

export type NewWebhookMessage = Pick<WebhookMessageRecord, 'id' | 'subscriptionId' | 'eventId' | 'eventType' | 'patientId' | 'nextAttemptAt' | 'createdAt'>;

export interface WebhookAttemptRecord {
  messageId: string;
  subscriptionId: string;
  attempt: number;
  attemptedAt: string;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  outcome: 'delivered' | 'retry' | 'dead' | 'gone';
}

/** What an attempt leaves behind: the log row and the message's next state. */
export interface WebhookAttemptResult {
  attempt: WebhookAttemptRecord;
  state: Extract<WebhookMessageState, 'pending' | 'delivered' | 'dead' | 'cancelled'>;
  nextAttemptAt: number;
  /** A 410 disables the subscription and cancels its other pending messages. */
  disableSubscription?: string;
}

export interface WebhookCounts {
  /** Waiting for an attempt or in one (claims are held in memory, the row stays pending until the attempt is recorded). */
  queued: number;
  delivered: number;
  dead: number;
  cancelled: number;
  /** Failed attempts (each retry counts). */
  failed: number;
}

/**
 * What `webhooks prune` (and the automatic retention) removes: messages that ended before `before`
 * (their last change, `updatedAt`) with their attempts, and outbox events that occurred before it
 * and that nothing needs any more. Never a message still queued or in flight.
 */
export interface WebhookPruneOptions {
  /** ISO 8601 UTC, as stored. */
  before: string;
  /** Dead letters too; without it they stay for redelivery. */
  dead: boolean;
  /** Rows looked at per transaction (default WEBHOOK_PRUNE_BATCH): writers wait for one batch at most. */
  batch?: number;
  /** Aborted: the prune ends after the batch in progress (a server stopping), reporting what it removed. */
  signal?: AbortSignal;
}

export const WEBHOOK_PRUNE_BATCH = 500;

/** How many rows of each kind one prune removed. */
export interface WebhookPruneReport {
  delivered: number;
  cancelled: number;
  dead: number;
  attempts: number;
  /** Outbox events fanned out to every subscription, of which no queued or dead message is made. */
  events: number;
}

export interface WebhookRepository {
  /** Stores the subscription; its fromSequence is the outbox's current end. */
  createSubscription(subscription: Omit<WebhookSubscriptionRecord, 'fromSequence'>): Promise<WebhookSubscriptionRecord>;
  getSubscription(id: string): Promise<WebhookSubscriptionRecord | undefined>;
  /** Just the status (undefined once deleted): the check made before every attempt. */
  subscriptionStatus(id: string): Promise<WebhookSubscriptionRecord['status'] | undefined>;
  listSubscriptions(organizationId: string): Promise<WebhookSubscriptionRecord[]>;
  /** Active, not deleted; may be a shared snapshot, so callers never modify it. */
  activeSubscriptions(): Promise<readonly WebhookSubscriptionRecord[]>;
  /** Removes the subscription from listings and cancels its pending messages; the log stays. */
  deleteSubscription(id: string, at: string): Promise<boolean>;
  /** Outbox sequence up to which events have been fanned out. */
  cursor(): Promise<number>;
  /** Inserts messages (once per (event, subscription)) and advances the cursor in one transaction. */
  enqueue(messages: NewWebhookMessage[], cursor: number): Promise<void>;
  /** After a crash: messages that were mid-attempt become pending again (at-least-once). */
  recoverInterrupted(): Promise<number>;
  /**
   * Active subscriptions with messages due at `now`, with how many are due counted up to `cap`
   * (a hint for claiming, not a total: the cost stays bounded however long the queue).
   */
  dueSubscriptions(now: number, cap: number): Promise<Array<{ subscriptionId: string; due: number }>>;
  /**
   * Up to `limit` due messages of each subscription, leaving out those in `skip` (already held).
   * Their state stays pending: the one dispatcher of a database holds its claims in memory, so a
   * crash simply leaves them due again (at-least-once).
   */
  claimDue(claims: Array<{ subscriptionId: string; limit: number; skip: ReadonlySet<string> }>, now: number): Promise<WebhookMessageRecord[]>;
  /**
   * Where several dispatchers share the queue (PostgreSQL), a claim is a lease of this many
   * milliseconds: past it, another instance may take the message. Undefined where one dispatcher
   * holds its claims in memory (SQLite).
   */
  readonly claimLeaseMs?: number;
  /**
   * Where claims are leases: makes the claims of instances known to have ended due again at `now`
   * without waiting for their leases (their number, for the log). Called at start and now and then.
   */
  releaseAbandoned?(now: number): Promise<number>;
  /** Extends the leases of claimed messages that are still pending (waiting for a slot or in flight) by claimLeaseMs from `now`. */
  renewClaims?(messages: ReadonlyArray<{ subscriptionId: string; id: string }>, now: number): Promise<void>;
  /** Writes finished attempts (log rows and message states) in one transaction. */
  recordAttempts(results: WebhookAttemptResult[]): Promise<void>;
  /** Ends a message without an attempt (subscription gone, consent revoked). */
  cancel(subscriptionId: string, messageId: string, reason: string, at: string): Promise<void>;
  attempts(subscriptionId: string, offset: number, limit: number): Promise<Page<WebhookAttemptRecord>>;
  deadLetters(subscriptionId: string, offset: number, limit: number): Promise<Page<WebhookMessageRecord>>;
  /** A dead message becomes pending again with its messageId and body; false when it is not dead. */
  redeliver(subscriptionId: string, messageId: string, now: number, at: string): Promise<boolean>;
  counts(organizationId?: string): Promise<WebhookCounts>;
  /**
   * Removes ended messages, their attempts and the outbox events nothing needs any more (see
   * WebhookPruneOptions), in small transactions. Safe beside delivery and beside another prune:
   * each row is removed, and counted, once.
   */
  prune(options: WebhookPruneOptions): Promise<WebhookPruneReport>;
}

/**
 * The audit log (DESIGN §5): one entry per access to a patient's files, allowed or refused.
 * `search` and `versions` read a patient's document list; `read` one document's record; `create`
 * a placeholder; `upload` content (one-shot, or a resumable upload when it completes);
 * `download` and `thumbnail` go through signed links; `delete` removes a document from search.
 */
/**
 * `list-patients`: GET /v1/patients, which shows who is a patient of the clinic (names), no files.
 * `mark-lost` and `mark-restored` are not HTTP requests: IT's admin CLI (`verify --mark-lost`,
 * `verify --mark-restored`) declared a version's stored file lost, or back intact, which changes
 * what the patient's documents say. One entry per version marked, written in the mark's own
 * transaction (DocumentContentRepository.markLost/markRestored).
 */
export type AuditAction = 'list-patients' | 'search' | 'read' | 'versions' | 'create' | 'upload' | 'download' | 'thumbnail' | 'delete' | 'mark-lost' | 'mark-restored';
export const AUDIT_ACTIONS: readonly AuditAction[] = ['list-patients', 'search', 'read', 'versions', 'create', 'upload', 'download', 'thumbnail', 'delete', 'mark-lost', 'mark-restored'];
/**
 * The status of an entry no HTTP request made (the admin CLI's marks): there was no answer to
 * record, and 0 is no HTTP status, so it is never taken for one (the column is NOT NULL).
 */
export const AUDIT_STATUS_NOT_HTTP = 0;
/** allowed: answered 1xx–3xx (and an admin CLI mark, which is only recorded once done); refused: 4xx (the request was not granted); failed: 5xx, or the connection closed before the answer. */
export type AuditOutcome = 'allowed' | 'refused' | 'failed';
export const AUDIT_OUTCOMES: readonly AuditOutcome[] = ['allowed', 'refused', 'failed'];

export interface AuditEntryRecord {
  /** When the request came in, by the server's clock: ISO 8601 UTC with milliseconds. */
  at: string;
  action: AuditAction;
  outcome: AuditOutcome;
  /** The HTTP status answered; 499 when the client closed the connection before an answer; 0 (AUDIT_STATUS_NOT_HTTP) for the admin CLI's marks. */
  status: number;
  organizationId: string | null;
  /** The client whose token (or, for signed links, to whom the link was handed) made the request; null when unknown, and for the admin CLI's marks (no client: `detail.by` says who). */
  clientId: string | null;
  patientId: string | null;
  documentId: string | null;
  version: number | null;
  requestId: string;
  remoteAddress: string | null;
  /** A few facts of the access (filters and result count, bytes sent, the refusal's reason); never secrets or content. */
  detail: Record<string, unknown> | null;
}

/**
 * A mark's audit entry (MarkAudit): the document's patient and organization (`owner`, the row's
 * columns), no client, no HTTP status, and whether the mark changed the document itself.
 */
export function markAuditEntry(
  action: AuditAction,
  owner: { patient_id: string; organization_id: string } | undefined,
  mark: { documentId: string; version: number },
  current: boolean,
  audit: MarkAudit,
): AuditEntryRecord {
  return {
    at: audit.at,
    action,
    outcome: 'allowed',
    status: AUDIT_STATUS_NOT_HTTP,
    organizationId: owner?.organization_id ?? null,
    clientId: null,
    patientId: owner?.patient_id ?? null,
    documentId: mark.documentId,
    version: mark.version,
    requestId: audit.requestId,
    remoteAddress: null,
    detail: { ...audit.detail, current },
  };
}

export interface StoredAuditEntry extends AuditEntryRecord {
  /** Grows with every entry written: newest first is `at` then `id` descending. */
  id: number;
}

export interface AuditQuery {
  patientId?: string;
  documentId?: string;
  clientId?: string;
  organizationId?: string;
  action?: AuditAction;
  outcome?: AuditOutcome;
  /** Inclusive lower bound on `at` (ISO 8601 UTC, as stored). */
  since?: string;
  /** Exclusive upper bound on `at`. */
  until?: string;
  offset: number;
  limit: number;
}

export interface AuditRepository {
  /** Writes the entries in one transaction: all or none. */
  append(entries: readonly AuditEntryRecord[]): Promise<void>;
  /** Newest first, with the total matching. */
  search(query: AuditQuery): Promise<Page<StoredAuditEntry>>;
  /** Removes entries older than `before` (IT's retention rules); returns how many. */
  prune(before: string): Promise<number>;
  count(): Promise<number>;
}

/**
 * Leases on named work, where several instances share the database (PostgreSQL): whatever one
 * instance of several must do at a time (the periodic clean-up, a thumbnail render, the writes of
 * one resumable upload) is done by the instance that takes its lease.
 */
export interface WorkLeases {
  /** True when this instance holds `key` for the next `ms` milliseconds (free, expired, or already its own: renewed). */
  take(key: string, ms: number): Promise<boolean>;
  /** Gives `key` up, if this instance holds it. */
  release(key: string): Promise<void>;
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  readonly audit: AuditRepository;
  readonly organizations: OrganizationRepository;
  readonly patients: PatientRepository;
  readonly clients: ClientRepository;
  readonly documents: DocumentRepository;
  readonly content: DocumentContentRepository;
  readonly orders: OrderRepository;
  readonly outbox: OutboxRepository;
  readonly signingKeys: SigningKeyRepository;
  readonly meta: MetaRepository;
  readonly webhooks: WebhookRepository;
  /**
   * Present where several processes serve requests on the database (PostgreSQL): the token
   * endpoint's limits counted there for all of them. The embedded database's one server counts in
   * memory (identity/rate-limit.ts MemoryTokenLimiter).
   */
  sharedTokenLimiter?(limits: TokenLimits): TokenAttemptLimiter;
  /** Present where several instances share the database and the content folder (PostgreSQL); one server per data folder needs none. */
  readonly leases?: WorkLeases;
  /**
   * Runs `work` as the only holder of the deployment's start lock: what every starting process
   * makes sure of once (signing keys, secrets in meta, the seed file) is done by one instance while
   * the others starting at the same moment wait, then find it done.
   */
  exclusively<T>(work: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
