/**
 * A workstation whose clock is two hours off (Windows clocks drift; a wrong time zone does the
 * same). Tokens are kept by `expires_in` from receipt, so they are neither refused as expired nor
 * refetched on every call. The real server's signed webhooks are judged on the server's clock (from
 * the Date of its answers), so they are still accepted; and where the server's clock is not known
 * yet, the refusal is not silent: the webhook status says deliveries are refused and why.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../electron/sync/api/api-client.js';
import type { Journal } from '../electron/sync/journal/journal.js';
import { openJournal } from '../electron/sync/journal/open-journal.js';
import type { SecretStore } from '../electron/sync/home/secrets.js';
import { WebhookWiring } from '../electron/sync/webhooks/subscription.js';
import { startNetProxy, type NetProxy } from './helpers/net-proxy.js';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { waitFor } from './helpers/sync.js';
import { makeTestCertificates } from './helpers/tls.js';

const SKEW_MS = 2 * 60 * 60 * 1000;
const skewedNow = () => Date.now() - SKEW_MS;

function memorySecrets(): SecretStore {
  const values = new Map<string, string>();
  return {
    backend: 'encrypted-file',
    get: async (account) => values.get(account),
    set: async (account, value) => void values.set(account, value),
    delete: async (account) => values.delete(account),
  };
}

function post(url: string, body: Buffer, headers: http.IncomingHttpHeaders): Promise<number> {
  return new Promise((resolve, reject) => {
    const { host: _host, 'content-length': _length, connection: _connection, ...rest } = headers;
    const request = http.request(url, { method: 'POST', headers: { ...rest, 'content-length': String(body.length) } }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', reject);
    request.end(body);
  });
}

describe('a workstation clock two hours behind the server', () => {
  const tls = makeTestCertificates('net-clock');
  let tunnel: NetProxy;
  let server: ServerProcess;
  let journal: Journal;
  let journalDir: string;
  let api: ApiClient;
  const wirings: WebhookWiring[] = [];
  const secrets = memorySecrets();
  const recorded: Array<{ headers: http.IncomingHttpHeaders; body: Buffer }> = [];

  beforeAll(async () => {
    // The tunnel the server calls (HTTPS); it forwards to the engine's loopback listener.
    tunnel = await startNetProxy({ key: tls.key, cert: tls.cert });
    server = await startServerProcess({ NODE_EXTRA_CA_CERTS: tls.caFile, PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true', PATIENT_DOCS_WEBHOOK_RETRY_DELAYS: '1s,1s', PATIENT_DOCS_TOKEN_LIFETIME: '60s' });
    journalDir = tempDir('net-clock');
    journal = openJournal(path.join(journalDir, 'journal.db'));
    api = new ApiClient({ serverUrl: server.url, organizationId: ORG, credentials: { tokenUrl: `${server.url}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret }, now: skewedNow });
  });
  afterAll(async () => {
    for (const wiring of wirings) await wiring.stop();
    journal?.close();
    fs.rmSync(journalDir, { recursive: true, force: true });
    await server?.stop();
    await tunnel?.close();
    fs.rmSync(tls.dir, { recursive: true, force: true });
  });

  it('keeps one token by its lifetime from receipt, whatever the token’s exp says against this clock', async () => {
    const first = await api.tokens.token();
    // exp is two hours "in the future" of this clock; expires_in (60 s) is what counts.
    expect(first.expiresAt - skewedNow()).toBeLessThanOrEqual(60_000);
    expect(first.expiresAt - skewedNow()).toBeGreaterThan(30_000);
    await api.listPatients({ limit: 1 });
    expect((await api.tokens.token()).accessToken).toBe(first.accessToken);
    expect(api.serverClockOffsetMs()).toBeGreaterThan(SKEW_MS - 5_000);
    expect(api.serverClockOffsetMs()).toBeLessThan(SKEW_MS + 5_000);
  });

  it('accepts the server’s signed webhooks on the server’s clock, and says why when it cannot', async () => {
    const changed: Array<string | null> = [];
    const wiring = new WebhookWiring({ journal, secrets, now: skewedNow, onDocumentsChanged: (patientId) => changed.push(patientId), onActivity: () => undefined });
    wirings.push(wiring);
    tunnel.intercept = null;
    await wiring.start({ port: 0, publicUrl: `${tunnel.url}/webhooks/patient-docs`, subscriptionId: null, api });
    expect(wiring.current()).toMatchObject({ listening: true, subscribed: true, error: null });
    tunnel.target = new URL(wiring.current().localUrl!).origin;
    // Record what passes, to present it again below.
    tunnel.intercept = (request) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => recorded.push({ headers: request.headers, body: Buffer.concat(chunks) }));
      return null;
    };

    await api.createDocument(PATIENT, 'clock.pdf', '/clock');
    await waitFor('the document event reached the engine', () => changed.length > 0, 30_000);
    expect(changed[0]).toBe(PATIENT);
    expect(journal.webhookActivity(10).filter((entry) => entry.verdict === 'rejected')).toHaveLength(0);
    await waitFor('the delivery was recorded', () => recorded.length > 0 && recorded[0]!.body.length > 0);

    // A listener that has not heard from the server yet (no API client) only has this clock: it
    // refuses the delivery, and its status says so and what to check, instead of failing silently.
    const blind = new WebhookWiring({ journal, secrets, now: skewedNow, onDocumentsChanged: () => undefined, onActivity: () => undefined });
    wirings.push(blind);
    await blind.start({ port: 0, publicUrl: null, subscriptionId: null, api: null });
    const delivery = recorded[0]!;
    expect(await post(blind.current().localUrl!, delivery.body, delivery.headers)).toBe(401);
    const error = blind.current().error;
    expect(error).toContain('webhooks) are being refused');
    expect(error).toContain("2 hours ahead of this computer's clock");
    expect(error).toContain('date, time and time zone');
    expect(error).toContain('Files still sync');
    const [latest] = journal.webhookActivity(1);
    expect(latest).toMatchObject({ verdict: 'rejected' });
    expect(latest!.reason).toContain('wrong clock');
  });
});
