/**
 * Two server instances on one PostgreSQL database and one shared data folder (DESIGN §6), for what
 * the deployment must do once however many instances run: the token endpoint's limits, webhook
 * wake-ups and leases, background work, resumable uploads whose requests land on either instance.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, ORG, PATIENT, startTestServer, tempDir, testPostgres, type TestServer } from './helpers/server.js';
import { DEFAULT_DISPATCHER_OPTIONS, WebhookDispatcher, type DispatcherOptions } from '../server/webhooks/dispatcher.js';
import { startWebhookDelivery, type WebhookDelivery } from '../server/webhooks/delivery.js';
import { ThreadedSender } from '../server/webhooks/send-thread.js';
import type { Sender } from '../server/webhooks/sender.js';
import { PatientFiles } from './helpers/patient-files.js';
import { ThumbnailJobs } from '../server/domain/thumbnail-jobs.js';
import type { PostgresStore } from '../server/db/postgres/store.js';
import { PostgresWorkLeases } from '../server/db/postgres/leases.js';
import type { LocalDiskStorage } from '../server/storage/local-disk.js';
import { runAdmin } from './helpers/processes.js';
import { holdPatch, type HeldPatch } from './helpers/tus.js';
import type { RunningServer } from '../server/start.js';

/** A webhook receiver on loopback: every delivery's messageId and body, in arrival order. */
interface Received {
  /** The callback's path. */
  path: string;
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
let databaseUrl: string;
beforeAll(async () => {
  receiver = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ path: request.url ?? '', messageId: String(request.headers['webhook-id']), at: Date.now(), body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      // A slow receiver: its messages wait behind the per-callback limit.
      const delay = request.url?.startsWith('/slow') ? 600 : 0;
      setTimeout(() => response.writeHead(204).end(), delay);
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  shared = tempDir('shared');
  // As behind a load balancer: one database, one content folder, one public URL (the tokens' issuer).
  const env = {
    PATIENT_DOCS_DATABASE_URL: (databaseUrl = await (await testPostgres()).createDatabase()),
    PATIENT_DOCS_DATA_DIR: shared,
    PATIENT_DOCS_PUBLIC_URL: 'https://docs.clinic.test',
    PATIENT_DOCS_TOKEN_CLIENT_FAILURES: '4',
    PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true',
    // The claim lease of a webhook message is one delivery timeout.
    PATIENT_DOCS_WEBHOOK_TIMEOUT: '2s',
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

describe('connections to PostgreSQL', () => {
  it('keeps at most PATIENT_DOCS_DATABASE_POOL_SIZE of them for requests, which wait their turn: a burst of 20 searches all answered over 2', async () => {
    const third = await startTestServer({ PATIENT_DOCS_DATABASE_URL: databaseUrl, PATIENT_DOCS_DATA_DIR: shared, PATIENT_DOCS_PUBLIC_URL: 'https://docs.clinic.test', PATIENT_DOCS_DATABASE_POOL_SIZE: '2' });
    try {
      const pool = (third.server.context.store as PostgresStore).db.pool;
      // The client's token first: the burst is of searches, not of token requests.
      expect((await third.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { limit: 1 } })).status).toBe(200);
      let most = 0;
      const answers = await Promise.all(
        Array.from({ length: 20 }, async (_, index) => {
          const answer = await third.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { path: `/burst-${index}`, limit: 5 } });
          most = Math.max(most, pool.totalCount);
          return answer.status;
        }),
      );
      expect(answers).toEqual(Array.from({ length: 20 }, () => 200));
      expect(most).toBe(2);
    } finally {
      await third.close();
    }
  });
});

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

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

/** A delivery worker for one instance with settings of the test's choosing (the instances' own are stopped). */
function deliveryFor(server: TestServer, options: Partial<DispatcherOptions>): WebhookDelivery {
  return startWebhookDelivery(server.server.context, quiet, { safetyPollMs: 100, ...options });
}

