/** Organizations, patients, clients, orders, signing keys and meta on PostgreSQL: the small tables. */
import { nameMatches, searchWords } from '../../../shared/name-search.js';
import { foldKey } from '../../../shared/names.js';
import type { PatientIdentifier } from '../../../shared/patient-identifiers.js';
import {
  IdentifierTakenError,
  type ClientRecord,
  type ClientRepository,
  type IdentifierOwner,
  type MetaRepository,
  type OrderRecord,
  type OrderRepository,
  type OrganizationRecord,
  type OrganizationRepository,
  type OutboxEvent,
  type Page,
  type PatientAccess,
  type PatientFilter,
  type PatientRecord,
  type PatientRepository,
  type SigningKeyRecord,
  type SigningKeyRepository,
} from '../types.js';
import { named, type PostgresDatabase, type Queryable } from './database.js';
import type { PostgresOutbox } from './outbox.js';

export class PostgresOrganizations implements OrganizationRepository {
  constructor(private readonly db: PostgresDatabase) {}

  async upsert(organization: OrganizationRecord): Promise<'created' | 'updated' | 'unchanged'> {
    // One statement: two instances applying the same seed at once both end with one row.
    const row = await this.db.row<{ inserted: boolean; changed: boolean }>(
      `INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, $3)
       ON CONFLICT (id) DO UPDATE SET name = excluded.name WHERE organizations.name IS DISTINCT FROM excluded.name
       RETURNING (xmax = 0) AS inserted, true AS changed`,
      [organization.id, organization.name, organization.createdAt],
    );
    if (!row) return 'unchanged';
    return row.inserted ? 'created' : 'updated';
  }

  async get(id: string): Promise<OrganizationRecord | undefined> {
    return this.db.row<OrganizationRecord>('SELECT id, name, created_at AS "createdAt" FROM organizations WHERE id = $1', [id]);
  }

  async list(): Promise<OrganizationRecord[]> {
    return this.db.rows<OrganizationRecord>('SELECT id, name, created_at AS "createdAt" FROM organizations ORDER BY name COLLATE "C", id');
  }
}

interface PatientRow {
  id: string;
  name: string;
  birthDate: string | null;
  createdAt: string;
  updatedAt: string;
  organizations: string[];
  consents: string[];
  identifiers: PatientIdentifier[];
}

/** A patient row with its memberships and identifiers, in one statement. */
const PATIENT_COLUMNS = `p.id, p.name, p.birth_date AS "birthDate", p.created_at AS "createdAt", p.updated_at AS "updatedAt",
  ARRAY(SELECT organization_id FROM patient_organizations WHERE patient_id = p.id ORDER BY organization_id) AS organizations,
  ARRAY(SELECT organization_id FROM patient_consents WHERE patient_id = p.id ORDER BY organization_id) AS consents,
  COALESCE((SELECT json_agg(json_build_object('system', system, 'value', value) ORDER BY position) FROM patient_identifiers WHERE patient_id = p.id), '[]'::json) AS identifiers`;

/** PostgreSQL's answer to a write that breaks the identifier owners' primary key. */
function isIdentifierClash(error: unknown): boolean {
  const failure = error as { code?: unknown; constraint?: unknown } | null;
  return failure?.code === '23505' && typeof failure.constraint === 'string' && failure.constraint.startsWith('patient_identifier_owners');
}

/**
 * Patients. Access is read from the database at every request: no memory of it in this process,
 * which another instance's write (a consent revoked) would make stale.
 */

/**
 * Whether the patient ($patient) exists and the organization ($organization) has access to it and
 * its consent, as the select columns exists, access and consent (SPEC §5.3–5.4).
 */
export function grantColumns(patient: string, organization: string): string {
  return `EXISTS (SELECT 1 FROM patients WHERE id = ${patient}) AS exists,
     EXISTS (SELECT 1 FROM patient_organizations WHERE patient_id = ${patient} AND organization_id = ${organization}) AS access,
     EXISTS (SELECT 1 FROM patient_consents WHERE patient_id = ${patient} AND organization_id = ${organization}) AS consent`;
}

/** Whether an organization may see a patient: asked by nearly every request, so planned once per connection. */
const ACCESS = named(
  'patient-access',
  `SELECT ${grantColumns('$1', '$2')},
     (SELECT version FROM patient_document_versions WHERE patient_id = $1) AS changes`,
);

