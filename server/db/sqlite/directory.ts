/** Organizations, patients, clients, orders, signing keys and meta: the small tables. */
import { nameMatches, searchWords } from '../../../shared/name-search.js';
import { foldKey } from '../../../shared/names.js';
import type { PatientIdentifier } from '../../../shared/patient-identifiers.js';
import {
  IdentifierTakenError,
  type ClientRecord,
  type ClientRepository,
  type MetaRepository,
  type OrderRecord,
  type OrderRepository,
  type OrganizationRecord,
  type OrganizationRepository,
  type IdentifierOwner,
  type OutboxEvent,
  type Page,
  type PatientAccess,
  type PatientFilter,
  type PatientRecord,
  type PatientRepository,
  type SigningKeyRecord,
  type SigningKeyRepository,
} from '../types.js';
import type { ChangeWatch } from './change-watch.js';
import type { SqliteDatabase } from './database.js';
import type { SqliteOutbox } from './outbox.js';

/** Patient–organization pairs whose access is kept in memory; past this, the memory starts over. */
const ACCESS_CACHE_LIMIT = 10_000;

export class SqliteOrganizations implements OrganizationRepository {
  constructor(private readonly db: SqliteDatabase) {}

  async upsert(organization: OrganizationRecord): Promise<'created' | 'updated' | 'unchanged'> {
    const existing = await this.get(organization.id);
    if (existing?.name === organization.name) return 'unchanged';
    if (existing) {
      this.db.prepare('UPDATE organizations SET name = ? WHERE id = ?').run(organization.name, organization.id);
      return 'updated';
    }
    this.db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)').run(organization.id, organization.name, organization.createdAt);
    return 'created';
  }

  async get(id: string): Promise<OrganizationRecord | undefined> {
    const row = this.db.prepare('SELECT id, name, created_at AS createdAt FROM organizations WHERE id = ?').get(id);
    return row as OrganizationRecord | undefined;
  }

  async list(): Promise<OrganizationRecord[]> {
    return this.db.prepare('SELECT id, name, created_at AS createdAt FROM organizations ORDER BY name, id').all() as OrganizationRecord[];
  }
}

interface PatientRow {
  id: string;
  name: string;
  birthDate: string | null;
  createdAt: string;
  updatedAt: string;
}

const PATIENT_COLUMNS = 'p.id, p.name, p.birth_date AS birthDate, p.created_at AS createdAt, p.updated_at AS updatedAt';

/** SQLite's answer to a write that breaks a primary key or unique index. */
function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

export class SqlitePatients implements PatientRepository {
  private readonly selectAccess;
  private readonly selectOrganizations;
  private readonly selectConsents;
  private readonly selectIdentifiers;
  /** Prepared once: every change of a patient is an event source (admin API, seed). */
  private readonly statements;
  private readonly createTransaction;
  private readonly updateTransaction;

