/**
 * The admin CLI's flags checked against the admin API's own body schemas. Loaded by the commands
 * that take such flags only: the schemas (typebox, one file: scripts/build-typebox.mjs) and the
 * validator (ajv) take about a fifth of a second to load, which a command that only lists need not pay.
 */
import { Type } from '#typebox';
import { parseIdentifierFilter, type PatientIdentifier } from '../../shared/patient-identifiers.js';
import { ClientId, Uuid } from '../../shared/schemas.js';
import { InputError } from './cli-common.js';

export { checked } from './check.js';
export { AdminClientBody, AdminOrderBody, AdminOrderPatch, AdminOrganizationBody, AdminPatientBody, AdminPatientPatch } from '../../shared/schemas.js';

export const IdFlags = Type.Object({ id: Uuid });
export const ClientFlags = Type.Object({ clientId: ClientId });
export const ConsentFlags = Type.Object({ patientId: Uuid, organizationId: Uuid });

/**
 * `--identifier 'chart|10231'` (repeatable) as a patient's identifiers; `--identifier none` alone
 * is the empty list (an update then removes them); no flag leaves them out.
 */
export function identifierFlags(flags: readonly string[] | undefined): PatientIdentifier[] | undefined {
  if (flags === undefined) return undefined;
  if (flags.length === 1 && flags[0] === 'none') return [];
  return flags.map((flag) => {
    const identifier = parseIdentifierFilter(flag);
    if (!identifier) throw new InputError(`--identifier ${JSON.stringify(flag)} must be system|value (e.g. 'chart|10231', quoted for the shell), or none`);
    return identifier;
  });
}
