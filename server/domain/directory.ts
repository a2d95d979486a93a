/**
 * Organizations, patients, consents, clients and orders: what IT manages through the admin API,
 * the admin CLI and the seed file. Changes that integrators hear about are written with their
 * outbox events in one transaction.
 */
import { randomUUID } from 'node:crypto';
import type { AdminClientDto, AdminPatientDto, OrderDto, OrganizationDto, SeedFile } from '../../shared/schemas.js';
import type { ClientRecord, OrderRecord, PatientRecord, Store } from '../db/types.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { generateSecret, hashSecret, verifySecret } from '../identity/secrets.js';
import { outboxEvent } from './events.js';

export interface PatientInput {
  id?: string | undefined;
  name: string;
  organizations?: string[] | undefined;
  consents?: string[] | undefined;
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
  return { ...patient };
}

function clientDto(client: ClientRecord, secret?: string): AdminClientDto {
  const dto: AdminClientDto = { clientId: client.clientId, name: client.name, scopes: client.scopes, organizations: client.organizations, createdAt: client.createdAt };
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
      data: { patient: { id: patient.id, name: patient.name, createdAt: patient.createdAt, updatedAt: patient.updatedAt } },
    });
  }

  async createPatient(input: PatientInput, operationId: string = randomUUID()): Promise<AdminPatientDto> {
    const id = (input.id ?? randomUUID()).toLowerCase();
    if (await this.store.patients.get(id)) throw conflict(`patient ${id} already exists`);
    const organizations = lower(input.organizations);
    const consents = lower(input.consents);
    await this.requireOrganizations([...organizations, ...consents]);
    const timestamp = this.now().toISOString();
    const patient: PatientRecord = { id, name: input.name, organizations, consents, createdAt: timestamp, updatedAt: timestamp };
    await this.store.patients.create(patient, [this.patientEvent('patient.created', patient, operationId)]);
    return patientDto(patient);
  }

  async updatePatient(id: string, patch: Partial<Omit<PatientInput, 'id'>>, operationId: string = randomUUID()): Promise<AdminPatientDto> {
    const existing = await this.store.patients.get(id.toLowerCase());
    if (!existing) throw notFound(`patient ${id} does not exist`);
    const organizations = patch.organizations ? lower(patch.organizations) : existing.organizations;
    const consents = patch.consents ? lower(patch.consents) : existing.consents;
    await this.requireOrganizations([...organizations, ...consents]);
    const updated: PatientRecord = { ...existing, name: patch.name ?? existing.name, organizations, consents, updatedAt: this.now().toISOString() };
    await this.store.patients.update(updated, [this.patientEvent('patient.updated', updated, operationId)]);
    return patientDto(updated);
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

  async listClients(): Promise<AdminClientDto[]> {
    return (await this.store.clients.list()).map((client) => clientDto(client));
  }

  async createOrder(input: { patientId: string; organizationId: string; status: string }, operationId: string = randomUUID()): Promise<OrderDto> {
    const patientId = input.patientId.toLowerCase();
    const organizationId = input.organizationId.toLowerCase();
    if (!(await this.store.patients.get(patientId))) throw badRequest(`patient ${input.patientId} does not exist`);
    await this.requireOrganizations([organizationId]);
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

  /** Applies a seed file; re-applying the same file changes nothing and emits nothing. */
  async applySeed(seed: SeedFile): Promise<{ created: number; updated: number }> {
    let created = 0;
    let updated = 0;
    for (const organization of seed.organizations ?? []) {
      const outcome = await this.store.organizations.upsert({ id: organization.id.toLowerCase(), name: organization.name, createdAt: this.now().toISOString() });
      if (outcome === 'created') created += 1;
      if (outcome === 'updated') updated += 1;
    }
    for (const patient of seed.patients ?? []) {
      const existing = await this.store.patients.get(patient.id.toLowerCase());
      if (!existing) {
        await this.createPatient(patient);
        created += 1;
        continue;
      }
      const organizations = lower([...existing.organizations, ...(patient.organizations ?? [])]);
      const consents = lower([...existing.consents, ...(patient.consents ?? [])]);
      const changed = existing.name !== patient.name || organizations.join() !== existing.organizations.join() || consents.join() !== existing.consents.join();
      if (changed) {
        await this.updatePatient(existing.id, { name: patient.name, organizations, consents });
        updated += 1;
      }
    }
    for (const client of seed.clients ?? []) {
      const existing = await this.store.clients.get(client.clientId);
      if (!existing) {
        await this.createClient({ ...client, name: client.name ?? client.clientId });
        created += 1;
        continue;
      }
      const organizations = lower(client.organizations);
      const scopes = [...new Set(client.scopes)];
      const sameSecret = await verifySecret(client.clientSecret, existing.secretHash);
      const changed = !sameSecret || organizations.join() !== existing.organizations.join() || scopes.join() !== existing.scopes.join() || (client.name ?? client.clientId) !== existing.name;
      if (changed) {
        await this.store.clients.update({
          ...existing,
          name: client.name ?? client.clientId,
          scopes,
          organizations,
          secretHash: sameSecret ? existing.secretHash : await hashSecret(client.clientSecret),
        });
        updated += 1;
      }
    }
    return { created, updated };
  }
}
