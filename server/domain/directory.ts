/**
 * Organizations, patients, consents, clients and orders: what IT manages through the admin API,
 * the admin CLI and the seed file. Changes that integrators hear about are written with their
 * outbox events in one transaction.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { AdminClientDto, AdminPatientDto, OrderDto, OrganizationDto, SeedFile } from '../../shared/schemas.js';
import { SEARCH_DEFAULTS } from '../../shared/search-defaults.js';
import { ConfigError } from '../config.js';
import { formatIdentifier, isBirthDate, parseIdentifierFilter, repeatedIdentifier, type PatientIdentifier } from '../../shared/patient-identifiers.js';
import { IdentifierTakenError, type ClientRecord, type MetaRepository, type OrderRecord, type PatientFilter, type PatientRecord, type Store } from '../db/types.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { generateSecret, hashSecret, verifySecret } from '../identity/secrets.js';
import { outboxEvent } from './events.js';

export interface PatientInput {
  id?: string | undefined;
  name: string;
  organizations?: string[] | undefined;
  consents?: string[] | undefined;
  identifiers?: PatientIdentifier[] | undefined;
  birthDate?: string | undefined;
}

/** A change to a patient: a field left out stays; `birthDate: null` removes it, `identifiers: []` removes them. */
export interface PatientPatch {
  name?: string | undefined;
  organizations?: string[] | undefined;
  consents?: string[] | undefined;
  identifiers?: PatientIdentifier[] | undefined;
  birthDate?: string | null | undefined;
}

export interface ClientInput {
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  name: string;
  scopes: string[];
  organizations: string[];
}

const lower = (ids: readonly string[] | undefined): string[] => [...new Set((ids ?? []).map((id) => id.toLowerCase()))].sort();

export function patientDto(patient: PatientRecord): AdminPatientDto {
  return { ...patient, identifiers: patient.identifiers.map((identifier) => ({ ...identifier })) };
}

/** The patient as webhook events and GET /v1/patients show it (no memberships: those are the server's business). */
export function patientSummary(patient: PatientRecord) {
  return {
    id: patient.id,
    name: patient.name,
    identifiers: patient.identifiers.map((identifier) => ({ system: identifier.system, value: identifier.value })),
    birthDate: patient.birthDate,
    createdAt: patient.createdAt,
    updatedAt: patient.updatedAt,
  };
}

/** Identifiers as stored: NFC, in the order given. The schema has already refused blank, padded and overlong ones. */
function normalizedIdentifiers(identifiers: readonly PatientIdentifier[] | undefined): PatientIdentifier[] {
  const normalized = (identifiers ?? []).map((identifier) => ({ system: identifier.system.normalize('NFC'), value: identifier.value.normalize('NFC') }));
  const repeated = repeatedIdentifier(normalized);
  if (repeated) throw badRequest(`identifiers: ${formatIdentifier(repeated)} is given twice`);
  return normalized;
}

function checkedBirthDate(birthDate: string | null | undefined): string | null {
  if (birthDate === undefined || birthDate === null) return null;
  // The schema checks it too; the seed file and direct callers come through here as well.
  if (!isBirthDate(birthDate)) throw badRequest(`birthDate ${birthDate} must be a date YYYY-MM-DD that exists, from 1850-01-01 to today`);
  return birthDate;
}

/** GET /v1/patients' and the admin list's query as the store's filter; a malformed identifier is 400. */
export function patientFilter(query: { name?: string | undefined; identifier?: string | undefined; birthDate?: string | undefined }): PatientFilter {
  let identifier: PatientIdentifier | undefined;
  if (query.identifier !== undefined) {
    identifier = parseIdentifierFilter(query.identifier);
    if (!identifier) throw badRequest(`identifier ${JSON.stringify(query.identifier)} must be system|value, e.g. chart|10231`);
    identifier = { system: identifier.system.normalize('NFC'), value: identifier.value.normalize('NFC') };
  }
  if (query.birthDate !== undefined && !isBirthDate(query.birthDate)) throw badRequest(`birthDate ${JSON.stringify(query.birthDate)} must be a date YYYY-MM-DD that exists, from 1850-01-01 to today`);
  return { name: query.name, identifier, birthDate: query.birthDate };
}