export class PostgresPatients implements PatientRepository {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly outbox: PostgresOutbox,
  ) {}

  private async writeMemberships(tx: Queryable, patient: PatientRecord): Promise<void> {
    await tx.run('DELETE FROM patient_organizations WHERE patient_id = $1', [patient.id]);
    await tx.run('DELETE FROM patient_consents WHERE patient_id = $1', [patient.id]);
    await tx.run('INSERT INTO patient_organizations (patient_id, organization_id) SELECT $1, unnest($2::text[])', [patient.id, [...new Set(patient.organizations)]]);
    await tx.run('INSERT INTO patient_consents (patient_id, organization_id, granted_at) SELECT $1, unnest($2::text[]), $3', [patient.id, [...new Set(patient.consents)], patient.updatedAt]);
    await tx.run('DELETE FROM patient_identifiers WHERE patient_id = $1', [patient.id]);
    await tx.run('DELETE FROM patient_identifier_owners WHERE patient_id = $1', [patient.id]);
    const systems = patient.identifiers.map((identifier) => identifier.system);
    const values = patient.identifiers.map((identifier) => identifier.value);
    await tx.run('INSERT INTO patient_identifiers (patient_id, system, value, position) SELECT $1, s, v, n - 1 FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS i(s, v, n)', [patient.id, systems, values]);
    await tx.run(
      'INSERT INTO patient_identifier_owners (organization_id, system, value, patient_id) SELECT o, s, v, $1 FROM unnest($2::text[]) AS o CROSS JOIN unnest($3::text[], $4::text[]) AS i(s, v)',
      [patient.id, [...new Set(patient.organizations)], systems, values],
    );
  }

  /** The write in one transaction; a clash on the identifier owners' key is IdentifierTakenError. */
  private async write(patient: PatientRecord, events: OutboxEvent[], row: (tx: Queryable) => Promise<unknown>): Promise<void> {
    try {
      await this.db.transaction(async (tx) => {
        await row(tx);
        await this.writeMemberships(tx, patient);
        await this.outbox.appendInTransaction(tx, events);
      });
    } catch (error) {
      if (isIdentifierClash(error)) throw new IdentifierTakenError(`patient ${patient.id}: one of its identifiers belongs to another patient of one of its organizations`);
      throw error;
    }
    this.outbox.committed(events);
  }

  async create(patient: PatientRecord, events: OutboxEvent[]): Promise<void> {
    await this.write(patient, events, (tx) =>
      tx.run('INSERT INTO patients (id, name, name_key, birth_date, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6)', [patient.id, patient.name, foldKey(patient.name), patient.birthDate, patient.createdAt, patient.updatedAt]),
    );
  }

  async update(patient: PatientRecord, events: OutboxEvent[]): Promise<void> {
    await this.write(patient, events, (tx) =>
      tx.run('UPDATE patients SET name = $1, name_key = $2, birth_date = $3, updated_at = $4 WHERE id = $5', [patient.name, foldKey(patient.name), patient.birthDate, patient.updatedAt, patient.id]),
    );
  }

  async identifierOwners(patientId: string, organizations: readonly string[], identifiers: readonly PatientIdentifier[]): Promise<IdentifierOwner[]> {
    if (organizations.length === 0 || identifiers.length === 0) return [];
    const rows = await this.db.rows<{ organizationId: string; system: string; value: string; patientId: string }>(
      `SELECT o.organization_id AS "organizationId", o.system, o.value, o.patient_id AS "patientId"
         FROM patient_identifier_owners o
         JOIN unnest($2::text[], $3::text[]) AS i(s, v) ON o.system = i.s AND o.value = i.v
        WHERE o.organization_id = ANY($1::text[]) AND o.patient_id <> $4
        ORDER BY o.organization_id, o.system, o.value`,
      [[...new Set(organizations)], identifiers.map((identifier) => identifier.system), identifiers.map((identifier) => identifier.value), patientId],
    );
    return rows.map((row) => ({ organizationId: row.organizationId, identifier: { system: row.system, value: row.value }, patientId: row.patientId }));
  }

  async get(id: string): Promise<PatientRecord | undefined> {
    return this.db.row<PatientRow>(`SELECT ${PATIENT_COLUMNS} FROM patients p WHERE p.id = $1`, [id]);
  }

  async access(patientId: string, organizationId: string): Promise<PatientAccess> {
    const row = await this.db.row<{ exists: boolean; access: boolean; consent: boolean; changes: number | null }>(ACCESS, [patientId, organizationId]);
    return { exists: row?.exists === true, access: row?.access === true, consent: row?.consent === true, documentChanges: row?.changes ?? 0 };
  }

  async listVisible(organizationId: string, filter: PatientFilter, offset: number, limit: number): Promise<Page<PatientRecord>> {
    return this.page(
      (organization) => `FROM patients p
        JOIN patient_organizations po ON po.patient_id = p.id AND po.organization_id = ${organization}
        JOIN patient_consents pc ON pc.patient_id = p.id AND pc.organization_id = ${organization}`,
      [organizationId],
      filter,
      offset,
      limit,
    );
  }

  async list(filter: PatientFilter, offset: number, limit: number): Promise<Page<PatientRecord>> {
    return this.page(() => 'FROM patients p', [], filter, offset, limit);
  }

  /**
   * A page of patients whose name holds every word of the query, in any order, without case,
   * accents or punctuation (shared/name-search.ts, the function the app and SQLite use), with the
   * given identifier and birth date, with the total. The words are matched here, not in SQL: the
   * scope's names are read (one statement, one snapshot) and the page's patients then hydrated.
   * Without a name, one statement pages in SQL. `from` names the scope with its one parameter (the
   * organization) at the placeholder given.
   */
  private async page(from: (placeholder: string) => string, params: unknown[], filter: PatientFilter, offset: number, limit: number): Promise<Page<PatientRecord>> {
    const words = filter.name === undefined ? [] : searchWords(filter.name);
    // The scope's parameter first, then the identifier and birth date filters.
    const exact = (first: number): { where: string; params: unknown[] } => {
      const clauses: string[] = [];
      const values: unknown[] = [];
      if (filter.birthDate !== undefined) {
        values.push(filter.birthDate);
        clauses.push(`p.birth_date = $${first + values.length - 1}`);
      }
      if (filter.identifier !== undefined) {
        values.push(filter.identifier.system, filter.identifier.value);
        clauses.push(`EXISTS (SELECT 1 FROM patient_identifiers pi WHERE pi.patient_id = p.id AND pi.system = $${first + values.length - 2} AND pi.value = $${first + values.length - 1})`);
      }
      return { where: clauses.length === 0 ? '' : ` WHERE ${clauses.join(' AND ')}`, params: values };
    };
    if (words.length > 0) {
      const filters = exact(2 + params.length - 1);
      const names = await this.db.rows<{ id: string; name: string }>(`SELECT p.id, p.name ${from('$1')}${filters.where} ORDER BY p.name_key, p.id`, [...params, ...filters.params]);
      const matching = names.filter((row) => nameMatches(row.name, words));
      const ids = matching.slice(offset, offset + limit).map((row) => row.id);
      const rows = ids.length === 0 ? [] : await this.db.rows<PatientRow>(`SELECT ${PATIENT_COLUMNS} FROM patients p WHERE p.id = ANY($1::text[]) ORDER BY p.name_key, p.id`, [ids]);
      return { rows, total: matching.length };
    }
    const scope = from('$3');
    const filters = exact(3 + params.length);
    const rows = await this.db.rows<PatientRow & { total: number; nameKey: string }>(
      `SELECT t.total, page.* FROM (SELECT count(*) AS total ${scope}${filters.where}) t
       LEFT JOIN LATERAL (SELECT ${PATIENT_COLUMNS}, p.name_key AS "nameKey" ${scope}${filters.where} ORDER BY p.name_key, p.id LIMIT $1 OFFSET $2) page ON true
       ORDER BY page."nameKey", page.id`,
      [limit, offset, ...params, ...filters.params],
    );
    const total = rows[0]?.total ?? 0;
    return { rows: rows.filter((row) => row.id !== null).map(({ total: _total, nameKey: _nameKey, ...patient }) => patient), total };
  }
}

