/** Issue 2: the full negative matrix — each case with its exact status and a problem-details body. */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT, exportSPKI, importJWK, type JWK } from 'jose';
import {
  ORG,
  OTHER_ORG,
  OTHER_ORG_PATIENT,
  PATIENT,
  PATIENT_WITHOUT_CONSENT,
  READ_ONLY_CLIENT,
  CLIENT,
  expectProblem,
  startTestServer,
  type TestServer,
} from './helpers/server.js';

let server: TestServer;
let validToken: string;

beforeAll(async () => {
  server = await startTestServer();
  validToken = await server.token();
});
afterAll(async () => server.close());

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A token signed with the server's real key but with chosen claims. */
async function forge(claims: Record<string, unknown>, options: { expiresIn?: number; notBefore?: number; issuedAt?: number } = {}): Promise<string> {
  const { kid, privateKey } = await server.server.context.keys.activeKey();
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ scp: 'Patient.File.Read Patient.File.Write', azp: CLIENT.id, ver: '2.0', ...claims })
    .setProtectedHeader({ alg: 'RS256', kid })
    .setIssuedAt(options.issuedAt ?? now)
    .setNotBefore(options.notBefore ?? now)
    .setExpirationTime(now + (options.expiresIn ?? 600))
    .setSubject(CLIENT.id)
    .setIssuer((claims.iss as string) ?? server.url)
    .setAudience((claims.aud as string) ?? 'api://patient-docs')
    .sign(privateKey);
}

const create = (token: string | null, patientId = PATIENT, organization: string | null | undefined = undefined) =>
  server.api('POST', `/v1/patients/${patientId}/documents`, { token, organization, body: { fileName: `m-${Math.random()}.stl` } });