const sameIdentifiers = (a: readonly PatientIdentifier[], b: readonly PatientIdentifier[]): boolean =>
  a.length === b.length && a.every((identifier, index) => identifier.system === b[index]!.system && identifier.value === b[index]!.value);

function clientDto(client: ClientRecord, secret?: string): AdminClientDto {
  const dto: AdminClientDto = {
    clientId: client.clientId,
    name: client.name,
    scopes: client.scopes,
    organizations: client.organizations,
    createdAt: client.createdAt,
    disabledAt: client.disabledAt,
  };
  if (secret !== undefined) dto.clientSecret = secret;
  return dto;
}

export class DirectoryService {
  constructor(
    private readonly store: Store,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private async requireOrganizations(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      if (!(await this.store.organizations.get(id))) throw badRequest(`organization ${id} does not exist`);
    }
  }

  async upsertOrganization(input: { id?: string | undefined; name: string }): Promise<{ organization: OrganizationDto; created: boolean }> {
    const id = (input.id ?? randomUUID()).toLowerCase();
    const outcome = await this.store.organizations.upsert({ id, name: input.name, createdAt: this.now().toISOString() });
    const organization = await this.store.organizations.get(id);
    if (!organization) throw new Error('organization vanished after upsert');
    return { organization, created: outcome === 'created' };
  }

  async listOrganizations(): Promise<OrganizationDto[]> {
    return this.store.organizations.list();
  }

  private patientEvent(eventType: 'patient.created' | 'patient.updated', patient: PatientRecord, operationId: string) {
    return outboxEvent(eventType, {
      patientId: patient.id,
      organizationId: null,
      operationId,
      occurredAt: patient.updatedAt,
      data: { patient: patientSummary(patient) },
    });
  }

  /**
   * 409 when another patient holds one of the identifiers in one of the patient's organizations
   * (the rule of docs/api.md "Patient identifiers"), naming the first such identifier.
   */
  private async requireFreeIdentifiers(patient: PatientRecord): Promise<void> {
    const [owner] = await this.store.patients.identifierOwners(patient.id, patient.organizations, patient.identifiers);
    if (owner) {
      throw conflict(`identifier ${formatIdentifier(owner.identifier)} already belongs to patient ${owner.patientId} in organization ${owner.organizationId}; an identifier is unique per organization and system`);
    }
  }

  /** The store's write; a clash that slipped past requireFreeIdentifiers (two writers at once) is 409 too. */
  private async writePatient(write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (error) {
      if (error instanceof IdentifierTakenError) throw conflict(`${error.message}; an identifier is unique per organization and system`);
      throw error;
    }
  }

  async createPatient(input: PatientInput, operationId: string = randomUUID()): Promise<AdminPatientDto> {
    const id = (input.id ?? randomUUID()).toLowerCase();
    if (await this.store.patients.get(id)) throw conflict(`patient ${id} already exists`);
    const organizations = lower(input.organizations);
    const consents = lower(input.consents);
    await this.requireOrganizations([...organizations, ...consents]);
    const identifiers = normalizedIdentifiers(input.identifiers);
    const birthDate = checkedBirthDate(input.birthDate);
    const timestamp = this.now().toISOString();
    const patient: PatientRecord = { id, name: input.name, organizations, consents, identifiers, birthDate, createdAt: timestamp, updatedAt: timestamp };
    await this.requireFreeIdentifiers(patient);
    await this.writePatient(() => this.store.patients.create(patient, [this.patientEvent('patient.created', patient, operationId)]));
    return patientDto(patient);
  }

  async updatePatient(id: string, patch: PatientPatch, operationId: string = randomUUID()): Promise<AdminPatientDto> {
    const existing = await this.store.patients.get(id.toLowerCase());
    if (!existing) throw notFound(`patient ${id} does not exist`);
    const organizations = patch.organizations ? lower(patch.organizations) : existing.organizations;
    const consents = patch.consents ? lower(patch.consents) : existing.consents;
    await this.requireOrganizations([...organizations, ...consents]);
    const name = patch.name ?? existing.name;
    const identifiers = patch.identifiers ? normalizedIdentifiers(patch.identifiers) : existing.identifiers;
    const birthDate = patch.birthDate === undefined ? existing.birthDate : checkedBirthDate(patch.birthDate);
    // A change that changes nothing (the same name, a consent granted twice) writes nothing and
    // announces nothing: receivers would otherwise see patient.updated for nothing.
    const same = (a: readonly string[], b: readonly string[]) => new Set(a).size === new Set(b).size && a.every((value) => b.includes(value));
    if (
      name === existing.name &&
      same(organizations, existing.organizations) &&
      same(consents, existing.consents) &&
      sameIdentifiers(identifiers, existing.identifiers) &&
      birthDate === existing.birthDate
    ) {
      return patientDto(existing);
    }
    const updated: PatientRecord = { ...existing, name, organizations, consents, identifiers, birthDate, updatedAt: this.now().toISOString() };
    await this.requireFreeIdentifiers(updated);
    await this.writePatient(() => this.store.patients.update(updated, [this.patientEvent('patient.updated', updated, operationId)]));
    return patientDto(updated);
  }

