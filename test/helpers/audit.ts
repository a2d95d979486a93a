/** Audit entries for the audit log's unit tests: entry n came in n ms after 09:30 UTC on 2026-11-21. */
import type { AuditEntryRecord } from '../../server/db/types.js';

export const AUDITED_PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';

export function auditEntry(index: number, overrides: Partial<AuditEntryRecord> = {}): AuditEntryRecord {
  return {
    at: new Date(Date.UTC(2026, 10, 21, 9, 30, 0, index)).toISOString(),
    action: 'download',
    outcome: 'allowed',
    status: 200,
    organizationId: '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01',
    clientId: 'scanner-pc-1',
    patientId: AUDITED_PATIENT,
    documentId: null,
    version: 1,
    requestId: `request-${index}`,
    remoteAddress: '10.0.0.7',
    detail: { bytes: index },
    ...overrides,
  };
}
