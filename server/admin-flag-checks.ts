/**
 * The admin CLI's flags checked against the admin API's own body schemas. Loaded by the commands
 * that take such flags only: the schemas (typebox) and the validator (ajv) take about a third of a
 * second to load, which a command that only lists need not pay.
 */
import type { Ajv } from 'ajv';
import type { TSchema } from 'typebox';
import { Type } from 'typebox';
import { createAjv, ruleOf } from '../shared/ajv.js';
import { ClientId, Uuid } from '../shared/schemas.js';
import { InputError } from './admin-cli-common.js';

export { AdminClientBody, AdminOrderBody, AdminOrderPatch, AdminOrganizationBody, AdminPatientBody, AdminPatientPatch } from '../shared/schemas.js';

/** The flag a field of an admin API body comes from, where the two names differ. */
const FLAG_OF: Record<string, string> = {
  organizations: 'organization',
  organizationId: 'organization',
  consents: 'consent',
  patientId: 'patient',
  scopes: 'scope',
  clientId: 'client-id',
  documentId: 'document',
};

let ajv: Ajv | undefined;

/**
 * Checks what the flags say against the admin API's own body schema, so the CLI accepts exactly
 * what the API accepts (a patient id that is no UUID would be stored, and no route could reach it).
 */
export function checked<T extends Record<string, unknown>>(schema: TSchema, input: T): T {
  const body = Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));
  ajv ??= createAjv({ coerceTypes: false, removeAdditional: false });
  const validate = ajv.compile(schema);
  if (validate(body)) return body as T;
  const first = validate.errors?.[0];
  const field = first?.instancePath.split('/')[1] ?? '';
  const flag = FLAG_OF[field] ?? field;
  const value = field ? JSON.stringify(first?.instancePath.split('/').slice(1).reduce<unknown>((at, key) => (at as Record<string, unknown>)?.[key], body)) : '';
  throw new InputError(`--${flag} ${value} ${ruleOf(first)}`.replace(/\s+/g, ' '));
}

export const IdFlags = Type.Object({ id: Uuid });
export const ClientFlags = Type.Object({ clientId: ClientId });
export const ConsentFlags = Type.Object({ patientId: Uuid, organizationId: Uuid });