interface ClientRow {
  clientId: string;
  name: string;
  secretHash: string;
  scopes: string;
  createdAt: string;
  disabledAt: string | null;
  organizations: string[];
}

const CLIENT_COLUMNS = `client_id AS "clientId", name, secret_hash AS "secretHash", scopes, created_at AS "createdAt", disabled_at AS "disabledAt",
  ARRAY(SELECT organization_id FROM client_organizations o WHERE o.client_id = clients.client_id ORDER BY organization_id) AS organizations`;

const clientFromRow = (row: ClientRow): ClientRecord => ({ ...row, scopes: row.scopes.split(' ').filter(Boolean) });

export class PostgresClients implements ClientRepository {
  constructor(private readonly db: PostgresDatabase) {}

  private async writeOrganizations(tx: Queryable, client: ClientRecord): Promise<void> {
    await tx.run('DELETE FROM client_organizations WHERE client_id = $1', [client.clientId]);
    await tx.run('INSERT INTO client_organizations (client_id, organization_id) SELECT $1, unnest($2::text[])', [client.clientId, [...new Set(client.organizations)]]);
  }

  async create(client: ClientRecord): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.run('INSERT INTO clients (client_id, name, secret_hash, scopes, created_at, disabled_at) VALUES ($1, $2, $3, $4, $5, $6)', [
        client.clientId,
        client.name,
        client.secretHash,
        client.scopes.join(' '),
        client.createdAt,
        client.disabledAt,
      ]);
      await this.writeOrganizations(tx, client);
    });
  }

  async update(client: ClientRecord): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.run('UPDATE clients SET name = $1, secret_hash = $2, scopes = $3, disabled_at = $4 WHERE client_id = $5', [client.name, client.secretHash, client.scopes.join(' '), client.disabledAt, client.clientId]);
      await this.writeOrganizations(tx, client);
    });
  }

  async get(clientId: string): Promise<ClientRecord | undefined> {
    const row = await this.db.row<ClientRow>(`SELECT ${CLIENT_COLUMNS} FROM clients WHERE client_id = $1`, [clientId]);
    return row ? clientFromRow(row) : undefined;
  }

  async list(): Promise<ClientRecord[]> {
    return (await this.db.rows<ClientRow>(`SELECT ${CLIENT_COLUMNS} FROM clients ORDER BY client_id`)).map(clientFromRow);
  }
}

