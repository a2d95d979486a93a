/**
 * Two server instances on one PostgreSQL database, started at the same moment with the same seed
 * file (DESIGN §6): either serves every request, a change through one is seen by the other at
 * once, and the database going away answers 503 with Retry-After, then recovers without a restart.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, ORG, PATIENT, expectProblem, startTestServer, testPostgres, type TestServer } from './helpers/server.js';

let a: TestServer;
let b: TestServer;
beforeAll(async () => {
  // As behind a load balancer: one database, one public URL (the tokens' issuer).
  const env = { PATIENT_DOCS_DATABASE_URL: await (await testPostgres()).createDatabase(), PATIENT_DOCS_PUBLIC_URL: 'https://docs.clinic.test' };
  [a, b] = await Promise.all([startTestServer(env), startTestServer(env)]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const search = (server: TestServer, token?: string) => server.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { limit: 50 }, ...(token ? { token } : {}) });

describe('two instances on one PostgreSQL database', () => {
  it('share one seed, one signing key and every record: a token and a document made through one work on the other', async () => {
    const token = await a.token();
    const created = await b.api('POST', `/v1/patients/${PATIENT}/documents`, { token, body: { fileName: 'crown.stl', path: '/scans' } });
    expect(created.status).toBe(201);
    const found = await search(a, token);
    expect(found.status).toBe(200);
    expect(found.body.documents.map((doc: { id: string }) => doc.id)).toContain(created.body.id);
    const duplicate = await a.api('POST', `/v1/patients/${PATIENT}/documents`, { token, body: { fileName: 'CROWN.stl', path: '/Scans' } });
    expectProblem(duplicate, 409);
    const patients = await b.api('GET', '/admin/v1/patients', { token: ADMIN_TOKEN, organization: null });
    expect(patients.body.total).toBe(3);
  });

  it('refuses on the other instance, at its next request, a consent revoked through one', async () => {
    const token = await a.token();
    expect((await search(b, token)).status).toBe(200);
    const revoked = await a.api('DELETE', `/admin/v1/patients/${PATIENT}/consents/${ORG}`, { token: ADMIN_TOKEN, organization: null });
    expect(revoked.status).toBe(200);
    expectProblem(await search(b, token), 403);
    expect((await b.api('PUT', `/admin/v1/patients/${PATIENT}/consents/${ORG}`, { token: ADMIN_TOKEN, organization: null })).status).toBe(200);
    expect((await search(a, token)).status).toBe(200);
  });

  it('refuses a client disabled through one instance on the other within a second: new tokens at once, its tokens too', async () => {
    const admin = (server: TestServer, method: string, route: string, body?: unknown) => server.api(method, route, { token: ADMIN_TOKEN, organization: null, ...(body === undefined ? {} : { body }) });
    const created = await admin(a, 'POST', '/admin/v1/clients', { name: 'Laptop', scopes: ['Patient.File.Read'], organizations: [ORG] });
    const client = { id: created.body.clientId, secret: created.body.clientSecret };
    const token = await b.token(client);
    expect((await search(b, token)).status).toBe(200);
    expect((await admin(a, 'PATCH', `/admin/v1/clients/${client.id}`, { disabled: true })).status).toBe(200);
    const disabledAt = Date.now();
    const tokenRequest = await fetch(`${b.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret }) });
    expect(tokenRequest.status).toBe(401);
    while ((await search(b, token)).status === 200 && Date.now() - disabledAt < 5000) await new Promise((resolve) => setTimeout(resolve, 50));
    expectProblem(await search(b, token), 401);
    expect(Date.now() - disabledAt).toBeLessThan(1000 + 500);
  });

  it('answers 503 with Retry-After and a problem body while the database is down, never 500 or a hang, and serves again once it is back', async () => {
    const token = await a.token();
    const cluster = await testPostgres();
    cluster.stop();
    try {
      for (const server of [a, b]) {
        const started = Date.now();
        const refused = await search(server, token);
        const problem = expectProblem(refused, 503);
        expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(problem.detail).toMatch(/database/);
        expect(Date.now() - started).toBeLessThan(15_000);
        expectProblem(await server.api('POST', `/v1/patients/${PATIENT}/documents`, { token, body: { fileName: 'down.stl', path: '/' } }), 503);
      }
    } finally {
      cluster.start();
    }
    for (const server of [a, b]) expect((await search(server, token)).status).toBe(200);
    const created = await b.api('POST', `/v1/patients/${PATIENT}/documents`, { token, body: { fileName: 'down.stl', path: '/' } });
    expect(created.status).toBe(201);
  });
});
