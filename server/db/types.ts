/**
 * The records the server keeps and the repository interface between routes and storage.
 * Every method that changes state takes the outbox events it causes and writes both in one
 * transaction, so a webhook is never lost and never sent for a change that did not happen.
 * Methods are async so that a PostgreSQL implementation fits without touching routes.
 */
import type { EventType } from '../../shared/events.js';
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
  thumbnailKey: string | null;
  createdBy: string;
}

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
  /** Patients the organization has access to and consent from. */
  listVisible(organizationId: string, nameContains: string | undefined, offset: number, limit: number): Promise<Page<PatientRecord>>;
}

export interface ClientRepository {
  create(client: ClientRecord): Promise<void>;
  get(clientId: string): Promise<ClientRecord | undefined>;
  updateSecret(clientId: string, secretHash: string): Promise<void>;
  update(client: ClientRecord): Promise<void>;
  list(): Promise<ClientRecord[]>;
}

export interface DocumentRepository {
  /** Throws DuplicateError when (patient, path, fileName) exists, compared case-insensitively. */
  create(document: DocumentRecord, events: OutboxEvent[]): Promise<void>;
  get(patientId: string, id: string): Promise<DocumentRecord | undefined>;
  search(query: DocumentQuery): Promise<Page<DocumentRecord>>;
}

export interface OrderRepository {
  create(order: OrderRecord, events: OutboxEvent[]): Promise<void>;
  get(id: string): Promise<OrderRecord | undefined>;
  update(order: OrderRecord, events: OutboxEvent[]): Promise<void>;
}

export interface OutboxRepository {
  /** Events in commit order after the given sequence number (for the webhook dispatcher). */
  after(sequence: number, limit: number): Promise<Array<OutboxEvent & { sequence: number }>>;
}

export interface SigningKeyRepository {
  list(): Promise<SigningKeyRecord[]>;
  add(key: SigningKeyRecord): Promise<void>;
  retire(kid: string, at: string): Promise<void>;
  remove(kid: string): Promise<void>;
}

export interface MetaRepository {
  get(key: string): Promise<string | undefined>;
  /** Sets the value unless one exists; returns the stored value. */
  setIfAbsent(key: string, value: string): Promise<string>;
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  readonly organizations: OrganizationRepository;
  readonly patients: PatientRepository;
  readonly clients: ClientRepository;
  readonly documents: DocumentRepository;
  readonly orders: OrderRepository;
  readonly outbox: OutboxRepository;
  readonly signingKeys: SigningKeyRepository;
  readonly meta: MetaRepository;
  close(): Promise<void>;
}