  /**
   * Every request for a patient's files asks for its access, and in a clinic the same few patients
   * are asked for again and again: the answers are kept until anything is written to the database
   * (ChangeWatch), so a consent withdrawn or a document uploaded counts from the next request on.
   */
  private readonly accessCache = new Map<string, PatientAccess>();
  private accessGeneration = -1;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly outbox: SqliteOutbox,
    private readonly changes: ChangeWatch,
  ) {
    // Names are found word by word, in any order, without case, accents or punctuation: the same
    // function the app uses (shared/name-search.ts). The query's words are folded once per query.
    let lastQuery: { query: string; words: string[] } = { query: '', words: [] };
    db.function('patient_name_matches', { deterministic: true }, (name: unknown, query: unknown) => {
      if (typeof name !== 'string' || typeof query !== 'string') return 0;
      if (lastQuery.query !== query) lastQuery = { query, words: searchWords(query) };
      return nameMatches(name, lastQuery.words) ? 1 : 0;
    });
    // Every request for a patient asks this: one statement, positional parameters, read as an array.
    this.selectAccess = db
      .prepare(
        `SELECT
           EXISTS (SELECT 1 FROM patients WHERE id = ?),
           EXISTS (SELECT 1 FROM patient_organizations WHERE patient_id = ? AND organization_id = ?),
           EXISTS (SELECT 1 FROM patient_consents WHERE patient_id = ? AND organization_id = ?),
           (SELECT version FROM patient_document_versions WHERE patient_id = ?)`,
      )
      .raw();
    this.selectOrganizations = db.prepare('SELECT organization_id FROM patient_organizations WHERE patient_id = ? ORDER BY organization_id').pluck();
    this.selectConsents = db.prepare('SELECT organization_id FROM patient_consents WHERE patient_id = ? ORDER BY organization_id').pluck();
    this.selectIdentifiers = db.prepare('SELECT system, value FROM patient_identifiers WHERE patient_id = ? ORDER BY position');
    this.statements = {
      insert: db.prepare('INSERT INTO patients (id, name, name_key, birth_date, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)'),
      update: db.prepare('UPDATE patients SET name = ?, name_key = ?, birth_date = ?, updated_at = ? WHERE id = ?'),
      get: db.prepare(`SELECT ${PATIENT_COLUMNS} FROM patients p WHERE p.id = ?`),
      clearOrganizations: db.prepare('DELETE FROM patient_organizations WHERE patient_id = ?'),
      clearConsents: db.prepare('DELETE FROM patient_consents WHERE patient_id = ?'),
      clearIdentifiers: db.prepare('DELETE FROM patient_identifiers WHERE patient_id = ?'),
      clearIdentifierOwners: db.prepare('DELETE FROM patient_identifier_owners WHERE patient_id = ?'),
      addOrganization: db.prepare('INSERT INTO patient_organizations (patient_id, organization_id) VALUES (?, ?)'),
      addConsent: db.prepare('INSERT INTO patient_consents (patient_id, organization_id, granted_at) VALUES (?, ?, ?)'),
      addIdentifier: db.prepare('INSERT INTO patient_identifiers (patient_id, system, value, position) VALUES (?, ?, ?, ?)'),
      addIdentifierOwner: db.prepare('INSERT INTO patient_identifier_owners (organization_id, system, value, patient_id) VALUES (?, ?, ?, ?)'),
      identifierOwner: db.prepare('SELECT patient_id FROM patient_identifier_owners WHERE organization_id = ? AND system = ? AND value = ? AND patient_id <> ?').pluck(),
    };
    this.createTransaction = db.transaction((patient: PatientRecord, events: OutboxEvent[]) => {
      this.statements.insert.run(patient.id, patient.name, foldKey(patient.name), patient.birthDate, patient.createdAt, patient.updatedAt);
      this.writeMemberships(patient);
      this.outbox.appendInTransaction(events);
    });
    this.updateTransaction = db.transaction((patient: PatientRecord, events: OutboxEvent[]) => {
      this.statements.update.run(patient.name, foldKey(patient.name), patient.birthDate, patient.updatedAt, patient.id);
      this.writeMemberships(patient);
      this.outbox.appendInTransaction(events);
    });
  }

  private writeMemberships(patient: PatientRecord): void {
    this.statements.clearOrganizations.run(patient.id);
    this.statements.clearConsents.run(patient.id);
    this.statements.clearIdentifiers.run(patient.id);
    this.statements.clearIdentifierOwners.run(patient.id);
    const organizations = [...new Set(patient.organizations)];
    for (const organizationId of organizations) this.statements.addOrganization.run(patient.id, organizationId);
    for (const organizationId of new Set(patient.consents)) this.statements.addConsent.run(patient.id, organizationId, patient.updatedAt);
    patient.identifiers.forEach((identifier, position) => this.statements.addIdentifier.run(patient.id, identifier.system, identifier.value, position));
    for (const organizationId of organizations) {
      for (const identifier of patient.identifiers) this.statements.addIdentifierOwner.run(organizationId, identifier.system, identifier.value, patient.id);
    }
  }

  /** The write in its transaction; a clash on the identifier owners' key is IdentifierTakenError. */
  private write(transaction: { immediate(patient: PatientRecord, events: OutboxEvent[]): void }, patient: PatientRecord, events: OutboxEvent[]): void {
    try {
      transaction.immediate(patient, events);
    } catch (error) {
      if (isUniqueViolation(error) && /patient_identifier_owners/.test((error as Error).message)) {
        throw new IdentifierTakenError(`patient ${patient.id}: one of its identifiers belongs to another patient of one of its organizations`);
      }
      throw error;
    }
  }

  async create(patient: PatientRecord, events: OutboxEvent[]): Promise<void> {
    this.write(this.createTransaction, patient, events);
  }

  async update(patient: PatientRecord, events: OutboxEvent[]): Promise<void> {
    this.write(this.updateTransaction, patient, events);
  }

  async identifierOwners(patientId: string, organizations: readonly string[], identifiers: readonly PatientIdentifier[]): Promise<IdentifierOwner[]> {
    const owners: IdentifierOwner[] = [];
    for (const organizationId of [...new Set(organizations)].sort()) {
      for (const identifier of identifiers) {
        const owner = this.statements.identifierOwner.get(organizationId, identifier.system, identifier.value, patientId) as string | undefined;
        if (owner !== undefined) owners.push({ organizationId, identifier: { system: identifier.system, value: identifier.value }, patientId: owner });
      }
    }
    return owners;
  }

  private hydrate(row: PatientRow): PatientRecord {
    return {
      ...row,
      organizations: this.selectOrganizations.all(row.id) as string[],
      consents: this.selectConsents.all(row.id) as string[],
      identifiers: this.selectIdentifiers.all(row.id) as PatientIdentifier[],
    };
  }

  async get(id: string): Promise<PatientRecord | undefined> {
    const row = this.statements.get.get(id) as PatientRow | undefined;
    return row ? this.hydrate(row) : undefined;
  }

  async access(patientId: string, organizationId: string): Promise<PatientAccess> {
    return this.accessNow(patientId, organizationId);
  }

  /** Never undefined here: a read of the embedded database is as quick as a look in memory. */
  knownAccess(patientId: string, organizationId: string): PatientAccess {
    return this.accessNow(patientId, organizationId);
  }

  private accessNow(patientId: string, organizationId: string): PatientAccess {
    const generation = this.changes.generation();
    if (generation !== this.accessGeneration || this.accessCache.size >= ACCESS_CACHE_LIMIT) {
      this.accessCache.clear();
      this.accessGeneration = generation;
    }
    const key = `${patientId} ${organizationId}`;
    let answer = this.accessCache.get(key);
    if (answer === undefined) {
      const [exists, access, consent, documentChanges] = this.selectAccess.get(patientId, patientId, organizationId, patientId, organizationId, patientId) as [number, number, number, number | null];
      answer = Object.freeze({ exists: exists === 1, access: access === 1, consent: consent === 1, documentChanges: documentChanges ?? 0 });
      this.accessCache.set(key, answer);
    }
    return answer;
  }

  async listVisible(organizationId: string, filter: PatientFilter, offset: number, limit: number): Promise<Page<PatientRecord>> {
    return this.page(
      `FROM patients p
        JOIN patient_organizations po ON po.patient_id = p.id AND po.organization_id = @organizationId
        JOIN patient_consents pc ON pc.patient_id = p.id AND pc.organization_id = @organizationId`,
      { organizationId },
      filter,
      offset,
      limit,
    );
  }

  async list(filter: PatientFilter, offset: number, limit: number): Promise<Page<PatientRecord>> {
    return this.page('FROM patients p', {}, filter, offset, limit);
  }

  /**
   * A page of patients whose name holds every word of the query (shared/name-search.ts), with the
   * given identifier and birth date, with the total.
   */
  private page(from: string, params: Record<string, string>, filter: PatientFilter, offset: number, limit: number): Page<PatientRecord> {
    const where = `${from} WHERE (@name IS NULL OR patient_name_matches(p.name, @name))
      AND (@birthDate IS NULL OR p.birth_date = @birthDate)
      AND (@system IS NULL OR EXISTS (SELECT 1 FROM patient_identifiers pi WHERE pi.patient_id = p.id AND pi.system = @system AND pi.value = @value))`;
    const nameContains = filter.name;
    const bound = {
      ...params,
      name: nameContains === undefined || searchWords(nameContains).length === 0 ? null : nameContains,
      birthDate: filter.birthDate ?? null,
      system: filter.identifier?.system ?? null,
      value: filter.identifier?.value ?? null,
      offset,
      limit,
    };
    const total = this.db.prepare(`SELECT COUNT(*) ${where}`).pluck().get(bound) as number;
    const rows = this.db.prepare(`SELECT ${PATIENT_COLUMNS} ${where} ORDER BY p.name_key, p.id LIMIT +@limit OFFSET @offset`).all(bound) as PatientRow[];
    return { rows: rows.map((row) => this.hydrate(row)), total };
  }
}