const ORDER_COLUMNS = 'id, patient_id AS "patientId", organization_id AS "organizationId", status, created_at AS "createdAt", updated_at AS "updatedAt"';

export class PostgresOrders implements OrderRepository {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly outbox: PostgresOutbox,
  ) {}

  async create(order: OrderRecord, events: OutboxEvent[]): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.run('INSERT INTO orders (id, patient_id, organization_id, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6)', [
        order.id,
        order.patientId,
        order.organizationId,
        order.status,
        order.createdAt,
        order.updatedAt,
      ]);
      await this.outbox.appendInTransaction(tx, events);
    });
    this.outbox.committed(events);
  }

  async update(order: OrderRecord, events: OutboxEvent[]): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.run('UPDATE orders SET status = $1, updated_at = $2 WHERE id = $3', [order.status, order.updatedAt, order.id]);
      await this.outbox.appendInTransaction(tx, events);
    });
    this.outbox.committed(events);
  }

  async get(id: string): Promise<OrderRecord | undefined> {
    return this.db.row<OrderRecord>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1`, [id]);
  }
}

export class PostgresSigningKeys implements SigningKeyRepository {
  constructor(private readonly db: PostgresDatabase) {}

  async list(): Promise<SigningKeyRecord[]> {
    return this.db.rows<SigningKeyRecord>(
      'SELECT kid, private_jwk AS "privateJwk", public_jwk AS "publicJwk", created_at AS "createdAt", retired_at AS "retiredAt" FROM signing_keys ORDER BY created_at, kid',
    );
  }

  async add(key: SigningKeyRecord): Promise<void> {
    await this.db.run('INSERT INTO signing_keys (kid, private_jwk, public_jwk, created_at, retired_at) VALUES ($1, $2, $3, $4, $5)', [key.kid, key.privateJwk, key.publicJwk, key.createdAt, key.retiredAt]);
  }

  async retire(kid: string, at: string): Promise<void> {
    await this.db.run('UPDATE signing_keys SET retired_at = $1 WHERE kid = $2 AND retired_at IS NULL', [at, kid]);
  }

  async remove(kid: string): Promise<void> {
    await this.db.run('DELETE FROM signing_keys WHERE kid = $1', [kid]);
  }

  async replacePrivateJwk(kid: string, privateJwk: string): Promise<void> {
    await this.db.run('UPDATE signing_keys SET private_jwk = $1 WHERE kid = $2', [privateJwk, kid]);
  }
}

export class PostgresMeta implements MetaRepository {
  constructor(private readonly db: PostgresDatabase) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.db.row<{ value: string }>('SELECT value FROM meta WHERE key = $1', [key]))?.value;
  }

  async setIfAbsent(key: string, value: string): Promise<string> {
    await this.db.run('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [key, value]);
    return (await this.get(key)) ?? value;
  }

  async set(key: string, value: string): Promise<void> {
    await this.db.run('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
  }
}
