/**
 * The admin CLI's flags checked against the admin API's own body schemas. Loaded by the commands
 * that take such flags only: the schemas (typebox) and the validator (ajv) take about a third of a
 * second to load, which a command that only lists need not pay.
 */
import { Type } from 'typebox';
import { ClientId, Uuid } from '../../shared/schemas.js';

export { checked } from './check.js';
export { AdminClientBody, AdminOrderBody, AdminOrderPatch, AdminOrganizationBody, AdminPatientBody, AdminPatientPatch } from '../../shared/schemas.js';

export const IdFlags = Type.Object({ id: Uuid });
export const ClientFlags = Type.Object({ clientId: ClientId });
export const ConsentFlags = Type.Object({ patientId: Uuid, organizationId: Uuid });