describe('401: token problems', () => {
  it('no token', async () => {
    const problem = expectProblem(await create(null), 401);
    expect(problem.messageKey).toBe('UNAUTHORIZED');
    expect(problem.detail).toContain('Authorization');
  });

  it('garbage', async () => {
    expectProblem(await create('not.a.jwt'), 401);
    expectProblem(await server.api('POST', `/v1/patients/${PATIENT}/documents`, { token: null, headers: { authorization: 'Basic abc' }, body: { fileName: 'a.stl' } }), 401);
  });

  it('tampered signature and tampered payload', async () => {
    const [header, payload, signature] = validToken.split('.') as [string, string, string];
    const flipped = `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
    expectProblem(await create(`${header}.${payload}.${flipped}`), 401);
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const escalated = base64url({ ...claims, scp: 'Patient.File.Write Patient.File.Read Webhook.Manage', azp: 'someone-else' });
    expectProblem(await create(`${header}.${escalated}.${signature}`), 401);
  });

  it('alg: none', async () => {
    const payload = JSON.parse(Buffer.from(validToken.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
    const token = `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url(payload)}.`;
    expect(expectProblem(await create(token), 401).detail).toMatch(/algorithm|malformed|invalid/);
  });

  it('HS256 signed with the public key', async () => {
    const jwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: JWK[] };
    const publicKey = await importJWK(jwks.keys[0]!, 'RS256', { extractable: true });
    const pem = await exportSPKI(publicKey as CryptoKey);
    const payload = JSON.parse(Buffer.from(validToken.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
    for (const secret of [pem, JSON.stringify(jwks.keys[0])]) {
      const signingInput = `${base64url({ alg: 'HS256', typ: 'JWT', kid: jwks.keys[0]!.kid })}.${base64url(payload)}`;
      const signature = createHmac('sha256', secret).update(signingInput).digest('base64url');
      expect(expectProblem(await create(`${signingInput}.${signature}`), 401).detail).toContain('algorithm');
    }
  });

  it('expired', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await forge({}, { issuedAt: now - 4000, notBefore: now - 4000, expiresIn: -3600 });
    expect(expectProblem(await create(token), 401).detail).toBe('token has expired');
  });

  it('not yet valid', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await forge({}, { notBefore: now + 600 });
    expect(expectProblem(await create(token), 401).detail).toBe('token is not valid yet');
  });

  it('wrong audience', async () => {
    expect(expectProblem(await create(await forge({ aud: 'api://someone-else' })), 401).detail).toBe('token audience is not this API');
  });

  it('wrong issuer', async () => {
    expect(expectProblem(await create(await forge({ iss: 'https://evil.example' })), 401).detail).toBe('token issuer is not trusted');
  });

  it('a valid token of a client that does not exist', async () => {
    expectProblem(await create(await forge({ azp: 'ghost-client' })), 401);
  });
});

describe('400: request problems', () => {
  it('missing Organization-ID', async () => {
    expect(expectProblem(await create(validToken, PATIENT, null), 400).detail).toContain('organization-id');
  });

  it('invalid Organization-ID', async () => {
    expect(expectProblem(await create(validToken, PATIENT, 'not-a-uuid'), 400).detail).toContain('headers/organization-id must be a UUID');
  });

  it('invalid patient UUID', async () => {
    expect(expectProblem(await create(validToken, 'patient-1'), 400).detail).toContain('params/patientId must be a UUID');
  });
});

describe('403: authorization problems', () => {
  it('missing scope (a read-only client creating)', async () => {
    const readOnly = await server.token(READ_ONLY_CLIENT);
    const problem = expectProblem(await create(readOnly), 403);
    expect(problem.messageKey).toBe('FORBIDDEN');
    expect(problem.detail).toContain('Patient.File.Write');
  });

  it('missing scope on search (a token narrowed to write only)', async () => {
    const writeOnly = await server.token(CLIENT, 'Patient.File.Write');
    expect(expectProblem(await server.api('POST', `/v1/patients/${PATIENT}/documents/search`, { token: writeOnly, body: {} }), 403).detail).toContain('Patient.File.Read');
  });

  it('an organization that is not the client’s', async () => {
    expect(expectProblem(await create(validToken, PATIENT, OTHER_ORG), 403).detail).toContain('no access to organization');
  });

  it('a patient the organization has no access to', async () => {
    expect(expectProblem(await create(validToken, OTHER_ORG_PATIENT), 403).detail).toContain('has no access to patient');
  });

  it('a patient without consent', async () => {
    expect(expectProblem(await create(validToken, PATIENT_WITHOUT_CONSENT), 403).detail).toContain('consent');
    expectProblem(await server.api('POST', `/v1/patients/${PATIENT_WITHOUT_CONSENT}/documents/search`, { body: {} }), 403);
  });
});

describe('404', () => {
  it('an unknown patient', async () => {
    const problem = expectProblem(await create(validToken, '11111111-2222-4333-8444-555555555555'), 404);
    expect(problem.messageKey).toBe('NOT_FOUND');
  });

  it('a refused patient is told before a body that breaks a rule (404, 403, then 400)', async () => {
    const broken = (patientId: string) => server.api('POST', `/v1/patients/${patientId}/documents`, { token: validToken, body: { fileName: 'a/b.stl' } });
    expectProblem(await broken('11111111-2222-4333-8444-555555555555'), 404);
    expect(expectProblem(await broken(OTHER_ORG_PATIENT), 403).detail).toContain('has no access to patient');
    expect(expectProblem(await broken(PATIENT_WITHOUT_CONSENT), 403).detail).toContain('consent');
    expect(expectProblem(await broken(PATIENT), 400).detail).toContain("must not contain '/'");
  });
});

describe('admin API', () => {
  it('refuses a missing or wrong admin token', async () => {
    expectProblem(await server.api('GET', '/admin/v1/organizations', { token: null }), 401);
    expectProblem(await server.api('GET', '/admin/v1/organizations', { token: 'wrong' }), 401);
  });

  it.each([
    ['/admin/v1/patients', { name: '   ' }],
    ['/admin/v1/patients', { name: 'Jane\u0000Roe' }],
    ['/admin/v1/patients', { name: 'Jane \u202EeoR' }],
    ['/admin/v1/organizations', { name: 'Clinic\nBranch' }],
    ['/admin/v1/clients', { name: '\u2067Front desk', scopes: [], organizations: [] }],
  ])('refuses a blank name or one with control characters at %s (%j)', async (route, body) => {
    const problem = expectProblem(await server.api('POST', route, { token: 'test-admin-token-0123456789', body }), 400);
    expect(problem.detail).toBe('body/name must not be blank or contain control characters');
  });

  it.each([
    ['POST', '/admin/v1/patients', { name: 'Typo Patient', consent: [OTHER_ORG] }, 'consent'],
    ['POST', '/admin/v1/organizations', { name: 'Clinic', adress: 'x' }, 'adress'],
    ['POST', '/admin/v1/clients', { name: 'PC', scopes: [], organizations: [], secret: 'x' }, 'secret'],
  ])('refuses an unknown key instead of ignoring it (%s %s)', async (method, route, body, key) => {
    const problem = expectProblem(await server.api(method, route, { token: 'test-admin-token-0123456789', body }), 400);
    expect(problem.detail).toBe(`body must not have the key "${key}"`);
  });

  it('refuses an order for an organization without access to the patient (its events would reach others only)', async () => {
    const problem = expectProblem(await server.api('POST', '/admin/v1/orders', { token: 'test-admin-token-0123456789', body: { patientId: PATIENT, organizationId: OTHER_ORG, status: 'new' } }), 409);
    expect(problem.detail).toContain('has no access to patient');
    expect((await server.api('POST', '/admin/v1/orders', { token: 'test-admin-token-0123456789', body: { patientId: PATIENT, organizationId: ORG, status: 'new' } })).status).toBe(201);
  });

  it('announces a patient change only when something changed (a consent granted twice, an empty patch)', async () => {
    const admin = (method: string, route: string, body?: unknown) => server.api(method, route, { token: 'test-admin-token-0123456789', ...(body === undefined ? {} : { body }) });
    const created = await admin('POST', '/admin/v1/patients', { name: 'Quiet Patient', organizations: [ORG], consents: [] });
    const updates = async () => (await server.server.context.store.outbox.after(0, 100_000)).filter((event) => event.eventType === 'patient.updated' && event.patientId === created.body.id).length;
    expect((await admin('PUT', `/admin/v1/patients/${created.body.id}/consents/${ORG}`)).status).toBe(200);
    expect(await updates()).toBe(1);
    expect((await admin('PUT', `/admin/v1/patients/${created.body.id}/consents/${ORG}`)).body.consents).toEqual([ORG]);
    expect((await admin('PATCH', `/admin/v1/patients/${created.body.id}`, {})).status).toBe(200);
    expect((await admin('PATCH', `/admin/v1/patients/${created.body.id}`, { name: 'Quiet Patient' })).status).toBe(200);
    expect(await updates()).toBe(1);
  });

  it('lists every patient by name for IT, whatever organization may see them, paginated with a total', async () => {
    const admin = { token: 'test-admin-token-0123456789' };
    const all = await server.api('GET', '/admin/v1/patients?limit=1000', admin);
    expect(all.status).toBe(200);
    const names = all.body.patients.map((patient: { name: string }) => patient.name);
    expect(names).toEqual(expect.arrayContaining(['Jane Roe', 'John Doe (no consent)', 'Other Clinic Patient']));
    expect(all.body.total).toBe(all.body.patients.length);
    const jane = await server.api('GET', '/admin/v1/patients?name=JANE', admin);
    expect(jane.body.patients.map((patient: { name: string }) => patient.name)).toEqual(['Jane Roe']);
    expect(jane.body.patients[0]).toMatchObject({ id: PATIENT, organizations: [ORG], consents: [ORG] });
    const page = await server.api('GET', '/admin/v1/patients?limit=1&offset=1', admin);
    expect(page.body).toMatchObject({ offset: 1, limit: 1, total: all.body.total });
    expect(page.body.patients).toHaveLength(1);
    expectProblem(await server.api('GET', '/admin/v1/patients', { token: null }), 401);
  });

  it('accepts names in any script', async () => {
    const created = await server.api('POST', '/admin/v1/patients', { token: 'test-admin-token-0123456789', body: { name: '\u05D3\u05E0\u05D4 \u05DB\u05D4\u05DF (Dana Cohen)' } });
    expect(created.status).toBe(201);
  });

  it('creates a client whose secret is shown once and works at the token endpoint', async () => {
    const admin = 'test-admin-token-0123456789';
    const created = await server.api('POST', '/admin/v1/clients', {
      token: admin,
      body: { name: 'Front desk', scopes: ['Patient.File.Read'], organizations: ['0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01'] },
    });
    expect(created.status).toBe(201);
    expect(created.body.clientSecret).toBeTruthy();
    const listed = await server.api('GET', '/admin/v1/clients', { token: admin });
    expect(JSON.stringify(listed.body)).not.toContain(created.body.clientSecret);
    const token = await server.token({ id: created.body.clientId, secret: created.body.clientSecret });
    expect((await server.api('POST', `/v1/patients/${PATIENT}/documents/search`, { token, body: {} })).status).toBe(200);
  });

  it('disables a client (token requests refused at once, its tokens within seconds), enables it again, and rotates its secret', async () => {
    const admin = (method: string, route: string, body?: unknown) => server.api(method, route, { token: 'test-admin-token-0123456789', ...(body === undefined ? {} : { body }) });
    const created = await admin('POST', '/admin/v1/clients', { name: 'Laptop', scopes: ['Patient.File.Read'], organizations: [ORG] });
    const tokenStatus = async (secret: string) =>
      (await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: created.body.clientId, client_secret: secret }) })).status;
    const token = await server.token({ id: created.body.clientId, secret: created.body.clientSecret });
    const search = () => server.api('POST', `/v1/patients/${PATIENT}/documents/search`, { token, body: {} });
    expect((await search()).status).toBe(200);

    const disabled = await admin('PATCH', `/admin/v1/clients/${created.body.clientId}`, { disabled: true });
    expect(disabled.status).toBe(200);
    expect(disabled.body.disabledAt).toMatch(/Z$/);
    expect(await tokenStatus(created.body.clientSecret)).toBe(401);
    // Within seconds on every instance (behind a load balancer, consecutive requests reach different ones).
    const deadline = Date.now() + 7000;
    let refusedInARow = 0;
    while (refusedInARow < 2 && Date.now() < deadline) {
      refusedInARow = (await search()).status === 401 ? refusedInARow + 1 : 0;
      if (refusedInARow === 0) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expectProblem(await search(), 401);

    expect((await admin('PATCH', `/admin/v1/clients/${created.body.clientId}`, { disabled: false })).body.disabledAt).toBeNull();
    expect(await tokenStatus(created.body.clientSecret)).toBe(200);
    const rotated = await admin('POST', `/admin/v1/clients/${created.body.clientId}/secret`, {});
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
    expect(rotated.body.clientSecret).not.toBe(created.body.clientSecret);
    expect(await tokenStatus(created.body.clientSecret)).toBe(401);
    expect(await tokenStatus(rotated.body.clientSecret)).toBe(200);
    expectProblem(await admin('PATCH', '/admin/v1/clients/nobody', { disabled: true }), 404);
  });

  it('revoking consent takes effect on the next request', async () => {
    const admin = 'test-admin-token-0123456789';
    const org = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
    const patient = await server.api('POST', '/admin/v1/patients', { token: admin, body: { name: 'Consent Test', organizations: [org], consents: [org] } });
    expect(patient.status).toBe(201);
    expect((await create(validToken, patient.body.id)).status).toBe(201);
    const revoked = await server.api('DELETE', `/admin/v1/patients/${patient.body.id}/consents/${org}`, { token: admin });
    expect(revoked.body.consents).toEqual([]);
    expectProblem(await create(validToken, patient.body.id), 403);
    await server.api('PUT', `/admin/v1/patients/${patient.body.id}/consents/${org}`, { token: admin });
    expect((await create(validToken, patient.body.id)).status).toBe(201);
  });

  it('records every change that becomes a webhook event in the outbox', async () => {
    const events = await server.server.context.store.outbox.after(0, 10_000);
    const types = new Set(events.map((event) => event.eventType));
    expect(types).toContain('patient.created');
    expect(types).toContain('patient.updated');
    expect(types).toContain('document.created');
  });
});
