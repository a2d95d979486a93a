/**
 * Two server instances on one PostgreSQL database and one shared data folder (DESIGN §6), for what
 * the deployment must do once however many instances run: the token endpoint's limits, webhook
 * wake-ups and leases, background work, resumable uploads whose requests land on either instance.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, ORG, PATIENT, startTestServer, tempDir, testPostgres, type TestServer } from './helpers/server.js';

/** A webhook receiver on loopback: every delivery's messageId and body, in arrival order. */
interface Received {
  messageId: string;
  at: number;
  body: any;
}
const received: Received[] = [];
let receiver: http.Server;
let receiverUrl: string;

let a: TestServer;
let b: TestServer;
let shared: string;
beforeAll(async () => {
  receiver = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ messageId: String(request.headers['webhook-id']), at: Date.now(), body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  shared = tempDir('shared');
  // As behind a load balancer: one database, one content folder, one public URL (the tokens' issuer).
  const env = {
    PATIENT_DOCS_DATABASE_URL: await (await testPostgres()).createDatabase(),
    PATIENT_DOCS_DATA_DIR: shared,
    PATIENT_DOCS_PUBLIC_URL: 'https://docs.clinic.test',
    PATIENT_DOCS_TOKEN_CLIENT_FAILURES: '4',
    PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true',
  };
  // Plain http to the loopback receiver; a safety poll far longer than any wait below, so only a
  // notification can wake an idle instance in time.
  const options = { config: { allowLoopbackHttpCallbacks: true }, start: { webhookDelivery: { safetyPollMs: 120_000 } } };
  [a, b] = await Promise.all([startTestServer(env, options), startTestServer(env, options)]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  receiver?.closeAllConnections();
  receiver?.close();
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

/** Resolves with the delivery of the first message whose event is about `documentId`. */
async function deliveryOf(documentId: string, timeoutMs: number): Promise<Received> {
  const started = Date.now();
  for (;;) {
    const found = received.find((message) => message.body?.data?.document?.id === documentId);
    if (found) return found;
    if (Date.now() - started > timeoutMs) throw new Error(`no delivery about document ${documentId} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const createDocument = (server: TestServer, fileName: string) => server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName, path: '/wake' } });

describe('webhook delivery wakes on notifications between instances', () => {
  it('delivers an event committed through one instance from the other within a second, while that one delivers nothing', async () => {
    const subscribed = await a.api('POST', '/v1/webhooks/subscribe', { body: { events: ['document.created'], callback: `${receiverUrl}/wake`, hmac: 'wake-secret-0123456789' } });
    expect(subscribed.status).toBe(201);
    await a.server.webhookDelivery.stop();
    // The first delivery also starts the other instance's sending thread (seconds on a loaded machine).
    const first = await createDocument(a, 'first.stl');
    await deliveryOf(first.body.id, 15_000);
    for (const name of ['one.stl', 'two.stl', 'three.stl']) {
      const created = await createDocument(a, name);
      expect(created.status).toBe(201);
      const committedAt = Date.now();
      const delivery = await deliveryOf(created.body.id, 5000);
      expect(delivery.at - committedAt).toBeLessThan(1000);
    }
    const ids = received.map((message) => message.messageId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('listens again after PostgreSQL restarts: an event committed then is delivered from the other instance within seconds', async () => {
    const cluster = await testPostgres();
    cluster.stop();
    cluster.start();
    let created = await createDocument(a, 'after-restart.stl');
    for (let tries = 0; created.status === 503 && tries < 20; tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      created = await createDocument(a, 'after-restart.stl');
    }
    expect(created.status).toBe(201);
    const committedAt = Date.now();
    const delivery = await deliveryOf(created.body.id, 10_000);
    expect(delivery.at - committedAt).toBeLessThan(3000);
  });
});