interface ClientRow {
  clientId: string;
  name: string;
  secretHash: string;
  scopes: string;
  createdAt: string;
  disabledAt: string | null;
}

export class SqliteClients implements ClientRepository {
  constructor(private readonly db: SqliteDatabase) {}

  private writeOrganizations(client: ClientRecord): void {
    this.db.prepare('DELETE FROM client_organizations WHERE client_id = ?').run(client.clientId);
    const add = this.db.prepare('INSERT INTO client_organizations (client_id, organization_id) VALUES (?, ?)');
    for (const organizationId of new Set(client.organizations)) add.run(client.clientId, organizationId);
  }

  async create(client: ClientRecord): Promise<void> {
    this.db
      .transaction(() => {
        this.db
          .prepare('INSERT INTO clients (client_id, name, secret_hash, scopes, created_at, disabled_at) VALUES (?, ?, ?, ?, ?, ?)')
          .run(client.clientId, client.name, client.secretHash, client.scopes.join(' '), client.createdAt, client.disabledAt);
        this.writeOrganizations(client);
      })
      .immediate();
  }

  async update(client: ClientRecord): Promise<void> {
    this.db
      .transaction(() => {
        this.db
          .prepare('UPDATE clients SET name = ?, secret_hash = ?, scopes = ?, disabled_at = ? WHERE client_id = ?')
          .run(client.name, client.secretHash, client.scopes.join(' '), client.disabledAt, client.clientId);
        this.writeOrganizations(client);
      })
      .immediate();
  }