  async listPatients(query: { name?: string | undefined; identifier?: string | undefined; birthDate?: string | undefined; offset?: number | undefined; limit?: number | undefined }): Promise<{ patients: AdminPatientDto[]; offset: number; limit: number; total: number }> {
    const offset = query.offset ?? 0;
    const limit = query.limit ?? SEARCH_DEFAULTS.limit;
    const page = await this.store.patients.list(patientFilter(query), offset, limit);
    return { patients: page.rows.map(patientDto), offset, limit, total: page.total };
  }

  async getPatient(id: string): Promise<AdminPatientDto> {
    const patient = await this.store.patients.get(id.toLowerCase());
    if (!patient) throw notFound(`patient ${id} does not exist`);
    return patientDto(patient);
  }

  async setConsent(patientId: string, organizationId: string, granted: boolean): Promise<AdminPatientDto> {
    const patient = await this.store.patients.get(patientId.toLowerCase());
    if (!patient) throw notFound(`patient ${patientId} does not exist`);
    const organization = organizationId.toLowerCase();
    await this.requireOrganizations([organization]);
    const consents = granted ? lower([...patient.consents, organization]) : patient.consents.filter((id) => id !== organization);
    return this.updatePatient(patient.id, { consents });
  }

  async createClient(input: ClientInput): Promise<AdminClientDto> {
    const clientId = input.clientId ?? `client-${randomUUID()}`;
    if (await this.store.clients.get(clientId)) throw conflict(`client ${clientId} already exists`);
    const organizations = lower(input.organizations);
    await this.requireOrganizations(organizations);
    const secret = input.clientSecret ?? generateSecret();
    const client: ClientRecord = {
      clientId,
      name: input.name,
      secretHash: await hashSecret(secret),
      scopes: [...new Set(input.scopes)],
      organizations,
      createdAt: this.now().toISOString(),
      disabledAt: null,
    };
    await this.store.clients.create(client);
    return clientDto(client, secret);
  }

  /**
   * A lost or stolen workstation: `disabled` refuses the client's token requests at once and its
   * tokens already issued within seconds (the access check re-reads clients every 5 s).
   */
  async updateClient(clientId: string, patch: { name?: string; scopes?: string[]; organizations?: string[]; disabled?: boolean }): Promise<AdminClientDto> {
    const existing = await this.existingClient(clientId);
    const organizations = patch.organizations ? lower(patch.organizations) : existing.organizations;
    await this.requireOrganizations(organizations);
    const disabledAt = patch.disabled === undefined ? existing.disabledAt : patch.disabled ? (existing.disabledAt ?? this.now().toISOString()) : null;
    const updated: ClientRecord = { ...existing, name: patch.name ?? existing.name, scopes: patch.scopes ? [...new Set(patch.scopes)] : existing.scopes, organizations, disabledAt };
    await this.store.clients.update(updated);
    return clientDto(updated);
  }

  /** A new secret, shown once; the old one stops working at once (tokens issued with it run out as usual). */
  async rotateClientSecret(clientId: string, clientSecret?: string): Promise<AdminClientDto> {
    const existing = await this.existingClient(clientId);
    const secret = clientSecret ?? generateSecret();
    const updated: ClientRecord = { ...existing, secretHash: await hashSecret(secret) };
    await this.store.clients.update(updated);
    return clientDto(updated, secret);
  }

  private async existingClient(clientId: string): Promise<ClientRecord> {
    const client = await this.store.clients.get(clientId);
    if (!client) throw notFound(`client ${clientId} does not exist`);
    return client;
  }

