/**
 * Two server instances on one PostgreSQL database and one shared data folder (DESIGN §6), for what
 * the deployment must do once however many instances run: the token endpoint's limits, webhook
 * wake-ups and leases, background work, resumable uploads whose requests land on either instance.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, ORG, startTestServer, tempDir, testPostgres, type TestServer } from './helpers/server.js';

let a: TestServer;
let b: TestServer;
let shared: string;
beforeAll(async () => {
  shared = tempDir('shared');
  // As behind a load balancer: one database, one content folder, one public URL (the tokens' issuer).
  const env = {
    PATIENT_DOCS_DATABASE_URL: await (await testPostgres()).createDatabase(),
    PATIENT_DOCS_DATA_DIR: shared,
    PATIENT_DOCS_PUBLIC_URL: 'https://docs.clinic.test',
    PATIENT_DOCS_TOKEN_CLIENT_FAILURES: '4',
  };
  [a, b] = await Promise.all([startTestServer(env), startTestServer(env)]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  if (shared) fs.rmSync(shared, { recursive: true, force: true });
});

const admin = (server: TestServer, method: string, route: string, body?: unknown) => server.api(method, route, { token: ADMIN_TOKEN, organization: null, ...(body === undefined ? {} : { body }) });

describe('the token endpoint on two instances', () => {
  it('counts failed secrets through one instance on the other: the limit per client holds for the deployment, with 429 and Retry-After', async () => {
    const created = await admin(a, 'POST', '/admin/v1/clients', { name: 'Guessed', scopes: ['Patient.File.Read'], organizations: [ORG] });
    const tokenRequest = (server: TestServer, secret: string) =>
      fetch(`${server.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: created.body.clientId, client_secret: secret }) });
    const statuses: number[] = [];
    // PATIENT_DOCS_TOKEN_CLIENT_FAILURES is 4 here: two wrong secrets through each instance.
    for (let index = 0; index < 4; index += 1) statuses.push((await tokenRequest(index % 2 === 0 ? a : b, `wrong-${index}`)).status);
    expect(statuses).toEqual([401, 401, 401, 401]);
    for (const server of [a, b]) {
      const refused = await tokenRequest(server, created.body.clientSecret);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    }
  });
});
