/**
 * The engine's webhook listener behind a real reverse proxy that plays the tunnel (HTTPS outside,
 * loopback HTTP inside): the subscription is created at start with the tunnel's public URL and a
 * generated hmac kept in the secret store; the real server's signed deliveries are accepted and
 * refresh the UI; forged and replayed deliveries are rejected; duplicates are ignored.
 */
import { makeTestCertificates } from './helpers/tls.js';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { ApiClient } from '../electron/sync/api/api-client.js';
import type { Journal } from '../electron/sync/journal/journal.js';
import { openJournal } from '../electron/sync/journal/open-journal.js';
import type { SecretStore } from '../electron/sync/home/secrets.js';
import { WEBHOOK_HMAC_ACCOUNT, WebhookWiring } from '../electron/sync/webhooks/subscription.js';
import { ADMIN_CLI, freePort, ROOT, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { waitFor } from './helpers/sync.js';

interface Recorded {
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  status: number;
}

const makeTls = () => makeTestCertificates('tunnel');

/** The tunnel: HTTPS in, HTTP to the loopback listener; it records what passed through. */
async function startTunnel(tls: { key: Buffer; cert: Buffer }) {
  const state = { target: '', recorded: [] as Recorded[] };
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const upstream = http.request(`${state.target}${request.url}`, { method: request.method, headers: { ...request.headers, 'x-forwarded-proto': 'https' } }, (answer) => {
        state.recorded.push({ headers: request.headers, body, status: answer.statusCode ?? 0 });
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      });
      upstream.on('error', () => response.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, state, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

function memorySecrets(): SecretStore {
  const values = new Map<string, string>();
  return {
    backend: 'encrypted-file',
    get: async (account) => values.get(account),
    set: async (account, value) => void values.set(account, value),
    delete: async (account) => values.delete(account),
  };
}

/** Sends bytes through the tunnel (it trusts the test CA). */
function sendThroughTunnel(url: string, ca: Buffer, body: Buffer, headers: http.IncomingHttpHeaders): Promise<number> {
  return new Promise((resolve, reject) => {
    const { host: _host, 'content-length': _length, connection: _connection, ...rest } = headers;
    const request = https.request(url, { method: 'POST', ca, headers: { ...rest, 'content-length': String(body.length) } }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', reject);
    request.end(body);
  });
}

describe('webhook listener behind a tunnel', () => {
  const tls = makeTls();
  let tunnel: Awaited<ReturnType<typeof startTunnel>>;
  let server: ServerProcess;
  let journal: Journal;
  let journalDir: string;
  let wiring: WebhookWiring;
  let api: ApiClient;
  const secrets = memorySecrets();
  const changed: Array<string | null> = [];
  let activity = 0;
  let contentLost = 0;

  beforeAll(async () => {
    tunnel = await startTunnel(tls);
    server = await startServerProcess({ NODE_EXTRA_CA_CERTS: tls.caFile, PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true', PATIENT_DOCS_WEBHOOK_RETRY_DELAYS: '1s,1s' });
    journalDir = tempDir('webhook-journal');
    journal = openJournal(path.join(journalDir, 'journal.db'));
    api = new ApiClient({ serverUrl: server.url, organizationId: ORG, credentials: { tokenUrl: `${server.url}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret } });
    wiring = new WebhookWiring({ journal, secrets, onDocumentsChanged: (patientId) => changed.push(patientId), onActivity: () => (activity += 1), onContentLost: () => (contentLost += 1) });
  });
  afterAll(async () => {
    await wiring?.stop();
    journal?.close();
    fs.rmSync(journalDir, { recursive: true, force: true });
    await server?.stop();
    await tunnel?.close();
    fs.rmSync(tls.dir, { recursive: true, force: true });
  });

  it('subscribes with the public URL, accepts signed deliveries, rejects forged and replayed ones, ignores duplicates', async () => {
    const publicUrl = `${tunnel.url}/webhooks/patient-docs`;
    const subscriptionId = await wiring.start({ port: 0, publicUrl, subscriptionId: null, api });
    const status = wiring.current();
    expect(status).toMatchObject({ listening: true, subscribed: true, error: null, publicUrl });
    expect(status.localUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/webhooks\/patient-docs$/);
    tunnel.state.target = new URL(status.localUrl!).origin;
    expect(await secrets.get(WEBHOOK_HMAC_ACCOUNT)).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    // Reused, not duplicated, on the next start (same URL, hmac still held).
    expect(await wiring.start({ port: 0, publicUrl, subscriptionId, api })).toBe(subscriptionId);
    tunnel.state.target = new URL(wiring.current().localUrl!).origin;

    await api.createDocument(PATIENT, 'webhook.pdf', '/webhooks');
    // The listener answers before it hands the event on, so either may be seen first: wait for both.
    await waitFor('a document event reached the engine and the tunnel saw the 200', () => changed.length > 0 && tunnel.state.recorded.some((entry) => entry.status === 200), 30_000, 100);
    expect(changed[0]).toBe(PATIENT);
    const delivered = tunnel.state.recorded.find((entry) => entry.status === 200)!;
    expect(delivered.headers.signature).toMatch(/^[0-9a-f]{128}$/);

    // Duplicate: the same delivery again is acknowledged and ignored.
    const before = changed.length;
    expect(await sendThroughTunnel(publicUrl, fs.readFileSync(tls.caFile), delivered.body, delivered.headers)).toBe(200);
    // Forged: a changed body under the old signature.
    const forged = Buffer.from(delivered.body.toString('utf8').replace(/"eventType":"[^"]+"/, '"eventType":"document.deleted"'));
    expect(await sendThroughTunnel(publicUrl, fs.readFileSync(tls.caFile), forged, delivered.headers)).toBe(401);
    // Replayed: a recorded delivery presented as if from ten minutes ago.
    const stale = String(Math.floor(Date.now() / 1000) - 600);
    expect(await sendThroughTunnel(publicUrl, fs.readFileSync(tls.caFile), delivered.body, { ...delivered.headers, 'webhook-timestamp': stale })).toBe(401);
    // Unsigned.
    const { signature: _signature, ...unsigned } = delivered.headers;
    expect(await sendThroughTunnel(publicUrl, fs.readFileSync(tls.caFile), delivered.body, unsigned)).toBe(401);
    expect(changed.length).toBe(before);

    const verdicts = journal.webhookActivity(100).map((entry) => entry.verdict);
    expect(verdicts.filter((verdict) => verdict === 'accepted').length).toBeGreaterThanOrEqual(1);
    expect(verdicts.filter((verdict) => verdict === 'duplicate')).toHaveLength(1);
    expect(verdicts.filter((verdict) => verdict === 'rejected')).toHaveLength(3);
    expect(activity).toBe(verdicts.length);
  }, 60_000);

  const subscriptions = () => api.json<Array<{ id: string; callback: string; status: string }>>({ method: 'GET', url: `${server.url}/v1/webhooks`, organization: true });

  it('takes the bare tunnel address: the callback gets the listener path; a path the user gives is served instead', async () => {
    const bare = await wiring.start({ port: 0, publicUrl: tunnel.url, subscriptionId: null, api });
    expect(wiring.current()).toMatchObject({ listening: true, subscribed: true, error: null });
    tunnel.state.target = new URL(wiring.current().localUrl!).origin;
    expect((await subscriptions()).find((subscription) => subscription.id === bare)?.callback).toBe(`${tunnel.url}/webhooks/patient-docs`);
    let before = changed.length;
    await api.createDocument(PATIENT, 'via-bare-tunnel.pdf', '/webhooks');
    await waitFor('a delivery through the bare tunnel address', () => changed.length > before, 30_000, 100);

    const withPath = `${tunnel.url}/hooks`;
    const custom = await wiring.start({ port: 0, publicUrl: withPath, subscriptionId: bare, api });
    expect(wiring.current().localUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/hooks$/);
    tunnel.state.target = new URL(wiring.current().localUrl!).origin;
    expect((await subscriptions()).map((subscription) => subscription.callback)).toEqual([withPath]);
    before = changed.length;
    await api.createDocument(PATIENT, 'via-tunnel-path.pdf', '/webhooks');
    await waitFor('a delivery to the path the user gave', () => changed.length > before, 30_000, 100);
    expect(custom).not.toBe(bare);
  }, 60_000);

  it('document.lost (IT marked a stored file lost) and document.restored (it is back) ask the engine to check its files again', async () => {
    const document = await api.createDocument(PATIENT, 'lost.bin', '/webhooks');
    const form = new FormData();
    form.append('Id', document.id);
    form.append('file', new Blob([new Uint8Array(Buffer.from('scan bytes'))]), 'lost.bin');
    const token = (await (await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) })).json()) as { access_token: string };
    expect((await fetch(`${document.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${token.access_token}` }, body: form })).status).toBe(201);
    const backup = path.join(os.tmpdir(), `sync-webhook-backup-${document.id}`);
    fs.cpSync(path.join(server.dataDir, 'content', 'objects', 'documents', document.id), backup, { recursive: true });
    onTestFinished(() => fs.rmSync(backup, { recursive: true, force: true }));
    fs.rmSync(path.join(server.dataDir, 'content', 'objects', 'documents', document.id), { recursive: true });
    // Not spawnSync: the listener runs in this process and must answer the delivery meanwhile.
    const marked = spawn(process.execPath, [ADMIN_CLI, 'verify', '--mark-lost', '--force'], { cwd: ROOT, env: { ...process.env, PATIENT_DOCS_DATA_DIR: server.dataDir }, stdio: 'ignore' });
    expect(await new Promise((resolve) => marked.once('exit', resolve))).toBe(0);
    await waitFor('document.lost to reach the engine', () => contentLost > 0, 30_000, 100);

    // IT restores the file from a backup: document.restored asks for a check too (a scan failed as lost may be back).
    const seen = contentLost;
    fs.mkdirSync(path.join(server.dataDir, 'content', 'objects', 'documents', document.id), { recursive: true });
    fs.cpSync(backup, path.join(server.dataDir, 'content', 'objects', 'documents', document.id), { recursive: true });
    const restored = spawn(process.execPath, [ADMIN_CLI, 'verify', '--mark-restored'], { cwd: ROOT, env: { ...process.env, PATIENT_DOCS_DATA_DIR: server.dataDir }, stdio: 'ignore' });
    expect(await new Promise((resolve) => restored.once('exit', resolve))).toBe(0);
    await waitFor('document.restored to reach the engine', () => contentLost > seen, 30_000, 100);
  }, 60_000);

  it('a request the listener does not serve (wrong path) shows in the activity', async () => {
    await sendThroughTunnel(`${tunnel.url}/somewhere-else`, fs.readFileSync(tls.caFile), Buffer.from('{}'), {}).catch(() => 0);
    expect(journal.webhookActivity(1)[0]).toMatchObject({ verdict: 'rejected', reason: expect.stringMatching(/^not found: POST \/somewhere-else/) });
  });

  it('clearing the public URL removes the subscription from the server', async () => {
    const id = await wiring.start({ port: 0, publicUrl: `${tunnel.url}/webhooks/patient-docs`, subscriptionId: null, api });
    expect((await subscriptions()).some((subscription) => subscription.id === id && subscription.status === 'active')).toBe(true);
    expect(await wiring.start({ port: 0, publicUrl: null, subscriptionId: id, api })).toBeNull();
    expect((await subscriptions()).filter((subscription) => subscription.id === id && subscription.status === 'active')).toEqual([]);
    // Listening, but the server cannot reach it: said plainly, with what to do (not an empty Activity).
    expect(wiring.current()).toMatchObject({ listening: true, subscribed: false, error: expect.stringMatching(/^Not subscribed — needs a public address\./) });
  });

  it('two restarts at once (two quick saves) leave one listener on the port, and none after stop', async () => {
    const port = await freePort();
    await Promise.all([wiring.start({ port, publicUrl: null, subscriptionId: null, api: null }), wiring.start({ port, publicUrl: null, subscriptionId: null, api: null })]);
    expect(wiring.current()).toMatchObject({ listening: true, error: null, localUrl: `http://127.0.0.1:${port}/webhooks/patient-docs` });
    await wiring.stop();
    await expect(fetch(`http://127.0.0.1:${port}/webhooks/patient-docs`, { method: 'POST', body: '{}' })).rejects.toThrow();
  });
});
