/**
 * Several instances end to end (DESIGN §6): two server processes on one PostgreSQL and one shared
 * data folder, behind a real nginx doing round-robin (test/helpers/deployment.ts). What differs
 * from one instance: every request through any instance, a tus upload whose requests alternate
 * between them, webhooks fanned out by both and delivered once each to a real HTTPS receiver, one
 * instance killed (-9) with messages pending and uploads in flight, PostgreSQL restarted under
 * them, and a change through one instance refused on the other within a second.
 */
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BandwidthLimiter } from '../electron/sync/upload/bandwidth.js';
import { useDeployment } from './helpers/deployment.js';
import { ADMIN_TOKEN, ORG, PATIENT, expectProblem } from './helpers/server.js';
import { startEngine, waitFor, writeFile } from './helpers/sync.js';

const WEBHOOK_TIMEOUT_MS = 3000;
/** 1,000 messages: 20 subscriptions to one patient's updates, 50 updates. */
const SUBSCRIBERS = 20;
const UPDATES = 50;
const deployment = useDeployment({
  instances: 2,
  env: {
    PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true',
    PATIENT_DOCS_WEBHOOK_TIMEOUT: `${WEBHOOK_TIMEOUT_MS}ms`,
    // Enough quick retries that no message is dead-lettered while a receiver hangs or an instance is down.
    PATIENT_DOCS_WEBHOOK_RETRY_DELAYS: '200ms,500ms,1s,1s,2s,2s,2s,2s,2s,2s',
  },
});

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
const admin = (method: string, route: string, body?: unknown, via?: string) => deployment.request(method, route, { token: ADMIN_TOKEN, organization: null, ...(body === undefined ? {} : { body }), ...(via ? { via } : {}) });
const search = (body: Record<string, unknown>, options: { token?: string; via?: string } = {}) => deployment.request('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { limit: 100, ...body }, ...options });
/** A path on the deployment's public URL, for a request sent to one instance directly. */
const route = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
};

function multipart(fileName: string, bytes: Buffer): { body: Buffer; type: string } {
  const boundary = `----patient-docs-${randomUUID()}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="FileName"\r\n\r\n${fileName}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  return { body: Buffer.concat([Buffer.from(head), bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]), type: `multipart/form-data; boundary=${boundary}` };
}

async function createDocument(fileName: string, folder = '/several'): Promise<{ id: string; storageUrl: string }> {
  const created = await deployment.request('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName, path: folder } });
  expect(created.status, created.raw.toString()).toBe(201);
  return created.body;
}

// --- a webhook receiver on HTTPS, with a certificate of the test CA the instances trust ----------

interface Delivery {
  path: string;
  messageId: string;
  body: { messageId: string; eventType: string };
}

class Receiver {
  readonly deliveries: Delivery[] = [];
  hang = false;
  private readonly hanging = new Set<ServerResponse>();
  private server!: https.Server;
  port = 0;

  async start(): Promise<void> {
    this.server = https.createServer({ ...deployment.leaf, keepAliveTimeout: 30_000 }, (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString());
        if (this.hang) {
          this.hanging.add(response);
          return;
        }
        this.deliveries.push({ path: request.url ?? '', messageId: String(request.headers['webhook-id']), body });
        response.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  url(path: string): string {
    return `https://127.0.0.1:${this.port}${path}`;
  }

  /** messageId → how many times it arrived, for deliveries to paths starting with `prefix`. */
  counts(prefix: string): Map<string, number> {
    const counts = new Map<string, number>();
    for (const delivery of this.deliveries) if (delivery.path.startsWith(prefix)) counts.set(delivery.messageId, (counts.get(delivery.messageId) ?? 0) + 1);
    return counts;
  }

  hangingCount(): number {
    return this.hanging.size;
  }

  release(): void {
    this.hang = false;
    for (const response of this.hanging) response.destroy();
    this.hanging.clear();
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const receiver = new Receiver();
beforeAll(() => receiver.start());
afterAll(() => receiver.stop());

/** On failure, what the instances printed. */
async function explained<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const output = deployment.instances.map((instance) => `--- instance ${instance.index}\n${instance.output().slice(-4000)}`).join('\n');
    throw new Error(`${(error as Error).message}\n${output}`, { cause: error });
  }
}

/**
 * Milliseconds from `since` to the sending of the last request `answers` saw still answered the old
 * way (polled every 20 ms until one is answered as expected; 0 when the first was): a request sent
 * a second after a change must meet it. Counted to when a request left, not to when its answer came
 * back, so a reply slowed by a loaded machine is not taken for the change arriving late.
 */
