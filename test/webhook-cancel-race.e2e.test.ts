/**
 * A subscription deleted (DELETE /v1/webhooks/{id}) while its messages' attempts are in flight:
 * the real server (from source, its own SQLite file) delivering to a real HTTPS receiver on
 * loopback that holds the requests until the delete is done. Recording those attempts must not
 * bring the cancelled messages back as pending (the metrics said `queued: 1` for ever).
 */
import { makeTestCertificates, type TestCertificates } from './helpers/tls.js';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { ADMIN_TOKEN, CLIENT, METRICS_TOKEN, ORG } from './helpers/server.js';
import { waitFor } from './helpers/sync.js';

interface Held {
  path: string;
  answer(status: number): void;
}

let tls: TestCertificates;
let receiver: https.Server;
let receiverUrl: string;
const held: Held[] = [];
let server: ServerProcess;
let token: string;

async function call(method: string, route: string, body?: unknown, admin = false): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${admin ? ADMIN_TOKEN : token}` };
  if (!admin) headers['organization-id'] = ORG;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${server.url}${route}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const metrics = async (): Promise<{ queued: number; delivered: number; dead: number; cancelled: number; failed: number }> => (await call('GET', '/v1/webhooks/metrics')).body;

beforeAll(async () => {
  tls = makeTestCertificates('webhook-cancel-race');
  // Every request is held until the test answers it: the attempt is in flight meanwhile.
  receiver = https.createServer({ key: tls.key, cert: tls.cert }, (request, response) => {
    request.resume();
    request.on('end', () => held.push({ path: request.url ?? '', answer: (status) => response.writeHead(status, { 'content-type': 'text/plain' }).end('ok') }));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  server = await startServerProcess({
    NODE_EXTRA_CA_CERTS: tls.caFile,
    PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true',
    PATIENT_DOCS_WEBHOOK_RETRY_DELAYS: '100ms,100ms,100ms',
    PATIENT_DOCS_WEBHOOK_TIMEOUT: '5s',
    PATIENT_DOCS_METRICS_TOKEN: METRICS_TOKEN,
  });
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret });
  token = ((await (await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: form })).json()) as { access_token: string }).access_token;
});

afterAll(async () => {
  await server?.stop();
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  if (tls) fs.rmSync(tls.dir, { recursive: true, force: true });
});

describe('a webhook subscription deleted while an attempt is in flight', () => {
  it('leaves nothing queued: a failed attempt leaves its message cancelled, a 2xx marks it delivered, and no retry is sent', async () => {
    const before = await metrics();
    const failing = await call('POST', '/v1/webhooks/subscribe', { events: ['patient.created'], callback: `${receiverUrl}/in-flight/failing`, hmac: 'race-secret-1' });
    const succeeding = await call('POST', '/v1/webhooks/subscribe', { events: ['patient.created'], callback: `${receiverUrl}/in-flight/succeeding`, hmac: 'race-secret-2' });
    expect([failing.status, succeeding.status]).toEqual([201, 201]);
    expect((await call('POST', '/admin/v1/patients', { name: 'Deleted In Flight', organizations: [ORG], consents: [ORG] }, true)).status).toBe(201);
    await waitFor('both attempts in flight', () => held.length === 2, 8000, 20);

    expect((await call('DELETE', `/v1/webhooks/${failing.body.id}`)).status).toBe(204);
    expect((await call('DELETE', `/v1/webhooks/${succeeding.body.id}`)).status).toBe(204);
    expect(await metrics()).toMatchObject({ queued: before.queued, cancelled: before.cancelled + 2 });

    for (const request of held.splice(0)) request.answer(request.path.endsWith('/failing') ? 503 : 200);
    // Both attempts are recorded (the failed one counts in `failed`, the other one as delivered).
    const after = await waitFor(
      'both attempts recorded',
      async () => {
        const current = await metrics();
        return current.failed === before.failed + 1 && current.delivered === before.delivered + 1 ? current : undefined;
      },
      5000,
      20,
    );
    expect(after).toMatchObject({ queued: before.queued, dead: before.dead, cancelled: before.cancelled + 1 });
    // Past the retry delay: no retry of the failed one, and the counts have not moved.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(held).toHaveLength(0);
    expect(await metrics()).toEqual(after);
    expect(await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()).toContain('patient_docs_webhook_messages{state="queued"} 0');
  });
});
