// Patients' identifiers and birth dates (docs/api.md "Patient identifiers") and an organization's
// name for its clients, through the real routes on a real server and database (this file runs on
// SQLite and again on PostgreSQL): the admin API stores them, GET /v1/patients finds by them, an
// identifier is unique per organization and system, and the webhook events carry them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeMessageBody } from '../server/webhooks/signer.js';
import { ADMIN_TOKEN, ORG, OTHER_ORG, PATIENT_WITHOUT_CONSENT, READ_ONLY_CLIENT, expectProblem, startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
const admin = { token: ADMIN_TOKEN, organization: null } as const;
const chart = (value: string) => ({ system: 'chart', value });

async function createPatient(body: Record<string, unknown>): Promise<{ status: number; body: any; headers: Headers }> {
  return server.api('POST', '/admin/v1/patients', { ...admin, body: { organizations: [ORG], consents: [ORG], ...body } });
}

let john: string;
let jon: string;

beforeAll(async () => {
  server = await startTestServer();
  const created = await createPatient({ name: 'Smith, John', identifiers: [chart('10231'), { system: 'itero', value: 'ORD|77' }], birthDate: '1984-03-02' });
  expect(created.status).toBe(201);
  john = created.body.id;
  jon = (await createPatient({ name: 'Smith, Jon', identifiers: [chart('10232')], birthDate: '1984-03-02' })).body.id;
  expect((await createPatient({ name: 'Pearson, Jane', birthDate: '1971-11-30' })).status).toBe(201);
  // The same chart number in another organization: that clinic's chart, not ours.
  expect((await createPatient({ name: 'Smith, John', organizations: [OTHER_ORG], consents: [OTHER_ORG], identifiers: [chart('10231')] })).status).toBe(201);
});
afterAll(async () => {
  await server?.close();
});

async function listed(query: string): Promise<string[]> {
  const answer = await server.api('GET', `/v1/patients?${query}`);
  expect(answer.status).toBe(200);
  expect(answer.body.total).toBe(answer.body.patients.length);
  return answer.body.patients.map((patient: { id: string }) => patient.id);
}

describe('patients carry identifiers and a birth date', () => {
  it('stores them through the admin API and shows them in GET /v1/patients', async () => {
    const shown = await server.api('GET', `/admin/v1/patients/${john}`, admin);
    expect(shown.body).toMatchObject({ identifiers: [chart('10231'), { system: 'itero', value: 'ORD|77' }], birthDate: '1984-03-02' });
    const answer = await server.api('GET', `/v1/patients?identifier=${encodeURIComponent('chart|10231')}`);
    expect(answer.body.patients).toEqual([
      { id: john, name: 'Smith, John', identifiers: [chart('10231'), { system: 'itero', value: 'ORD|77' }], birthDate: '1984-03-02', createdAt: expect.any(String), updatedAt: expect.any(String) },
    ]);
    const seeded = await server.api('GET', `/v1/patients?name=${encodeURIComponent('jane roe')}`);
    expect(seeded.body.patients[0]).toMatchObject({ name: 'Jane Roe', identifiers: [], birthDate: null });
  });

  it('filters by identifier (exact, split at the first "|"), birth date and name, combined, among the patients the organization may see', async () => {
    expect(await listed(`identifier=${encodeURIComponent('chart|10232')}`)).toEqual([jon]);
    expect(await listed(`identifier=${encodeURIComponent('itero|ORD|77')}`)).toEqual([john]);
    expect(await listed(`identifier=${encodeURIComponent('chart|1023')}`)).toEqual([]);
    expect(await listed(`identifier=${encodeURIComponent('Chart|10231')}`)).toEqual([]);
    expect(await listed('birthDate=1984-03-02')).toEqual([john, jon]);
    expect(await listed(`birthDate=1984-03-02&name=${encodeURIComponent('jon smith')}`)).toEqual([jon]);
    expect(await listed(`birthDate=1984-03-02&name=smith&identifier=${encodeURIComponent('chart|10231')}`)).toEqual([john]);
    expect(await listed(`birthDate=1984-03-03&identifier=${encodeURIComponent('chart|10231')}`)).toEqual([]);
    // A patient without consent is not found by its identifier, though it holds it.
    expect((await server.api('PATCH', `/admin/v1/patients/${PATIENT_WITHOUT_CONSENT}`, { ...admin, body: { identifiers: [chart('55555')] } })).status).toBe(200);
    expect(await listed(`identifier=${encodeURIComponent('chart|55555')}`)).toEqual([]);
    // The admin API lists every patient with the same filters.
    const everywhere = await server.api('GET', `/admin/v1/patients?identifier=${encodeURIComponent('chart|10231')}`, admin);
    expect(everywhere.body.patients.map((patient: { organizations: string[] }) => patient.organizations[0]).sort()).toEqual([ORG, OTHER_ORG].sort());
  });

  it('refuses malformed filters with a 400 problem naming the parameter', async () => {
    for (const query of ['identifier=chart', 'identifier=%7C10231', 'identifier=chart%7C', `identifier=${encodeURIComponent('chart| 10231')}`, 'identifier=a%7C1&identifier=b%7C2']) {
      const problem = expectProblem(await server.api('GET', `/v1/patients?${query}`), 400);
      expect(problem.messageKey).toBe('VALIDATION_ERROR');
      expect(problem.detail).toMatch(/identifier/);
    }
    for (const date of ['1984-02-30', '1984-3-2', '02.03.1984', '2999-01-01', '1849-12-31']) {
      const problem = expectProblem(await server.api('GET', `/v1/patients?birthDate=${encodeURIComponent(date)}`), 400);
      expect(problem.detail).toMatch(/birthDate/);
    }
  });

  it('refuses bad identifiers and birth dates in the admin API with a 400 problem', async () => {
    const bodies: Record<string, unknown>[] = [
      { birthDate: '2023-02-29' },
      { birthDate: '2999-12-31' },
      { birthDate: '19840302' },
      { identifiers: [{ system: 'chart|x', value: '1' }] },
      { identifiers: [{ system: 'chart', value: '' }] },
      { identifiers: [{ system: ' chart', value: '1' }] },
      { identifiers: [{ system: 'chart', value: '1 ' }] },
      { identifiers: [{ system: 'chart', value: 'x'.repeat(129) }] },
      { identifiers: [{ system: 'chart', value: '1\u0000' }] },
      { identifiers: [{ system: 'chart', value: '1', use: 'official' }] },
      { identifiers: [chart('1'), chart('1')] },
    ];
    for (const body of bodies) {
      const problem = expectProblem(await createPatient({ name: 'Bad Input', ...body }), 400);
      expect(problem.detail).toMatch(/identifiers|birthDate/);
    }
    expectProblem(await server.api('PATCH', `/admin/v1/patients/${jon}`, { ...admin, body: { birthDate: '1984-04-31' } }), 400);
  });

  it('keeps an identifier unique per organization and system: a second patient of the organization with it is 409', async () => {
    const second = expectProblem(await createPatient({ name: 'Smith, Joan', identifiers: [chart('10231')] }), 409);
    expect(second.messageKey).toBe('CONFLICT');
    expect(second.detail).toContain('chart|10231');
    expect(second.detail).toContain(john);
    expectProblem(await server.api('PATCH', `/admin/v1/patients/${jon}`, { ...admin, body: { identifiers: [chart('10232'), chart('10231')] } }), 409);
    // The other organization's patient with chart 10231 cannot join this organization either.
    const other = (await server.api('GET', `/admin/v1/patients?identifier=${encodeURIComponent('chart|10231')}`, admin)).body.patients.find((patient: { organizations: string[] }) => patient.organizations[0] === OTHER_ORG);
    expectProblem(await server.api('PATCH', `/admin/v1/patients/${other.id}`, { ...admin, body: { organizations: [OTHER_ORG, ORG] } }), 409);
    // Another system with the same value is another identifier.
    expect((await createPatient({ name: 'Smith, Joan', identifiers: [{ system: 'national', value: '10231' }] })).status).toBe(201);
    expect(await listed(`identifier=${encodeURIComponent('chart|10231')}`)).toEqual([john]);
  });

  it('announces them in patient.created and patient.updated; a PATCH replaces the list and null removes the birth date', async () => {
    const created = await createPatient({ name: 'Pearson, Jon', identifiers: [chart('20001')], birthDate: '2001-09-09' });
    const updated = await server.api('PATCH', `/admin/v1/patients/${created.body.id}`, { ...admin, body: { identifiers: [chart('20002'), { system: 'medit', value: 'M-1' }], birthDate: null } });
    expect(updated.body).toMatchObject({ identifiers: [chart('20002'), { system: 'medit', value: 'M-1' }], birthDate: null });
    const unchanged = await server.api('PATCH', `/admin/v1/patients/${created.body.id}`, { ...admin, body: { identifiers: [chart('20002'), { system: 'medit', value: 'M-1' }] } });
    expect(unchanged.body.updatedAt).toBe(updated.body.updatedAt);

    const events = (await server.server.context.store.outbox.after(0, 1000)).filter((event) => event.patientId === created.body.id);
    expect(events.map((event) => event.eventType)).toEqual(['patient.created', 'patient.updated']);
    // The bytes a subscriber receives: the body composed from the stored event.
    const bodies = events.map((event) => JSON.parse(composeMessageBody({ ...event, dataJson: JSON.stringify(event.data) }, event.eventType, event.patientId, 'message', ORG)));
    expect(bodies[0].data.patient).toEqual({ id: created.body.id, name: 'Pearson, Jon', identifiers: [chart('20001')], birthDate: '2001-09-09', createdAt: created.body.createdAt, updatedAt: created.body.updatedAt });
    expect(bodies[1].data.patient).toMatchObject({ identifiers: [chart('20002'), { system: 'medit', value: 'M-1' }], birthDate: null });
  });
});

describe('GET /v1/organizations/{id}: the name of the caller\'s organization', () => {
  it('answers id and name to a client of the organization, with any scope', async () => {
    const answer = await server.api('GET', `/v1/organizations/${ORG.toUpperCase()}`, { organization: null });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ id: ORG, name: 'Smile Clinic' });
    const readOnly = await server.api('GET', `/v1/organizations/${ORG}`, { organization: null, token: await server.token(READ_ONLY_CLIENT) });
    expect(readOnly.body).toEqual({ id: ORG, name: 'Smile Clinic' });
  });

  it('refuses another organization (403), a malformed id (400) and a request without a token (401)', async () => {
    expectProblem(await server.api('GET', `/v1/organizations/${OTHER_ORG}`, { organization: null }), 403);
    expectProblem(await server.api('GET', '/v1/organizations/0b7c6a52-0000-4000-8000-000000000000', { organization: null }), 403);
    expectProblem(await server.api('GET', '/v1/organizations/smile-clinic', { organization: null }), 400);
    expectProblem(await server.api('GET', `/v1/organizations/${ORG}`, { organization: null, token: null }), 401);
  });
});