  async listClients(): Promise<AdminClientDto[]> {
    return (await this.store.clients.list()).map((client) => clientDto(client));
  }

  async createOrder(input: { patientId: string; organizationId: string; status: string }, operationId: string = randomUUID()): Promise<OrderDto> {
    const patientId = input.patientId.toLowerCase();
    const organizationId = input.organizationId.toLowerCase();
    const patient = await this.store.patients.get(patientId);
    if (!patient) throw badRequest(`patient ${input.patientId} does not exist`);
    await this.requireOrganizations([organizationId]);
    // Its events reach only organizations with access to the patient: an order of any other would
    // be announced to someone else and never to its own organization.
    if (!patient.organizations.includes(organizationId)) {
      throw conflict(`organization ${input.organizationId} has no access to patient ${input.patientId}; give it access first`);
    }
    const timestamp = this.now().toISOString();
    const order: OrderRecord = { id: randomUUID(), patientId, organizationId, status: input.status, createdAt: timestamp, updatedAt: timestamp };
    await this.store.orders.create(order, [outboxEvent('order.created', { patientId, organizationId, operationId, occurredAt: timestamp, data: { order } })]);
    return order;
  }

  async updateOrder(id: string, status: string, operationId: string = randomUUID()): Promise<OrderDto> {
    const existing = await this.store.orders.get(id.toLowerCase());
    if (!existing) throw notFound(`order ${id} does not exist`);
    const order: OrderRecord = { ...existing, status, updatedAt: this.now().toISOString() };
    await this.store.orders.update(order, [
      outboxEvent('order.updated', { patientId: order.patientId, organizationId: order.organizationId, operationId, occurredAt: order.updatedAt, data: { order } }),
    ]);
    return order;
  }

