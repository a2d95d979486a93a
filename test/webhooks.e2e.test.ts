/**
 * Webhooks end to end: the real server as a child process (the bins' bundle, SERVER_MAIN, built by
 * test/global-setup.ts) delivering to a real HTTPS receiver on loopback whose certificate this test makes
 * and the server trusts through NODE_EXTRA_CA_CERTS.
 */
import { testDatabaseEnv } from './helpers/server.js';
import { makeTestCertificates, type TestCertificates } from './helpers/tls.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ROOT, SERVER_MAIN as MAIN } from './helpers/processes.js';
const SEED = path.join(ROOT, 'test/fixtures/seed.json');
const ADMIN_TOKEN = 'webhook-e2e-admin-token-0123456789';
const METRICS_TOKEN = 'webhook-e2e-metrics-token-0123456789';
const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const OTHER_ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a02';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const PATIENT_WITHOUT_CONSENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000002';
const OTHER_ORG_PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000003';
const CLIENT = { id: 'scanner-pc-1', secret: 'scanner-pc-1-secret-0123456789' };
const READ_ONLY = { id: 'read-only', secret: 'read-only-secret-0123456789' };
const RETRY_DELAYS = [200, 400, 800];
/** How long a server process may take to listen. */
const START_LIMIT_MS = 45_000;

// --- TLS material ------------------------------------------------------------------------------

type Tls = TestCertificates;
const makeTls = (): Tls => makeTestCertificates('webhook');

// --- the receiver ------------------------------------------------------------------------------

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  at: number;
}

/** What the receiver does for a path: a status code, or 'hang' (never answers). */
type Behaviour = (request: Received) => number | 'hang' | Promise<number | 'hang'>;

class Receiver {
  readonly received: Received[] = [];
  readonly behaviours = new Map<string, Behaviour>();
  private readonly hanging = new Set<ServerResponse>();
  /** The most requests left hanging at once (a sender gives up on one at its timeout). */
  peakHanging = 0;
  private server!: https.Server;
  port = 0;

  constructor(private readonly tls: Tls) {}