async function staleFor(what: string, since: number, answers: () => Promise<boolean>): Promise<number> {
  let staleSentAt = since;
  await waitFor(
    what,
    async () => {
      const sentAt = Date.now();
      const answered = await answers();
      if (!answered) staleSentAt = sentAt;
      return answered;
    },
    5000,
    20,
  );
  return staleSentAt - since;
}

describe('two instances behind nginx round-robin on one PostgreSQL and one data folder', () => {
  it('serves every request through either instance: token, create, one-shot and alternating tus uploads, search, download, versions, delete', async () => {
    const [a, b] = deployment.instances;
    const token = await deployment.token();
    // Every instance answers the same token and sees every record.
    for (const instance of deployment.instances) expect((await search({}, { token, via: instance.url })).status).toBe(200);

    const oneShot = await createDocument('crown.stl');
    const first = Buffer.from('solid crown\n'.repeat(1000));
    const form = multipart('crown.stl', first);
    const uploaded = await deployment.request('POST', route(`${oneShot.storageUrl}/file`), { body: form.body, headers: { 'content-type': form.type } });
    expect(uploaded.status, uploaded.raw.toString()).toBe(201);
    expect(uploaded.body).toMatchObject({ hasContent: true, sha256: sha256(first), version: 1 });

    // A tus upload whose requests alternate between the two instances: create on one, each piece on the other in turn.
    const resumable = await createDocument('cbct.dcm');
    const bytes = Buffer.alloc(3 * 256 * 1024 + 123);
    for (let index = 0; index < bytes.length; index += 1) bytes[index] = (index * 31) % 251;
    const tus = { 'tus-resumable': '1.0.0' };
    const started = await deployment.request('POST', route(`${resumable.storageUrl}/uploads`), { via: a!.url, headers: { ...tus, 'upload-length': String(bytes.length) } });
    expect(started.status, started.raw.toString()).toBe(201);
    const upload = route(started.headers.get('location')!);
    const pieces = [0, 256 * 1024, 512 * 1024, bytes.length];
    for (let piece = 0; piece + 1 < pieces.length; piece += 1) {
      const via = piece % 2 === 0 ? b!.url : a!.url;
      const offset = await deployment.request('HEAD', upload, { via: piece % 2 === 0 ? a!.url : b!.url, headers: tus });
      expect(offset.headers.get('upload-offset')).toBe(String(pieces[piece]));
      const patched = await deployment.request('PATCH', upload, { via, body: bytes.subarray(pieces[piece], pieces[piece + 1]), headers: { ...tus, 'content-type': 'application/offset+octet-stream', 'upload-offset': String(pieces[piece]) } });
      expect(patched.status, patched.raw.toString()).toBe(204);
    }

    const withContent = await search({ path: '/several', hasContent: true });
    expect(withContent.body.documents.map((doc: { fileName: string; sha256: string }) => [doc.fileName, doc.sha256]).sort()).toEqual([
      ['cbct.dcm', sha256(bytes)],
      ['crown.stl', sha256(first)],
    ]);
    // The signed download link works through nginx and on either instance.
    const cbct = withContent.body.documents.find((doc: { fileName: string }) => doc.fileName === 'cbct.dcm');
    for (const via of [deployment.url, a!.url, b!.url]) {
      const downloaded = await deployment.request('GET', route(cbct.storageDownloadUri), { via, token: null, organization: null });
      expect(downloaded.status).toBe(200);
      expect(sha256(downloaded.raw)).toBe(sha256(bytes));
    }

    // A second version through the other instance, then the history through nginx.
    const second = Buffer.from('solid crown v2\n'.repeat(1000));
    const again = multipart('crown.stl', second);
    const replaced = await deployment.request('POST', route(`${oneShot.storageUrl}/file`), { via: b!.url, body: again.body, headers: { 'content-type': again.type, 'if-match': `"${sha256(first)}"` } });
    expect(replaced.status, replaced.raw.toString()).toBe(201);
    const versions = await deployment.request('GET', `/v1/patients/${PATIENT}/documents/${oneShot.id}/versions`);
    expect(versions.body.versions.map((version: { version: number; sha256: string }) => [version.version, version.sha256])).toEqual([
      [2, sha256(second)],
      [1, sha256(first)],
    ]);

    const deleted = await deployment.request('DELETE', `/v1/patients/${PATIENT}/documents/${oneShot.id}`, { via: a!.url });
    expect(deleted.status).toBe(204);
    for (const via of [a!.url, b!.url]) expectProblem(await deployment.request('GET', `/v1/patients/${PATIENT}/documents/${oneShot.id}`, { via }), 404);
  });

  /** A patient of its own (events on the seed's patients come from other tests), and SUBSCRIBERS subscriptions to its updates under `prefix`. */
  async function patientWithSubscribers(prefix: string): Promise<string> {
    for (let index = 0; index < SUBSCRIBERS; index += 1) {
      const subscribed = await deployment.request('POST', '/v1/webhooks/subscribe', { body: { events: ['patient.updated'], callback: receiver.url(`${prefix}${index}`), hmac: `${prefix}-secret-${index}` } });
      expect(subscribed.status, subscribed.raw.toString()).toBe(201);
    }
    const patient = await admin('POST', '/admin/v1/patients', { name: `Patient of ${prefix}`, organizations: [ORG], consents: [ORG] });
    expect(patient.status, patient.raw.toString()).toBe(201);
    return patient.body.id;
  }

  /** UPDATES updates of the patient through nginx, four at a time (so through both instances): 1,000 messages for its subscriptions. */
  async function updateIt(patientId: string): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < UPDATES) {
          const index = next++;
          const updated = await admin('PATCH', `/admin/v1/patients/${patientId}`, { name: `Renamed ${index}` });
          expect(updated.status, updated.raw.toString()).toBe(200);
        }
      }),
    );
  }

  const metrics = async () => (await deployment.request('GET', '/v1/webhooks/metrics')).body as { queued: number; delivered: number; dead: number };

  it('delivers 1,000 webhook messages fanned out by both instances exactly once each to an HTTPS receiver', async () => {
    await explained(async () => {
      const patientId = await patientWithSubscribers('/once/');
      await updateIt(patientId);
      await waitFor('1,000 distinct messages', () => receiver.counts('/once/').size >= 1000, 40_000);
      // Nothing left to send anywhere in the deployment: no second copy can still be on its way.
      await waitFor('no message queued', async () => (await metrics()).queued === 0, 20_000);
      const counts = receiver.counts('/once/');
      expect(counts.size).toBe(1000);
      expect([...counts.values()].filter((count) => count !== 1)).toEqual([]);
      expect((await metrics()).dead).toBe(0);
      for (const delivery of receiver.deliveries) expect(delivery.body.messageId).toBe(delivery.messageId);
    });
  }, 90_000);

  it('loses nothing when one instance is killed (-9) with 1,000 messages pending and 20 uploads in flight: the client goes on through the other', async () => {
    await explained(async () => {
      const [a] = deployment.instances;
      receiver.hang = true;
      const patientId = await patientWithSubscribers('/pending/');
      await updateIt(patientId);
      await waitFor('attempts hanging at the receiver', () => receiver.hangingCount() > 0, 20_000);

      // The workstation's real client, through nginx, uploads 20 scans slowly enough to be cut off mid-body.
      const files = Array.from({ length: 20 }, (_, index) => ({ name: `scan-${index}.stl`, bytes: Buffer.alloc(512 * 1024 + index, index + 1) }));
      const limiter = new BandwidthLimiter(512 * 1024);
      const sut = await startEngine(deployment.url, {
        certificateAuthority: [fs.readFileSync(deployment.caFile, 'utf8')],
        limiter,
        tuning: { concurrency: 20, settleMs: 200 },
        backoffMs: 200,
        remoteBasePath: '/killed',
      });
      try {
        for (const file of files) writeFile(sut.folder, file.name, file.bytes);
        const rows = () => sut.journal.byPair(sut.pair.id);
        const midBody = () => sut.engine.fileViews(sut.pair.id, ['uploading']).filter((file) => file.bytesDone > 0 && file.bytesDone < file.size);
        let most = 0;
        await waitFor('uploads in flight', () => (most = Math.max(most, midBody().length)) >= 10, 60_000, 20).catch((error: Error) => {
          throw new Error(`${error.message} (at most ${most} at once): ${JSON.stringify(sut.engine.fileViews(sut.pair.id).map((file) => [file.state, file.bytesDone, file.error]))}`);
        });
        await a!.kill();
        receiver.release();
        // Cut off mid-body, the uploads now only have to finish: at full speed, not 10 MiB at 512 KiB/s.
        limiter.setLimit(0);

        await waitFor('every scan synced', () => rows().length === 20 && rows().every((row) => row.state === 'synced'), 60_000);
        await waitFor('all 1,000 messages arrived', () => receiver.counts('/pending/').size >= 1000, 60_000);
        expect(receiver.counts('/pending/').size).toBe(1000);

        // No document claims content it lacks: every one with content serves exactly those bytes.
        const documents = (await search({ path: '/killed', limit: 1000 })).body.documents as Array<{ fileName: string; hasContent: boolean; sha256: string | null; fileSize: number | null; storageDownloadUri: string | null }>;
        for (const file of files) expect(documents.find((doc) => doc.fileName === file.name && doc.hasContent)?.sha256, file.name).toBe(sha256(file.bytes));
        for (const doc of documents.filter((candidate) => candidate.hasContent)) {
          const downloaded = await deployment.request('GET', route(doc.storageDownloadUri!), { token: null, organization: null });
          expect(downloaded.status, doc.fileName).toBe(200);
          expect([downloaded.raw.length, sha256(downloaded.raw)]).toEqual([doc.fileSize, doc.sha256]);
        }
      } finally {
        await sut.close();
        receiver.release();
        // Started again, the instance serves as before (and the next tests have both).
        if (!a!.running) await a!.start();
      }
      expect((await search({}, { via: a!.url })).status).toBe(200);
    });
  }, 240_000);

  it('refuses on the other instance within a second a consent revoked, a scope taken away and a client disabled, through one', async () => {
    const [a, b] = deployment.instances;
    const token = await deployment.token();
    expect((await search({}, { token, via: b!.url })).status).toBe(200);
    const revoked = await admin('DELETE', `/admin/v1/patients/${PATIENT}/consents/${ORG}`, undefined, a!.url);
    expect(revoked.status).toBe(200);
    expect(await staleFor('the consent refused on B', Date.now(), async () => (await search({}, { token, via: b!.url })).status === 403)).toBeLessThan(1000);
    expectProblem(await search({}, { token, via: b!.url }), 403);
    expect((await admin('PUT', `/admin/v1/patients/${PATIENT}/consents/${ORG}`, undefined, a!.url)).status).toBe(200);
    expect((await search({}, { token, via: b!.url })).status).toBe(200);

    const created = await admin('POST', '/admin/v1/clients', { name: 'Laptop', scopes: ['Patient.File.Read'], organizations: [ORG] }, a!.url);
    expect(created.status, created.raw.toString()).toBe(201);
    const laptop = { id: created.body.clientId, secret: created.body.clientSecret };
    const laptopToken = await deployment.token(laptop);
    expect((await search({}, { token: laptopToken, via: b!.url })).status).toBe(200);
    // A scope taken away: the token still names it, the client no longer holds it.
    expect((await admin('PATCH', `/admin/v1/clients/${laptop.id}`, { scopes: ['Patient.File.Write'] }, a!.url)).status).toBe(200);
    expect(await staleFor('the scope taken away refused on B', Date.now(), async () => (await search({}, { token: laptopToken, via: b!.url })).status === 403)).toBeLessThan(1000);
    expect((await admin('PATCH', `/admin/v1/clients/${laptop.id}`, { scopes: ['Patient.File.Read'] }, a!.url)).status).toBe(200);
    expect(await staleFor('the scope given back served on B', Date.now(), async () => (await search({}, { token: laptopToken, via: b!.url })).status === 200)).toBeLessThan(1000);
    expect((await admin('PATCH', `/admin/v1/clients/${laptop.id}`, { disabled: true }, a!.url)).status).toBe(200);
    expect(await staleFor('the disabled client refused on B', Date.now(), async () => (await search({}, { token: laptopToken, via: b!.url })).status === 401)).toBeLessThan(1000);
    expectProblem(await search({}, { token: laptopToken, via: b!.url }), 401);
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: laptop.id, client_secret: laptop.secret }).toString();
    const refused = await deployment.request('POST', '/oauth2/token', { via: b!.url, token: null, organization: null, body: form, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(refused.status).toBe(401);
  });

  it('answers 503 with Retry-After while PostgreSQL restarts, and serves again without restarting an instance', async () => {
    await explained(async () => {
      const token = await deployment.token();
      const pids = deployment.instances.map((instance) => instance.pid);
      deployment.postgres.stop();
      try {
        for (const via of [deployment.url, ...deployment.instances.map((instance) => instance.url)]) {
          const started = Date.now();
          const refused = await search({}, { token, via });
          expectProblem(refused, 503);
          expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
          expect(Date.now() - started).toBeLessThan(15_000);
          expectProblem(await deployment.request('POST', `/v1/patients/${PATIENT}/documents`, { token, via, body: { fileName: 'during-restart.stl', path: '/several' } }), 503);
        }
      } finally {
        deployment.postgres.start();
      }
      for (const via of [deployment.url, ...deployment.instances.map((instance) => instance.url)]) {
        await waitFor('serving again', async () => (await search({}, { token, via })).status === 200, 15_000, 100);
      }
      const created = await deployment.request('POST', `/v1/patients/${PATIENT}/documents`, { token, body: { fileName: 'after-restart.stl', path: '/several' } });
      expect(created.status, created.raw.toString()).toBe(201);
      expect(deployment.instances.map((instance) => instance.pid)).toEqual(pids);
    });
  });
});