/** A delivery worker of one instance sending with `send`. */
function dispatcherFor(running: RunningServer, send: Sender): WebhookDispatcher {
  const { context } = running;
  const dispatcher = new WebhookDispatcher(
    { outbox: context.store.outbox, patients: context.store.patients, webhooks: context.store.webhooks, secrets: context.webhookSecrets, guard: context.callbackGuard, log: quiet, send },
    { ...DEFAULT_DISPATCHER_OPTIONS, retryDelaysMs: [100], timeoutMs: context.config.webhookTimeoutMs, safetyPollMs: 100 },
  );
  dispatcher.start();
  return dispatcher;
}

/** An instance whose delivery claims messages and then dies mid-attempt: its sends never answer, and it stops without recording them. */
function dyingDelivery(running: RunningServer): { dispatcher: WebhookDispatcher; sent: Array<{ path: string; messageId: string }> } {
  const sent: Array<{ path: string; messageId: string }> = [];
  const dispatcher = dispatcherFor(running, (request) => {
    sent.push({ path: request.url.pathname, messageId: request.signing?.messageId ?? '' });
    return new Promise(() => undefined);
  });
  return { dispatcher, sent };
}

/** A delivery worker whose sending thread already runs (its start takes seconds on a loaded machine, which is not what a test of leases measures). */
async function warmDelivery(running: RunningServer): Promise<{ stop(): Promise<void> }> {
  const sender = new ThreadedSender({ maxSocketsPerHost: 16, maxSockets: 64 });
  const warm = await sender.send({ url: new URL(`${receiverUrl}/warm`), address: { address: '127.0.0.1', family: 4 }, body: '{}', headers: {}, timeoutMs: 30_000 });
  expect(warm.statusCode).toBe(204);
  const dispatcher = dispatcherFor(running, sender.send);
  return {
    stop: async () => {
      await dispatcher.stop();
      await sender.close();
    },
  };
}

const deliveriesTo = (path: string) => received.filter((message) => message.path === path);

async function subscribe(path: string): Promise<void> {
  const subscribed = await a.api('POST', '/v1/webhooks/subscribe', { body: { events: ['document.created'], callback: `${receiverUrl}${path}`, hmac: 'lease-secret-0123456789' } });
  expect(subscribed.status).toBe(201);
}

describe('webhook claims are leases held while their instance lives', () => {
  // The instances' own delivery stops: each test runs the delivery workers it needs.
  beforeAll(() => Promise.all([a.server.webhookDelivery.stop(), b.server.webhookDelivery.stop()]));

  it('never sends a message twice while its claimant lives, however long it waits behind the per-callback limit', async () => {
    await subscribe('/slow/limit');
    // One request at a time per callback, each answered after 600 ms: the last of the messages each
    // instance claims ahead waits far longer than the 2 s lease.
    const deliveries = [deliveryFor(a, { maxPerCallback: 1 }), deliveryFor(b, { maxPerCallback: 1 })];
    try {
      const ids: string[] = [];
      for (let index = 0; index < 10; index += 1) ids.push((await a.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: `queued-${index}.stl`, path: '/limit' } })).body.id);
      await expect.poll(() => deliveriesTo('/slow/limit').length, { timeout: 30_000, interval: 100 }).toBeGreaterThanOrEqual(10);
      // Past the time another instance would have taken an expired claim.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      const messageIds = deliveriesTo('/slow/limit').map((message) => message.messageId);
      expect(messageIds).toHaveLength(10);
      expect(new Set(messageIds).size).toBe(10);
      expect(new Set(deliveriesTo('/slow/limit').map((message) => message.body.data.document.id))).toEqual(new Set(ids));
    } finally {
      await Promise.all(deliveries.map((delivery) => delivery.stop()));
    }
  });

  it("takes over a dead instance's claimed messages within one delivery timeout, with the same messageIds", async () => {
    await subscribe('/dead');
    const dying = dyingDelivery(a.server);
    const ids: string[] = [];
    for (let index = 0; index < 5; index += 1) ids.push((await a.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: `orphaned-${index}.stl`, path: '/dead' } })).body.id);
    const sentToDead = () => dying.sent.filter((request) => request.path === '/dead').map((request) => request.messageId);
    await expect.poll(() => sentToDead().length, { timeout: 10_000, interval: 50 }).toBe(5);
    const survivor = await warmDelivery(b.server);
    try {
      // Alive, the claimant keeps its attempts (hung longer than the 2 s lease) to itself.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      expect(deliveriesTo('/dead')).toHaveLength(0);
      await dying.dispatcher.stop(0);
      const diedAt = Date.now();
      await expect.poll(() => deliveriesTo('/dead').length, { timeout: 15_000, interval: 50 }).toBe(5);
      // The rest of the lease (at most 2 s), a safety poll and the attempts, on a loaded machine.
      expect(Math.max(...deliveriesTo('/dead').map((message) => message.at)) - diedAt).toBeLessThan(2000 + 1500);
      expect(new Set(deliveriesTo('/dead').map((message) => message.messageId))).toEqual(new Set(sentToDead()));
      expect(new Set(deliveriesTo('/dead').map((message) => message.body.data.document.id))).toEqual(new Set(ids));
    } finally {
      await survivor.stop();
    }
  });
});