  async start(): Promise<void> {
    this.server = https.createServer({ key: this.tls.key, cert: this.tls.cert, keepAliveTimeout: 30_000 }, (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const received = { path: request.url ?? '', headers: request.headers, raw: Buffer.concat(chunks), at: Date.now() };
        this.received.push(received);
        const prefix = [...this.behaviours.keys()].find((key) => received.path.startsWith(key));
        void Promise.resolve(prefix ? this.behaviours.get(prefix)!(received) : 200).then((outcome) => {
          if (outcome === 'hang') {
            this.hanging.add(response);
            this.peakHanging = Math.max(this.peakHanging, this.hanging.size);
            response.once('close', () => this.hanging.delete(response));
            return;
          }
          response.writeHead(outcome, { 'content-type': 'text/plain' }).end('ok');
        });
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  url(route: string): string {
    return `https://127.0.0.1:${this.port}${route}`;
  }

  on(route: string): Received[] {
    return this.received.filter((item) => item.path === route);
  }

  releaseHanging(): void {
    for (const response of this.hanging) response.destroy();
    this.hanging.clear();
  }

  async stop(): Promise<void> {
    this.releaseHanging();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

// --- the server as a child process ---------------------------------------------------------------

interface ServerProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  if (!fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npx tsc -b first`);
  const child = spawn(process.execPath, [MAIN], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', PATIENT_DOCS_SEED: SEED, PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN, PATIENT_DOCS_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    // Resolved as soon as it listens; the bound is for a machine whose cores other work keeps busy
    // (a first start on PostgreSQL also creates the schema, and the seed's secrets are hashed).
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start:\n${output}`));
    }, START_LIMIT_MS);
    const check = (): void => {
      const match = /listening on (http:\/\/[^\s;]+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url,
    child,
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

class Api {
  private tokens = new Map<string, string>();

  constructor(readonly baseUrl: string) {}

  async token(client = CLIENT): Promise<string> {
    const cached = this.tokens.get(client.id);
    if (cached) return cached;
    const response = await fetch(`${this.baseUrl}/oauth2/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret }),
    });
    const body = (await response.json()) as { access_token: string };
    this.tokens.set(client.id, body.access_token);
    return body.access_token;
  }

  async call(method: string, route: string, options: { body?: unknown; organization?: string | null; client?: typeof CLIENT; admin?: boolean } = {}) {
    const headers: Record<string, string> = {};
    headers.authorization = `Bearer ${options.admin ? ADMIN_TOKEN : await this.token(options.client)}`;
    if (!options.admin && options.organization !== null) headers['organization-id'] = options.organization ?? ORG;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${this.baseUrl}${route}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : undefined) as any };
  }

  subscribe(events: string[], callback: string, hmac: string, options: { organization?: string | null; client?: typeof CLIENT } = {}) {
    return this.call('POST', '/v1/webhooks/subscribe', { body: { events, callback, hmac }, ...options });
  }

  admin(method: string, route: string, body?: unknown) {
    return this.call(method, route, { body, admin: true });
  }
}

async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const hex512 = (secret: string, raw: Buffer) => createHmac('sha512', secret).update(raw).digest('hex');

// --- the tests ---------------------------------------------------------------------------------

let tls: Tls;
let receiver: Receiver;
let server: ServerProcess;
let api: Api;
const dataDirs: string[] = [];

/** The server's own data folder, and its own database when the run's is PostgreSQL (kept across restarts on the folder). */
const databases = new Map<string, Record<string, string>>();

async function tempDataDir(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-webhook-data-'));
  dataDirs.push(dir);
  databases.set(dir, await testDatabaseEnv());
  return dir;
}

function serverEnv(dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_EXTRA_CA_CERTS: tls.caFile,
    PATIENT_DOCS_DATA_DIR: dataDir,
    ...databases.get(dataDir),
    PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true',
    PATIENT_DOCS_WEBHOOK_RETRY_DELAYS: RETRY_DELAYS.map((ms) => `${ms}ms`).join(','),
    PATIENT_DOCS_WEBHOOK_TIMEOUT: '2s',
    PATIENT_DOCS_METRICS_TOKEN: METRICS_TOKEN,
    ...extra,
  };
}

beforeAll(async () => {
  tls = makeTls();
  receiver = new Receiver(tls);
  await receiver.start();
  server = await startServerProcess(serverEnv(await tempDataDir()));
  api = new Api(server.url);
});

afterAll(async () => {
  await server?.stop();
  await receiver?.stop();
  for (const dir of [...dataDirs, tls?.dir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('webhook subscriptions', () => {
  it('answers 201 without the hmac, lists and deletes; validates events, callback, scope and organization', async () => {
    const created = await api.subscribe(['patient.created', 'order.all'], receiver.url('/subscriptions'), 'subscription-secret');
    expect(created.status).toBe(201);
    expect(Object.keys(created.body).sort()).toEqual(['callback', 'createdAt', 'events', 'id', 'organizationId', 'status']);
    expect(created.body).toMatchObject({ events: ['patient.created', 'order.all'], callback: receiver.url('/subscriptions'), organizationId: ORG, status: 'active' });
    expect(JSON.stringify(created.body)).not.toContain('subscription-secret');
    // Sent again (a retry after a lost answer): the same subscription, not a second one.
    const retried = await api.subscribe(['order.all', 'patient.created'], receiver.url('/subscriptions'), 'subscription-secret');
    expect(retried.status).toBe(200);
    expect(retried.body.id).toBe(created.body.id);
    const otherSecret = await api.subscribe(['patient.created', 'order.all'], receiver.url('/subscriptions'), 'another-secret');
    expect(otherSecret.status).toBe(201);
    expect((await api.call('DELETE', `/v1/webhooks/${otherSecret.body.id}`)).status).toBe(204);

    const listed = await api.call('GET', '/v1/webhooks');
    expect(listed.body.map((item: { id: string }) => item.id)).toContain(created.body.id);
    expect(JSON.stringify(listed.body)).not.toContain('subscription-secret');
    expect((await api.call('GET', '/v1/webhooks', { organization: OTHER_ORG })).status).toBe(403);

    const bad = async (body: Record<string, unknown>, organization?: string | null, client?: typeof CLIENT) =>
      api.call('POST', '/v1/webhooks/subscribe', { body: { events: ['patient.created'], callback: receiver.url('/x'), hmac: 'k', ...body }, organization, client });
    const unknownEvent = await bad({ events: ['patient.created', 'patient.exploded'] });
    expect(unknownEvent.status).toBe(400);
    expect(unknownEvent.body).toMatchObject({ messageKey: 'VALIDATION_ERROR' });
    expect(unknownEvent.body.detail).toContain('body/events/1');
    expect((await bad({ events: [] })).status).toBe(400);
    expect((await bad({ hmac: '' })).status).toBe(400);
    expect((await bad({ hmac: '   ' })).status).toBe(400);
    const plainHttp = await bad({ callback: `http://127.0.0.1:${receiver.port}/x` });
    expect(plainHttp.status).toBe(400);
    expect(plainHttp.body.detail).toMatch(/https:/);
    const metadata = await bad({ callback: 'https://169.254.169.254/latest/meta-data' });
    expect(metadata.status).toBe(400);
    expect(metadata.body.detail).toMatch(/169\.254\.169\.254.*metadata/);
    expect((await bad({}, null)).status).toBe(400);
    expect((await bad({}, 'not-a-uuid')).status).toBe(400);
    expect((await bad({}, OTHER_ORG)).status).toBe(403);
    expect((await bad({}, ORG, READ_ONLY)).status).toBe(403);

    expect((await api.call('DELETE', `/v1/webhooks/${created.body.id}`, { organization: OTHER_ORG })).status).toBe(403);
    expect((await api.call('DELETE', `/v1/webhooks/${created.body.id}`)).status).toBe(204);
    expect((await api.call('DELETE', `/v1/webhooks/${created.body.id}`)).status).toBe(404);
  });
});

describe('webhook deliveries', () => {
  it('sends SPEC §6.2 as minified JSON, signed byte-exact with Signature and the Standard Webhooks headers', async () => {
    const secret = 'signing-test-secret-✓';
    const subscription = await api.subscribe(['patient.updated'], receiver.url('/signed?tenant=a'), secret);
    expect(subscription.status).toBe(201);
    const patched = await api.admin('PATCH', `/admin/v1/patients/${PATIENT}`, { name: 'Jane Roe-Signed' });
    expect(patched.status).toBe(200);
    const [message] = await waitFor('the signed message', () => (receiver.on('/signed?tenant=a').length > 0 ? receiver.on('/signed?tenant=a') : undefined));
    const raw = message!.raw;
    const text = raw.toString('utf8');
    const body = JSON.parse(text);

    expect(text).toBe(JSON.stringify(body)); // minified: no byte differs from the canonical form
    expect(Object.keys(body)).toEqual(['source', 'messageId', 'timestamp', 'eventType', 'operationId', 'organizationId', 'data', 'patientId']);
    expect(text.match(/"organizationId"/g)).toHaveLength(1);
    expect(body).toMatchObject({ source: 'patient-docs', eventType: 'patient.updated', organizationId: ORG, patientId: PATIENT });
    expect(body.messageId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(body.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(body.timestamp).toBe(patched.body.updatedAt);
    expect(body.operationId).toEqual(expect.any(String));
    expect(body.data).toEqual({ patient: { id: PATIENT, name: 'Jane Roe-Signed', identifiers: [], birthDate: null, createdAt: patched.body.createdAt, updatedAt: patched.body.updatedAt } });

    const headers = message!.headers;
    expect(headers['content-type']).toBe('application/json');
    expect(headers['content-length']).toBe(String(raw.length));
    expect(headers.signature).toBe(hex512(secret, raw));
    expect(headers.signature).toMatch(/^[0-9a-f]{128}$/);
    expect(headers['webhook-id']).toBe(body.messageId);
    const timestamp = Number(headers['webhook-timestamp']);
    expect(Math.abs(timestamp - Date.now() / 1000)).toBeLessThan(30);
    const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${body.messageId}.${timestamp}.${text}`).digest();
    const [version, signature] = String(headers['webhook-signature']).split(',');
    expect(version).toBe('v1');
    expect(timingSafeEqual(Buffer.from(signature!, 'base64'), expected)).toBe(true);
  });

  it('reaches only organizations with access to and consent from the patient', async () => {
    const ours = await api.subscribe(['patient.all'], receiver.url('/routing/ours'), 'routing-secret');
    const theirs = await api.call('POST', '/admin/v1/clients', {
      admin: true,
      body: { clientId: 'other-clinic-app', clientSecret: 'other-clinic-secret-0123456789', name: 'Other', scopes: ['Webhook.Manage'], organizations: [OTHER_ORG] },
    });
    expect(theirs.status).toBe(201);
    const other = { id: 'other-clinic-app', secret: 'other-clinic-secret-0123456789' };
    const theirsSubscription = await api.subscribe(['patient.all'], receiver.url('/routing/theirs'), 'routing-secret-2', { organization: OTHER_ORG, client: other });
    expect(ours.status).toBe(201);
    expect(theirsSubscription.status).toBe(201);

    await api.admin('PATCH', `/admin/v1/patients/${PATIENT_WITHOUT_CONSENT}`, { name: 'John Doe (still no consent)' }); // access, no consent
    await api.admin('PATCH', `/admin/v1/patients/${OTHER_ORG_PATIENT}`, { name: 'Other Clinic Patient 2' }); // the other organization's
    await api.admin('PATCH', `/admin/v1/patients/${PATIENT}`, { name: 'Jane Roe-Routing' }); // ours only
    await waitFor('our message', () => receiver.on('/routing/ours').length >= 1);
    await waitFor('their message', () => receiver.on('/routing/theirs').length >= 1);
    await sleep(300);

    const patientsOf = (route: string) => receiver.on(route).map((item) => JSON.parse(item.raw.toString()).patientId as string);
    expect(patientsOf('/routing/ours')).toEqual([PATIENT]);
    expect(patientsOf('/routing/theirs')).toEqual([OTHER_ORG_PATIENT]);
    for (const item of receiver.on('/routing/theirs')) expect(JSON.parse(item.raw.toString()).organizationId).toBe(OTHER_ORG);
  });

  it('retries after each configured delay with the same messageId and bytes, then dead-letters; redelivery sends it again', async () => {
    let status = 503;
    receiver.behaviours.set('/flaky', () => status);
    const subscription = await api.subscribe(['order.created'], receiver.url('/flaky'), 'retry-secret');
    const order = await api.admin('POST', '/admin/v1/orders', { patientId: PATIENT, organizationId: ORG, status: 'new' });
    expect(order.status).toBe(201);

    const attempts = await waitFor('four attempts', () => (receiver.on('/flaky').length >= 4 ? receiver.on('/flaky') : undefined), 8000);
    const id = subscription.body.id as string;
    const deadLetters = await waitFor('the dead letter', async () => {
      const page = await api.call('GET', `/v1/webhooks/${id}/dead-letters`);
      return page.body.total === 1 ? page.body : undefined;
    });
    await sleep(RETRY_DELAYS.at(-1)! + 300);
    expect(receiver.on('/flaky')).toHaveLength(1 + RETRY_DELAYS.length); // 1 attempt + 3 retries, then nothing

    const gaps = attempts.slice(1).map((item, index) => item.at - attempts[index]!.at);
    gaps.forEach((gap, index) => {
      expect(gap).toBeGreaterThanOrEqual(RETRY_DELAYS[index]! - 5);
      expect(gap).toBeLessThan(RETRY_DELAYS[index]! + 250);
    });
    const messageId = attempts[0]!.headers['webhook-id'];
    for (const item of attempts) {
      expect(item.headers['webhook-id']).toBe(messageId);
      expect(item.raw.equals(attempts[0]!.raw)).toBe(true);
      expect(item.headers.signature).toBe(hex512('retry-secret', item.raw));
    }
    expect(JSON.parse(attempts[0]!.raw.toString()).data.order).toMatchObject({ id: order.body.id, status: 'new' });

    expect(deadLetters.messages[0]).toMatchObject({ messageId, eventType: 'order.created', patientId: PATIENT, attempts: 4, lastStatus: 503 });
    const log = await api.call('GET', `/v1/webhooks/${id}/deliveries`);
    expect(log.body.total).toBe(4);
    expect(log.body.attempts.map((item: { outcome: string }) => item.outcome)).toEqual(['dead', 'retry', 'retry', 'retry']);
    for (const item of log.body.attempts) {
      expect(item).toMatchObject({ messageId, statusCode: 503, error: 'callback answered HTTP 503' });
      expect(item.latencyMs).toEqual(expect.any(Number));
      expect(item.attemptedAt).toMatch(/Z$/);
    }
    const metrics = await api.call('GET', '/v1/webhooks/metrics');
    expect(metrics.body.dead).toBeGreaterThanOrEqual(1);
    expect(metrics.body.failed).toBeGreaterThanOrEqual(4);

    status = 200;
    expect((await api.call('POST', `/v1/webhooks/${id}/dead-letters/${messageId}/redeliver`)).status).toBe(202);
    const redelivered = await waitFor('the redelivery', () => receiver.on('/flaky')[4]);
    expect(redelivered.headers['webhook-id']).toBe(messageId);
    expect(redelivered.raw.equals(attempts[0]!.raw)).toBe(true);
    await waitFor('an empty dead-letter queue', async () => (await api.call('GET', `/v1/webhooks/${id}/dead-letters`)).body.total === 0);
    expect((await api.call('POST', `/v1/webhooks/${id}/dead-letters/${messageId}/redeliver`)).status).toBe(404);
    const prometheus = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    expect(prometheus).toMatch(/patient_docs_webhook_messages\{state="delivered"\} \d+/);
    expect(prometheus).toMatch(/patient_docs_webhook_failed_attempts_total \d+/);
  });

  it('stops pending retries when the patient withdraws consent', async () => {
    let revoked = false;
    receiver.behaviours.set('/consent', async () => {
      if (!revoked) {
        revoked = true;
        await api.admin('DELETE', `/admin/v1/patients/${PATIENT}/consents/${ORG}`);
      }
      return 503;
    });
    const subscription = await api.subscribe(['order.updated'], receiver.url('/consent'), 'consent-secret');
    const order = await api.admin('POST', '/admin/v1/orders', { patientId: PATIENT, organizationId: ORG, status: 'new' });
    await api.admin('PATCH', `/admin/v1/orders/${order.body.id}`, { status: 'shipped' });
    await waitFor('the first attempt', () => receiver.on('/consent').length === 1);
    await sleep(RETRY_DELAYS.reduce((sum, delay) => sum + delay, 0) + 500);
    try {
      expect(receiver.on('/consent')).toHaveLength(1);
      const log = await api.call('GET', `/v1/webhooks/${subscription.body.id}/deliveries`);
      expect(log.body.total).toBe(1);
      expect((await api.call('GET', `/v1/webhooks/${subscription.body.id}/dead-letters`)).body.total).toBe(0);
      expect((await api.call('GET', '/v1/webhooks/metrics')).body.cancelled).toBeGreaterThanOrEqual(1);
    } finally {
      await api.admin('PUT', `/admin/v1/patients/${PATIENT}/consents/${ORG}`);
    }
  });

  it('disables a subscription whose callback answers 410 Gone', async () => {
    receiver.behaviours.set('/gone', () => 410);
    const subscription = await api.subscribe(['order.created'], receiver.url('/gone'), 'gone-secret');
    await api.admin('POST', '/admin/v1/orders', { patientId: PATIENT, organizationId: ORG, status: 'first' });
    await waitFor('the 410', () => receiver.on('/gone').length === 1);
    const disabled = await waitFor('the disabled subscription', async () => {
      const current = await api.call('GET', `/v1/webhooks/${subscription.body.id}`);
      return current.body.status === 'disabled' ? current.body : undefined;
    });
    expect(disabled.disabledReason).toMatch(/410 Gone/);
    await api.admin('POST', '/admin/v1/orders', { patientId: PATIENT, organizationId: ORG, status: 'second' });
    await sleep(RETRY_DELAYS[0]! + 300);
    expect(receiver.on('/gone')).toHaveLength(1);
    const log = await api.call('GET', `/v1/webhooks/${subscription.body.id}/deliveries`);
    expect(log.body.attempts).toEqual([expect.objectContaining({ statusCode: 410, outcome: 'gone' })]);
  });

  it('holds no other callback back while one receiver hangs', async () => {
    const slow = new Receiver(tls);
    await slow.start();
    try {
      slow.behaviours.set('/', () => 'hang');
      await api.subscribe(['order.created'], slow.url('/slow'), 'slow-secret');
      await api.subscribe(['order.created'], receiver.url('/fast'), 'fast-secret');
      for (let index = 0; index < 40; index += 1) await api.admin('POST', '/admin/v1/orders', { patientId: PATIENT, organizationId: ORG, status: `bulk-${index}` });
      await waitFor('all 40 fast deliveries', () => receiver.on('/fast').length >= 40, 5000);
      // At most 16 in flight per callback; the rest wait their turn (or, once a hung attempt reaches
      // its timeout, take its place: the count of requests seen grows, the count at once does not).
      expect(slow.peakHanging).toBe(16);
      expect(slow.on('/slow').length).toBeGreaterThanOrEqual(16);
    } finally {
      await slow.stop();
    }
  });
});

describe('webhook SSRF guard without PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS', () => {
  it('refuses loopback, metadata and plain-http callbacks with a clear detail', async () => {
    const strict = await startServerProcess(serverEnv(await tempDataDir(), { PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'false' }));
    try {
      const strictApi = new Api(strict.url);
      const loopback = await strictApi.subscribe(['patient.all'], receiver.url('/ssrf'), 'k');
      expect(loopback.status).toBe(400);
      expect(loopback.body.detail).toMatch(/127\.0\.0\.1 is loopback.*PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS/);
      const named = await strictApi.subscribe(['patient.all'], `https://localhost:${receiver.port}/ssrf`, 'k');
      expect(named.status).toBe(400);
      expect(named.body.detail).toMatch(/localhost resolves to/);
      const metadata = await strictApi.subscribe(['patient.all'], 'https://169.254.169.254/', 'k');
      expect(metadata.status).toBe(400);
      expect((await strictApi.subscribe(['patient.all'], 'https://10.0.0.8/hook', 'k')).body.detail).toMatch(/private/);
      expect((await strictApi.subscribe(['patient.all'], 'http://hooks.example.com/', 'k')).body.detail).toMatch(/https:/);
      expect(receiver.on('/ssrf')).toHaveLength(0);
    } finally {
      await strict.stop();
    }
  });
});

describe('webhook durability', () => {
  it('loses no message when the server is killed (SIGKILL) with 1,000 pending: all arrive after restart, same messageIds', async () => {
    let phase: 'hang' | 'accept' = 'hang';
    receiver.behaviours.set('/durable/', () => (phase === 'hang' ? 'hang' : 200));
    const dataDir = await tempDataDir();
    // On PostgreSQL the restarted server is another instance to the database: it finds the dead
    // one's claims abandoned (its session ended with it) and sends them at once, without waiting
    // for their lease (one delivery timeout, longer than this test waits).
    const env = serverEnv(dataDir, { PATIENT_DOCS_WEBHOOK_RETRY_DELAYS: '5s,5s,5s', PATIENT_DOCS_WEBHOOK_TIMEOUT: '30s' });
    const first = await startServerProcess(env);
    const firstApi = new Api(first.url);
    for (let index = 0; index < 5; index += 1) {
      expect((await firstApi.subscribe(['patient.updated'], receiver.url(`/durable/${index}`), `durable-${index}`)).status).toBe(201);
    }
    // A patient the seed does not know, so re-applying the seed at restart adds no event.
    const patient = await firstApi.admin('POST', '/admin/v1/patients', { name: 'Durable Patient', organizations: [ORG], consents: [ORG] });
    expect(patient.status).toBe(201);
    for (let index = 0; index < 200; index += 1) {
      expect((await firstApi.admin('PATCH', `/admin/v1/patients/${patient.body.id}`, { name: `Durable ${index}` })).status).toBe(200);
    }
    const pending = await waitFor('1,000 messages fanned out', async () => {
      const metrics = (await firstApi.call('GET', '/v1/webhooks/metrics')).body;
      return metrics.queued === 1000 ? metrics : undefined;
    });
    expect(pending.delivered).toBe(0);
    const durable = () => receiver.received.filter((item) => item.path.startsWith('/durable/'));
    await waitFor('attempts in flight', () => durable().length > 0);
    const seenBeforeKill = new Set(durable().map((item) => String(item.headers['webhook-id'])));
    await first.stop('SIGKILL');
    receiver.releaseHanging();
    phase = 'accept';

    const second = await startServerProcess(env);
    try {
      const unique = () => new Set(durable().map((item) => String(item.headers['webhook-id'])));
      await waitFor('1,000 distinct messages', () => unique().size >= 1000, 20_000);
      const secondApi = new Api(second.url);
      let last: unknown;
      const metrics = await waitFor('delivered metrics', async () => {
        const body = (await secondApi.call('GET', '/v1/webhooks/metrics')).body;
        last = body;
        return body.delivered === 1000 ? body : undefined;
      }).catch((error: Error) => {
        throw new Error(`${error.message}: ${JSON.stringify(last)}\n${second.output()}`);
      });
      expect(metrics).toMatchObject({ queued: 0, dead: 0, cancelled: 0 });
      const ids = unique();
      expect(ids.size).toBe(1000);
      for (const id of seenBeforeKill) expect(ids.has(id)).toBe(true); // the interrupted ones came again with the same id
      for (const item of durable()) {
        const index = item.path.split('/').at(-1);
        expect(item.headers.signature).toBe(hex512(`durable-${index}`, item.raw));
        expect(JSON.parse(item.raw.toString()).messageId).toBe(item.headers['webhook-id']);
      }
    } finally {
      await second.stop();
    }
  }, 180_000); // two server starts, 200 changes and 1,000 deliveries
});