  /**
   * Applies a seed file (DESIGN §2). An entry is applied when it is new, or when it differs from
   * the entry as last applied (its hash is kept in meta, per kind and id); it then becomes what
   * the file says, lists included. An unchanged entry is left alone, so what the admin API or CLI
   * changed at run time (a revoked consent, a rename) survives a restart with the same file.
   * The whole file is checked first; a problem is a SeedError and nothing is applied.
   * `source` names the file in errors ("PATIENT_DOCS_SEED=/path", "--file=/path").
   */
  async applySeed(input: SeedFile, source?: string): Promise<{ created: number; updated: number }> {
    // The schemas and their validator are loaded here, not with this module: the admin CLI's
    // other commands (and the server's own start, until it seeds) do without them.
    const { checkSeedShape, seedSource } = await import('./seed-file.js');
    const label = source ?? seedSource(input) ?? 'the seed';
    const seed = checkSeedShape(input, label);
    await this.checkSeedReferences(seed, label);
    const ledger = seedLedger(this.store.meta);

    // Everything is read, compared and hashed before the first write.
    const organizations: { entry: SeedEntry; name: string }[] = [];
    for (const organization of seed.organizations ?? []) {
      const entry = seedEntry('organization', organization.id.toLowerCase(), { name: organization.name });
      if (await ledger.unchanged(entry, async () => Boolean(await this.store.organizations.get(entry.id)))) continue;
      organizations.push({ entry, name: organization.name });
    }
    const patients: { entry: SeedEntry; patient: PatientInput & { id: string }; existing: PatientRecord | undefined }[] = [];
    for (const patient of seed.patients ?? []) {
      const id = patient.id.toLowerCase();
      // Identifiers and a birth date are the file's only when it gives them (an entry without them
      // hashes as it always did, and leaves what the admin API set alone).
      const wanted = {
        name: patient.name,
        organizations: lower(patient.organizations),
        consents: lower(patient.consents),
        ...(patient.identifiers === undefined ? {} : { identifiers: patient.identifiers.map((identifier) => ({ system: identifier.system.normalize('NFC'), value: identifier.value.normalize('NFC') })) }),
        ...(patient.birthDate === undefined ? {} : { birthDate: patient.birthDate }),
      };
      const entry = seedEntry('patient', id, wanted);
      const existing = await this.store.patients.get(id);
      if (await ledger.unchanged(entry, async () => existing !== undefined)) continue;
      patients.push({ entry, patient: { id, ...wanted }, existing });
    }
    const clients: { entry: SeedEntry; client: ClientRecord; existing: ClientRecord | undefined }[] = [];
    for (const client of seed.clients ?? []) {
      const name = client.name ?? client.clientId;
      const scopes = [...new Set(client.scopes)];
      const organizations = lower(client.organizations);
      // The secret is not in the hash (a fast hash of it would be easier to attack than the scrypt
      // one): a client whose secret no longer verifies has changed too — unless its stored hash is
      // no longer the one the seed left, i.e. IT rotated the secret at run time: that rotation
      // stands (restoring the file's secret could restore a leaked one).
      const entry = seedEntry('client', client.clientId, { name, scopes: [...scopes].sort(), organizations });
      const existing = await this.store.clients.get(client.clientId);
      const applied = existing ? await ledger.appliedSecret(entry) : undefined;
      const rotatedSince = existing !== undefined && applied !== undefined && applied !== existing.secretHash;
      const sameSecret = existing !== undefined && (rotatedSince || (await verifySecret(client.clientSecret, existing.secretHash)));
      if (sameSecret && (await ledger.unchanged(entry, async () => true))) {
        if (applied === undefined) await ledger.recordSecret(entry, existing.secretHash);
        continue;
      }
      const secretHash = sameSecret ? existing.secretHash : await hashSecret(client.clientSecret);
      const record: ClientRecord = existing
        ? { ...existing, name, scopes, organizations, secretHash }
        : { clientId: client.clientId, name, scopes, organizations, secretHash, createdAt: this.now().toISOString(), disabledAt: null };
      clients.push({ entry, client: record, existing });
    }

    let created = 0;
    let updated = 0;
    for (const { entry, name } of organizations) {
      const outcome = await this.store.organizations.upsert({ id: entry.id, name, createdAt: this.now().toISOString() });
      if (outcome === 'created') created += 1;
      if (outcome === 'updated') updated += 1;
      await ledger.record(entry);
    }
    for (const { entry, patient, existing } of patients) {
      if (!existing) {
        await this.createPatient(patient);
        created += 1;
      } else if (
        existing.name !== patient.name ||
        existing.organizations.join() !== patient.organizations?.join() ||
        existing.consents.join() !== patient.consents?.join() ||
        (patient.identifiers !== undefined && !sameIdentifiers(existing.identifiers, patient.identifiers)) ||
        (patient.birthDate !== undefined && existing.birthDate !== patient.birthDate)
      ) {
        await this.updatePatient(existing.id, { name: patient.name, organizations: patient.organizations, consents: patient.consents, identifiers: patient.identifiers, birthDate: patient.birthDate });
        updated += 1;
      }
      await ledger.record(entry);
    }
    for (const { entry, client, existing } of clients) {
      if (!existing) {
        await this.store.clients.create(client);
        created += 1;
      } else if (
        existing.name !== client.name ||
        existing.secretHash !== client.secretHash ||
        [...existing.scopes].sort().join() !== [...client.scopes].sort().join() ||
        existing.organizations.join() !== client.organizations.join()
      ) {
        await this.store.clients.update(client);
        updated += 1;
      }
      await ledger.record(entry);
      await ledger.recordSecret(entry, client.secretHash);
    }
    return { created, updated };
  }

  /** Ids unique per kind, and every organization a patient or client names is in the file or the database. */
  private async checkSeedReferences(seed: SeedFile, label: string): Promise<void> {
    const fail = (message: string): never => {
      throw new SeedError(`${label}: ${message}`);
    };
    const unique = <T>(kind: string, entries: readonly T[] | undefined, idOf: (entry: T) => string, idName = 'id'): void => {
      const seen = new Map<string, number>();
      (entries ?? []).forEach((entry, index) => {
        const id = idOf(entry);
        const first = seen.get(id);
        if (first !== undefined) fail(`${kind}[${index}] (${idName} ${id}) has the same ${idName} as ${kind}[${first}]; each ${idName} may appear only once`);
        seen.set(id, index);
      });
    };
    unique('organizations', seed.organizations, (organization) => organization.id.toLowerCase());
    unique('patients', seed.patients, (patient) => patient.id.toLowerCase());
    unique('clients', seed.clients, (client) => client.clientId, 'clientId');

    const inFile = new Set((seed.organizations ?? []).map((organization) => organization.id.toLowerCase()));
    const inDatabase = new Map<string, boolean>();
    const check = async (entry: string, ids: readonly string[] | undefined): Promise<void> => {
      for (const id of lower(ids)) {
        if (inFile.has(id)) continue;
        if (!inDatabase.has(id)) inDatabase.set(id, (await this.store.organizations.get(id)) !== undefined);
        if (!inDatabase.get(id)) fail(`${entry} names organization ${id} which is neither in the file nor in the database`);
      }
    };
    for (const [index, patient] of (seed.patients ?? []).entries()) {
      await check(`patients[${index}] (id ${patient.id.toLowerCase()})`, [...(patient.organizations ?? []), ...(patient.consents ?? [])]);
    }
    for (const [index, client] of (seed.clients ?? []).entries()) {
      await check(`clients[${index}] (clientId ${client.clientId})`, client.organizations);
    }
    await this.checkSeedIdentifiers(seed, fail);
  }

