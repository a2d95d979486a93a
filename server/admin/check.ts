/** The admin CLI's flags checked against a JSON schema (of the admin API), with one line naming the flag. */
import type { Ajv } from 'ajv';
import { createAjv, ruleOf } from '../../shared/ajv.js';
import { InputError } from './cli-common.js';

/** The flag a field of an admin API body comes from, where the two names differ. */
const FLAG_OF: Record<string, string> = {
  organizations: 'organization',
  organizationId: 'organization',
  consents: 'consent',
  patientId: 'patient',
  scopes: 'scope',
  clientId: 'client-id',
  documentId: 'document',
  identifiers: 'identifier',
  birthDate: 'birth-date',
};

let ajv: Ajv | undefined;

/**
 * Checks what the flags say against the admin API's own body schema, so the CLI accepts exactly
 * what the API accepts (a patient id that is no UUID would be stored, and no route could reach it).
 */
export function checked<T extends Record<string, unknown>>(schema: object, input: T): T {
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