describe('patient-docs-admin verify on PostgreSQL', () => {
  it('checks the stored files against the versions PostgreSQL records, marks a missing one lost and restores it, seen by every instance', async () => {
    const throughA = await PatientFiles.connect(a.url, '/verify');
    const throughB = await PatientFiles.connect(b.url, '/verify');
    const bytes = randomBytes(30_000);
    const kept = await throughA.uploaded('kept.bin', randomBytes(20_000));
    const lost = await throughA.uploaded('lost.bin', bytes);
    const admin = (...args: string[]) => runAdmin(shared, args, { PATIENT_DOCS_DATABASE_URL: databaseUrl });

    const clean = await admin('verify', '--hashes');
    expect(clean.stderr).toBe('');
    expect(clean.code).toBe(0);
    const folder = path.join(shared, 'content', 'objects', 'documents', lost.id);
    const moved = `${folder}.aside`;
    fs.renameSync(folder, moved);
    const found = await admin('verify');
    expect(found.code).not.toBe(0);
    expect(found.stdout + found.stderr).toContain(`document ${lost.id} version 1: the file is missing`);

    const marked = await admin('verify', '--mark-lost');
    expect(marked.stderr).toBe('');
    expect(marked.code).toBe(0);
    expect(marked.stdout).toMatch(/^marked 1 of \d+ stored files lost; 1 document no longer counts as having content/);
    const withContent = await throughB.search({ path: '/verify', hasContent: true });
    expect(withContent.documents.map((document) => document.id)).toEqual([kept.id]);

    fs.renameSync(moved, folder);
    const restored = await admin('verify', '--mark-restored');
    expect(restored.stderr).toBe('');
    expect(restored.code).toBe(0);
    expect((await throughB.search({ path: '/verify', hasContent: true })).documents.map((document) => document.id).sort()).toEqual([kept.id, lost.id].sort());
  });
});