  /**
   * Each patient's birth date is a real date and its identifiers are unique per organization and
   * system: within the entry, among the file's patients, and against the database's other patients.
   */
  private async checkSeedIdentifiers(seed: SeedFile, fail: (message: string) => never): Promise<void> {
    const inFile = new Map<string, string>();
    const filePatients = new Set((seed.patients ?? []).map((patient) => patient.id.toLowerCase()));
    for (const [index, patient] of (seed.patients ?? []).entries()) {
      const id = patient.id.toLowerCase();
      const entry = `patients[${index}] (id ${id})`;
      if (patient.birthDate !== undefined && !isBirthDate(patient.birthDate)) fail(`${entry} has birthDate ${patient.birthDate}, which must be a date YYYY-MM-DD that exists, from 1850-01-01 to today`);
      const identifiers = (patient.identifiers ?? []).map((identifier) => ({ system: identifier.system.normalize('NFC'), value: identifier.value.normalize('NFC') }));
      const repeated = repeatedIdentifier(identifiers);
      if (repeated) fail(`${entry} gives identifier ${formatIdentifier(repeated)} twice`);
      const organizations = lower(patient.organizations);
      for (const identifier of identifiers) {
        for (const organization of organizations) {
          const key = `${organization}|${formatIdentifier(identifier)}`;
          const holder = inFile.get(key);
          if (holder !== undefined) fail(`${entry} has identifier ${formatIdentifier(identifier)} of ${holder} in organization ${organization}; an identifier is unique per organization and system`);
          inFile.set(key, entry);
        }
      }
      const owners = await this.store.patients.identifierOwners(id, organizations, identifiers);
      const outside = owners.find((owner) => !filePatients.has(owner.patientId));
      if (outside) fail(`${entry} has identifier ${formatIdentifier(outside.identifier)}, which belongs to patient ${outside.patientId} in organization ${outside.organizationId}; an identifier is unique per organization and system`);
    }
  }
}

/**
 * A seed file that cannot be applied: one line naming the file and the entry, and nothing applied.
 * A ConfigError, so the server exits 2 as for any other bad configuration, and so does the CLI.
 */
export class SeedError extends ConfigError {
  override name = 'SeedError';
}

type SeedKind = 'organization' | 'patient' | 'client';

interface SeedEntry {
  key: string;
  id: string;
  hash: string;
}

/** An entry as the ledger knows it: its key and the hash of what it says (normalized: order and case of ids do not count). */
function seedEntry(kind: SeedKind, id: string, content: object): SeedEntry {
  return { key: `seed-entry:${kind}:${id}`, id, hash: createHash('sha256').update(JSON.stringify([kind, id, content])).digest('hex') };
}

/** The hashes of seed entries as last applied, in meta. */
function seedLedger(meta: MetaRepository) {
  return {
    /** True when the entry was applied before with this content and its record still exists. */
    async unchanged(entry: SeedEntry, recordExists: () => Promise<boolean>): Promise<boolean> {
      return (await meta.get(entry.key)) === entry.hash && (await recordExists());
    },
    async record(entry: SeedEntry): Promise<void> {
      await meta.set(entry.key, entry.hash);
    },
    /** The stored hash of a client's secret as the seed last left it (undefined before this was kept). */
    async appliedSecret(entry: SeedEntry): Promise<string | undefined> {
      return meta.get(`${entry.key}:secret-hash`);
    },
    async recordSecret(entry: SeedEntry, secretHash: string): Promise<void> {
      await meta.set(`${entry.key}:secret-hash`, secretHash);
    },
  };
}
