/**
 * Who is a patient of the clinic is personal data too: every listing of GET /v1/patients, allowed
 * or refused, is in the audit log with its name filter and result count (a real server on a real
 * socket, real SQLite), and the DPO can filter the log for it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, CLIENT, OTHER_ORG, ORG, startTestServer, type TestServer } from './helpers/server.js';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});

afterAll(async () => {
  await t?.close();
});

async function audit(query: Record<string, string>): Promise<{ status: number; entries: any[] }> {
  const response = await fetch(`${t.url}/admin/v1/audit?${new URLSearchParams(query)}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const body = (await response.json()) as { entries?: any[] };
  return { status: response.status, entries: body.entries ?? [] };
}

describe('the audit log of patient listings', () => {
  it('records a listing with its filter and count, and a refused one with its reason', async () => {
    const listed = await t.api('GET', '/v1/patients?name=jane&limit=10');
    expect(listed.status).toBe(200);
    expect(listed.body.patients.map((patient: { name: string }) => patient.name)).toEqual(['Jane Roe']);
    const otherOrganization = await t.api('GET', '/v1/patients', { organization: OTHER_ORG });
    expect(otherOrganization.status).toBe(403);
    const noToken = await t.api('GET', '/v1/patients', { token: null });
    expect(noToken.status).toBe(401);
    // Searches of files are not listings: the filter keeps them apart.
    expect((await t.api('POST', '/v1/patients/5f0e8a3c-1d2b-4c3d-8e9f-000000000001/documents/search', { body: {} })).status).toBe(200);

    const { status, entries } = await audit({ action: 'list-patients' });
    expect(status).toBe(200);
    expect(entries).toHaveLength(3);
    const [unauthenticated, refused, allowed] = entries;
    expect(allowed).toMatchObject({ action: 'list-patients', outcome: 'allowed', status: 200, clientId: CLIENT.id, organizationId: ORG, patientId: null });
    expect(allowed.detail).toMatchObject({ name: 'jane', results: 1, total: 1 });
    expect(refused).toMatchObject({ action: 'list-patients', outcome: 'refused', status: 403, clientId: CLIENT.id, organizationId: OTHER_ORG });
    expect(refused.detail.reason).toMatch(/organization/i);
    expect(unauthenticated).toMatchObject({ action: 'list-patients', outcome: 'refused', status: 401, clientId: null });
  });

  it('refuses an unknown action filter with problem details naming the known ones', async () => {
    const response = await fetch(`${t.url}/admin/v1/audit?action=list-everyone`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(JSON.stringify(await response.json())).toMatch(/list-patients/);
  });
});