describe('background work and uploads on a content folder both instances share', () => {
  const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
  const db = (server: TestServer) => (server.server.context.store as PostgresStore).db;
  const leaseHeld = async (key: string) => (await db(a).rows('SELECT 1 FROM work_leases WHERE key = $1 AND until > $2', [key, Date.now()])).length > 0;

  it('takes one resumable upload whose requests alternate between the instances, refusing a second writer on one while the other writes', async () => {
    const token = await a.token();
    const document = (await a.api('POST', `/v1/patients/${PATIENT}/documents`, { token, body: { fileName: 'alternating.stl', path: '/tus' } })).body;
    const headers = { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' };
    const bytes = randomBytes(300_000);
    const created = await fetch(`${a.url}/storage/v1/documents/${document.id}/uploads`, { method: 'POST', headers: { ...headers, 'upload-length': String(bytes.length) } });
    expect(created.status).toBe(201);
    const route = new URL(created.headers.get('location')!).pathname;
    const uploadId = route.split('/').at(-1)!;
    const patch = (server: TestServer, offset: number, chunk: Buffer) =>
      fetch(`${server.url}${route}`, { method: 'PATCH', headers: { ...headers, 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) }, body: new Uint8Array(chunk) });

    // A PATCH through A whose bytes have not arrived yet: it holds the upload's writes.
    const first = bytes.subarray(0, 100_000);
    const held = holdPatch(`${a.url}${route}`, headers, 0, first.length);
    await expect.poll(() => leaseHeld(`tus:${uploadId}`), { timeout: 10_000, interval: 50 }).toBe(true);
    const second = await patch(b, 0, first);
    expect(second.status).toBe(409);
    expect(await held.end(first)).toBe(204);

    const head = await fetch(`${b.url}${route}`, { method: 'HEAD', headers });
    expect(head.headers.get('upload-offset')).toBe('100000');
    expect((await patch(b, 100_000, bytes.subarray(100_000, 200_000))).status).toBe(204);
    expect((await patch(a, 200_000, bytes.subarray(200_000))).status).toBe(204);
    const stored = (await b.api('POST', `/v1/patients/${PATIENT}/documents/search`, { token, body: { id: [document.id], hasContent: true } })).body.documents;
    expect(stored).toMatchObject([{ id: document.id, fileSize: bytes.length, sha256: sha256(bytes) }]);
  });

  /** A tus upload of `length` bytes through `server`: its route and id. */
  const tusUpload = async (server: TestServer, fileName: string, length: number) => {
    const token = await server.token();
    const document = (await server.api('POST', `/v1/patients/${PATIENT}/documents`, { token, body: { fileName, path: '/tus-races' } })).body;
    const headers = { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' };
    const created = await fetch(`${server.url}/storage/v1/documents/${document.id}/uploads`, { method: 'POST', headers: { ...headers, 'upload-length': String(length) } });
    expect(created.status).toBe(201);
    const route = new URL(created.headers.get('location')!).pathname;
    return { document, headers, route, uploadId: route.split('/').at(-1)! };
  };
  /** A PATCH through `server` whose bytes are sent only at `end`: it holds the upload meanwhile. */
  const heldPatch = async (server: TestServer, upload: Awaited<ReturnType<typeof tusUpload>>, offset: number, length: number): Promise<HeldPatch> => {
    const held = holdPatch(`${server.url}${upload.route}`, upload.headers, offset, length);
    await expect.poll(() => leaseHeld(`tus:${upload.uploadId}`), { timeout: 10_000, interval: 50 }).toBe(true);
    return held;
  };
  const uploadsDir = () => path.join(shared, 'content', 'uploads');

  it('refuses a termination through one instance while the other writes to the upload, and terminates it once the write is over', async () => {
    const bytes = randomBytes(200_000);
    const upload = await tusUpload(a, 'terminated.stl', bytes.length);
    const writing = await heldPatch(a, upload, 0, 100_000);
    const terminate = () => fetch(`${b.url}${upload.route}`, { method: 'DELETE', headers: upload.headers });
    const refused = await terminate();
    expect(refused.status).toBe(409);
    expect(await writing.end(bytes.subarray(0, 100_000))).toBe(204);
    const head = await fetch(`${b.url}${upload.route}`, { method: 'HEAD', headers: upload.headers });
    expect(head.headers.get('upload-offset')).toBe('100000');
    expect((await terminate()).status).toBe(204);
    expect((await fetch(`${a.url}${upload.route}`, { method: 'HEAD', headers: upload.headers })).status).toBe(404);
    expect(fs.readdirSync(uploadsDir()).filter((name) => name.startsWith(upload.uploadId))).toEqual([]);
  });

  it("leaves an expired upload alone in one instance's clean-up while the other writes its last bytes, and the upload is stored", async () => {
    const bytes = randomBytes(150_000);
    const upload = await tusUpload(a, 'expiring.stl', bytes.length);
    const writing = await heldPatch(a, upload, 0, bytes.length);
    // Its expiry passes while the last bytes are on their way (a slow line).
    const info = path.join(uploadsDir(), `${upload.uploadId}.json`);
    fs.writeFileSync(info, JSON.stringify({ ...JSON.parse(fs.readFileSync(info, 'utf8')), expiresAt: new Date(Date.now() - 1000).toISOString() }));
    await b.server.context.content.resumable.removeExpired(new Date());
    expect(fs.readdirSync(uploadsDir()).filter((name) => name.startsWith(upload.uploadId)).sort()).toEqual([`${upload.uploadId}.bin`, `${upload.uploadId}.json`]);
    expect(await writing.end(bytes)).toBe(204);
    const stored = (await b.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { id: [upload.document.id], hasContent: true } })).body.documents;
    expect(stored).toMatchObject([{ id: upload.document.id, fileSize: bytes.length, sha256: sha256(bytes) }]);
  });

  it('completes an upload or terminates it, never both, when one instance completes it as the other terminates it', async () => {
    for (let round = 0; round < 4; round += 1) {
      const upload = await tusUpload(a, `raced-${round}.stl`, 1000);
      const completing = a.server.context.content.resumable;
      await completing.append(upload.uploadId, 0, Readable.from([randomBytes(1000)]));
      const [completed, terminated] = await Promise.allSettled([completing.complete(upload.uploadId), b.server.context.content.resumable.remove(upload.uploadId)]);
      // Exactly one wins; the other is told the upload is held or gone.
      expect([completed.status, terminated.status].sort()).toEqual(['fulfilled', 'rejected']);
      const loser = completed.status === 'rejected' ? completed : (terminated as PromiseRejectedResult);
      expect((loser.reason as Error).name).toBe('OffsetMismatchError');
      const temp = (a.server.context.content.storage as LocalDiskStorage).tempPath({ id: upload.uploadId });
      expect(fs.existsSync(temp)).toBe(completed.status === 'fulfilled');
      fs.rmSync(temp, { force: true });
      expect(fs.readdirSync(uploadsDir()).filter((name) => name.startsWith(upload.uploadId))).toEqual([]);
    }
  });

  it("leaves an upload another instance is receiving alone when an instance starts and sweeps the folder", async () => {
    const token = await a.token();
    const document = (await a.api('POST', `/v1/patients/${PATIENT}/documents`, { token, body: { fileName: 'in-flight.bin', path: '/sweep' } })).body;
    const bytes = randomBytes(200_000);
    const boundary = 'patient-docs-test-boundary';
    const field = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    const head = Buffer.from(`${field('Id', document.id)}${field('Type', 'BIN')}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="in-flight.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const tmp = path.join(shared, 'content', 'tmp');
    const before = new Set(fs.readdirSync(tmp));
    const upload = http.request(`${a.url}/storage/v1/documents/${document.id}/file`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}` } });
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      upload.once('response', (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      upload.once('error', reject);
    });
    upload.write(Buffer.concat([head, bytes.subarray(0, 100_000)]));
    await expect.poll(() => fs.readdirSync(tmp).filter((name) => !before.has(name)).length, { timeout: 10_000, interval: 50 }).toBeGreaterThan(0);
    // B starts (as when the lease of the last sweep has ended): what it sweeps at start.
    await db(b).run("DELETE FROM work_leases WHERE key = 'janitor'");
    await b.server.context.content.janitor.sweep(true);
    upload.end(Buffer.concat([bytes.subarray(100_000), tail]));
    const stored = await answer;
    expect(stored.status).toBe(201);
    expect(JSON.parse(stored.body)).toMatchObject({ id: document.id, sha256: sha256(bytes) });
  });

  it('renders each pending thumbnail once when both instances resume pending renders at the same moment', async () => {
    await Promise.all([a, b].map(({ server }) => server.context.content.thumbnails.idle()));
    const files = await PatientFiles.connect(a.url, '/thumbnails');
    const uploaded = [];
    for (let index = 0; index < 4; index += 1) uploaded.push(await files.uploaded(`pending-${index}.bin`, randomBytes(1000)));
    await db(a).run("UPDATE document_versions SET thumbnail_status = 'pending' WHERE document_id = ANY($1::text[])", [uploaded.map((document) => document.id)]);
    const pending = (await db(a).rows('SELECT 1 FROM document_versions WHERE thumbnail_status = $1', ['pending'])).length;
    expect(pending).toBeGreaterThanOrEqual(uploaded.length);
    const rendered: string[] = [];
    const renderer = { hasThumbnail: () => true, renderThumbnail: async (file: string) => (rendered.push(file), Buffer.from('png')) };
    const jobs = [a, b].map(({ server }) => new ThumbnailJobs(server.context.store, server.context.content.storage, renderer, undefined, server.context.store.leases));
    await Promise.all(jobs.map((one) => one.resumePending()));
    await Promise.all(jobs.map((one) => one.idle()));
    // Each render reads its own scratch copy of the content: one render per pending version in all.
    expect(rendered).toHaveLength(pending);
    const statuses = await db(a).rows<{ thumbnail_status: string }>('SELECT thumbnail_status FROM document_versions WHERE document_id = ANY($1::text[])', [uploaded.map((document) => document.id)]);
    expect(statuses.map((row) => row.thumbnail_status)).toEqual(uploaded.map(() => 'ready'));
  });

  it("renders a thumbnail a dead instance left pending, holding its lease, once the lease has ended: by one of the live instances", async () => {
    const files = await PatientFiles.connect(a.url, '/thumbnails');
    const document = await files.uploaded('left-pending.bin', randomBytes(1000));
    await db(a).run("UPDATE document_versions SET thumbnail_status = 'pending' WHERE document_id = $1", [document.id]);
    // Short times: a render lease is three render timeouts; the live instances look twice as often.
    const options = { size: 64, timeoutMs: 400, concurrency: 1, retryDelayMs: 100, sweepIntervalMs: 100 };
    const leaseMs = options.timeoutMs * 3;
    // Instance A took the render's lease, as its render does first, and died before rendering.
    expect(await a.server.context.store.leases!.take(`thumbnail:${document.id}/1`, leaseMs)).toBe(true);
    const leasedAt = Date.now();
    const rendered: string[] = [];
    const renderer = (name: string) => ({ hasThumbnail: () => true, renderThumbnail: async () => (rendered.push(name), Buffer.from('png')) });
    // Two live instances: B, and C (a holder of its own on the same database).
    const live = [
      new ThumbnailJobs(b.server.context.store, b.server.context.content.storage, renderer('b'), options, b.server.context.store.leases),
      new ThumbnailJobs(b.server.context.store, b.server.context.content.storage, renderer('c'), options, new PostgresWorkLeases(db(b), 'instance-c')),
    ];
    try {
      const status = async () => (await db(a).row<{ thumbnail_status: string }>('SELECT thumbnail_status FROM document_versions WHERE document_id = $1', [document.id]))!.thumbnail_status;
      // Started after the upload: resuming at their start finds it, but A's lease keeps them off.
      await Promise.all(live.map((one) => one.resumePending()));
      await new Promise((resolve) => setTimeout(resolve, leaseMs / 2));
      expect(Date.now() - leasedAt).toBeLessThan(leaseMs);
      expect(await status()).toBe('pending');
      await expect.poll(status, { timeout: leaseMs + options.sweepIntervalMs + 10_000, interval: 50 }).toBe('ready');
      await Promise.all(live.map((one) => one.idle()));
      expect(rendered).toHaveLength(1);
    } finally {
      await Promise.all(live.map((one) => one.close()));
    }
  });
});
