/** Authorization of SPEC §5.3–5.4: scope, organization membership, patient access and consent. */
import type { Principal } from '../identity/tokens.js';
import type { ClientRepository, PatientAccess, PatientGrant, PatientRepository } from '../db/types.js';
import { forbidden, notFound, unauthorized } from '../errors.js';

/** How long a client's organizations and disabled state are kept (one process: the embedded database). */
export const MEMBERSHIP_TTL_MS = 5000;

export class AccessGuard {
  /** Client → organizations, briefly cached: the hot path asks on every request. */
  private readonly memberships = new Map<string, { organizations: ReadonlySet<string>; disabled: boolean; loadedAt: number }>();

  constructor(
    private readonly clients: ClientRepository,
    private readonly patients: PatientRepository,
    private readonly now: () => number = Date.now,
    private readonly membershipTtlMs = MEMBERSHIP_TTL_MS,
  ) {}

  requireScope(principal: Principal, scope: string): void {
    if (!principal.scopes.has(scope)) throw forbidden(`the token lacks the scope ${scope}`);
  }

  private async membership(clientId: string): Promise<{ organizations: ReadonlySet<string>; disabled: boolean }> {
    const cached = this.knownMembership(clientId);
    if (cached) return cached;
    const client = await this.clients.get(clientId);
    const entry = { organizations: new Set(client?.organizations ?? []), disabled: !client || client.disabledAt !== null, loadedAt: this.now() };
    this.memberships.set(clientId, entry);
    return entry;
  }

  private knownMembership(clientId: string): { organizations: ReadonlySet<string>; disabled: boolean } | undefined {
    const cached = this.memberships.get(clientId);
    return cached && this.now() - cached.loadedAt < this.membershipTtlMs ? cached : undefined;
  }

  async requireOrganization(principal: Principal, organizationId: string): Promise<void> {
    checkMembership(principal, organizationId, await this.membership(principal.clientId));
  }

  /**
   * The whole check of a request for a patient's files (organization, patient, access, consent),
   * without a turn of the event loop when the answers are known (the usual case: the same client
   * asking about the same patients); a promise when something must be read first.
   */
  requirePatientOf(principal: Principal, organizationId: string, patientId: string): PatientAccess | Promise<PatientAccess> {
    const membership = this.knownMembership(principal.clientId);
    const known = membership && this.patients.knownAccess?.(patientId, organizationId);
    if (membership && known) {
      checkMembership(principal, organizationId, membership);
      return checkAccess(known, organizationId, patientId);
    }
    return this.requireOrganization(principal, organizationId).then(() => this.requirePatient(organizationId, patientId));
  }

  async organizationsOf(principal: Principal): Promise<ReadonlySet<string>> {
    return (await this.membership(principal.clientId)).organizations;
  }

  /**
   * Why the holder of a signed link may no longer read this patient's files, or undefined when it
   * may: the link outlives the token that asked for it (15 minutes), not the client's registration,
   * its organization, nor the patient's consent (SPEC §1, §5.3).
   */
  async linkHolderRefusal(clientId: string, organizationId: string, patientId: string): Promise<string | undefined> {
    const membership = await this.membership(clientId);
    if (membership.disabled) return `the client ${clientId} this link was handed to is no longer registered or has been disabled`;
    if (!membership.organizations.has(organizationId)) return `the client ${clientId} this link was handed to has no access to organization ${organizationId} any more`;
    const access = await this.patients.access(patientId, organizationId);
    if (!access.access) return `organization ${organizationId} has no access to patient ${patientId} any more`;
    if (!access.consent) return `patient ${patientId} has withdrawn consent from organization ${organizationId}`;
    return undefined;
  }

  /** 404 for an unknown patient; 403 without organization access or without consent. */
  async requirePatient(organizationId: string, patientId: string): Promise<PatientAccess> {
    return checkAccess(await this.patients.access(patientId.toLowerCase(), organizationId.toLowerCase()), organizationId, patientId);
  }
}

function checkMembership(principal: Principal, organizationId: string, membership: { organizations: ReadonlySet<string>; disabled: boolean }): void {
  if (membership.disabled) throw unauthorized('the client is not registered or has been disabled');
  if (!membership.organizations.has(organizationId.toLowerCase())) {
    throw forbidden(`the client ${principal.clientId} has no access to organization ${organizationId}`);
  }
}

/** 404 for an unknown patient; 403 without organization access or without consent; else the answer itself. */
export function checkAccess<T extends PatientGrant>(access: T, organizationId: string, patientId: string): T {
  if (!access.exists) throw notFound(`patient ${patientId} does not exist`);
  if (!access.access) throw forbidden(`organization ${organizationId} has no access to patient ${patientId}`);
  if (!access.consent) throw forbidden(`patient ${patientId} has not given consent to organization ${organizationId}`);
  return access;
}