  private hydrate(row: ClientRow): ClientRecord {
    const organizations = this.db.prepare('SELECT organization_id FROM client_organizations WHERE client_id = ? ORDER BY organization_id').pluck().all(row.clientId) as string[];
    return { ...row, scopes: row.scopes.split(' ').filter(Boolean), organizations };
  }

  async get(clientId: string): Promise<ClientRecord | undefined> {
    const row = this.db
      .prepare('SELECT client_id AS clientId, name, secret_hash AS secretHash, scopes, created_at AS createdAt, disabled_at AS disabledAt FROM clients WHERE client_id = ?')
      .get(clientId) as ClientRow | undefined;
    return row ? this.hydrate(row) : undefined;
  }

  async list(): Promise<ClientRecord[]> {
    const rows = this.db
      .prepare('SELECT client_id AS clientId, name, secret_hash AS secretHash, scopes, created_at AS createdAt, disabled_at AS disabledAt FROM clients ORDER BY client_id')
      .all() as ClientRow[];
    return rows.map((row) => this.hydrate(row));
  }
}

export class SqliteOrders implements OrderRepository {
  constructor(
    private readonly db: SqliteDatabase,
    private readonly outbox: SqliteOutbox,
  ) {}

  async create(order: OrderRecord, events: OutboxEvent[]): Promise<void> {
    this.db
      .transaction(() => {
        this.db
          .prepare('INSERT INTO orders (id, patient_id, organization_id, status, created_at, updated_at) VALUES (@id, @patientId, @organizationId, @status, @createdAt, @updatedAt)')
          .run(order);
        this.outbox.appendInTransaction(events);
      })
      .immediate();
  }

  async update(order: OrderRecord, events: OutboxEvent[]): Promise<void> {
    this.db
      .transaction(() => {
        this.db.prepare('UPDATE orders SET status = @status, updated_at = @updatedAt WHERE id = @id').run(order);
        this.outbox.appendInTransaction(events);
      })
      .immediate();
  }

  async get(id: string): Promise<OrderRecord | undefined> {
    return this.db
      .prepare('SELECT id, patient_id AS patientId, organization_id AS organizationId, status, created_at AS createdAt, updated_at AS updatedAt FROM orders WHERE id = ?')
      .get(id) as OrderRecord | undefined;
  }
}

export class SqliteSigningKeys implements SigningKeyRepository {
  constructor(private readonly db: SqliteDatabase) {}

  async list(): Promise<SigningKeyRecord[]> {
    return this.db
      .prepare('SELECT kid, private_jwk AS privateJwk, public_jwk AS publicJwk, created_at AS createdAt, retired_at AS retiredAt FROM signing_keys ORDER BY created_at, kid')
      .all() as SigningKeyRecord[];
  }

  async add(key: SigningKeyRecord): Promise<void> {
    this.db.prepare('INSERT INTO signing_keys (kid, private_jwk, public_jwk, created_at, retired_at) VALUES (@kid, @privateJwk, @publicJwk, @createdAt, @retiredAt)').run(key);
  }

  async retire(kid: string, at: string): Promise<void> {
    this.db.prepare('UPDATE signing_keys SET retired_at = ? WHERE kid = ? AND retired_at IS NULL').run(at, kid);
  }

  async remove(kid: string): Promise<void> {
    this.db.prepare('DELETE FROM signing_keys WHERE kid = ?').run(kid);
  }

  async replacePrivateJwk(kid: string, privateJwk: string): Promise<void> {
    this.db.prepare('UPDATE signing_keys SET private_jwk = ? WHERE kid = ?').run(privateJwk, kid);
  }
}

export class SqliteMeta implements MetaRepository {
  constructor(private readonly db: SqliteDatabase) {}

  async get(key: string): Promise<string | undefined> {
    return this.db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(key) as string | undefined;
  }

  async setIfAbsent(key: string, value: string): Promise<string> {
    this.db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING').run(key, value);
    return (await this.get(key)) ?? value;
  }

  /** Sets or replaces the value (the seed file's record of the entries it applied). */
  async set(key: string, value: string): Promise<void> {
    this.db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
  }
}
