/**
 * What only PostgreSQL has to show (the contract suite, store.contract.test.ts, runs both
 * databases): several instances on one database starting at the same moment, fanning out and
 * claiming together, and the database going away and coming back.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testPostgres, type TestPostgres } from '../../../test/helpers/postgres.js';
import { storageFault } from '../../errors.js';
import { prepareStore } from '../../prepare-store.js';
import { DuplicateError, type OutboxEvent } from '../types.js';
import { DatabaseUnavailableError } from './database.js';
import { POSTGRES_MIGRATIONS } from './migrations.js';
import { PostgresStore } from './store.js';
import { PostgresTokenLimiter } from './token-limits.js';

let cluster: TestPostgres;
const opened: PostgresStore[] = [];
beforeAll(async () => {
  cluster = await testPostgres();
});
afterAll(async () => {
  for (const store of opened) await store.close().catch(() => undefined);
});

async function open(url: string, options: Parameters<typeof PostgresStore.open>[1] = {}): Promise<PostgresStore> {
  const store = await PostgresStore.open(url, { webhookLeaseMs: 10_000, ...options });
  opened.push(store);
  return store;
}

const AT = '2026-11-21T09:00:00.000Z';
const ORG = 'org-1';
const PATIENT = 'patient-1';

async function withPatient(store: PostgresStore): Promise<void> {
  await store.organizations.upsert({ id: ORG, name: 'Clinic', createdAt: AT });
  await store.patients.create({ id: PATIENT, name: 'Jane Roe', organizations: [ORG], consents: [ORG], identifiers: [], birthDate: null, createdAt: AT, updatedAt: AT }, []);
}

const event = (): OutboxEvent => ({ id: randomUUID(), eventType: 'order.updated', patientId: PATIENT, organizationId: ORG, operationId: 'op', occurredAt: AT, data: {} });

describe('PostgreSQL store, several instances', () => {
  it('applies the migrations once when five instances open a new database at the same moment, and prepares one signing key and one set of secrets', async () => {
    const url = await cluster.createDatabase();
    const stores = await Promise.all(Array.from({ length: 5 }, () => open(url)));
    const migrations = await stores[0]!.db.rows<{ name: string }>('SELECT name FROM schema_migrations');
    expect(migrations.map((row) => row.name)).toEqual(POSTGRES_MIGRATIONS.map((migration) => migration.name));
    const prepared = await Promise.all(stores.map((store) => prepareStore(store)));
    expect(new Set(prepared.map((one) => one.tenantId)).size).toBe(1);
    expect(new Set(prepared.map((one) => one.linkKey.toString('hex'))).size).toBe(1);
    expect((await stores[0]!.signingKeys.list()).filter((key) => key.retiredAt === null)).toHaveLength(1);
  });

  it('refuses a database a newer server migrated, before changing anything', async () => {
    const url = await cluster.createDatabase();
    const store = await open(url);
    await store.db.run("INSERT INTO schema_migrations (name, applied_at, app_version) VALUES ('999-future', $1, '99.0.0')", [AT]);
    await expect(PostgresStore.open(url)).rejects.toMatchObject({ code: 'PATIENT_DOCS_NEWER_DATABASE', message: expect.stringContaining('99.0.0') });
  });

  it('runs exclusive start work one instance at a time', async () => {
    const url = await cluster.createDatabase();
    const [a, b] = await Promise.all([open(url), open(url)]);
    const spans: Array<[number, number]> = [];
    const work = async () => {
      const start = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 100));
      spans.push([start, performance.now()]);
    };
    await Promise.all([a.exclusively(work), b.exclusively(work)]);
    const [first, second] = spans.sort((x, y) => x[0] - y[0]);
    expect(second![0]).toBeGreaterThanOrEqual(first![1]);
  });

  it('queues one message per (event, subscription) when two instances fan out the same events, and the cursor never moves back', async () => {
    const url = await cluster.createDatabase();
    const [a, b] = await Promise.all([open(url), open(url)]);
    await withPatient(a);
    await a.webhooks.createSubscription({ id: 'sub', organizationId: ORG, clientId: 'c', events: ['order.all'], callback: 'https://example.test/', sealedSecret: 's', status: 'active', disabledReason: null, createdAt: AT });
    const messages = Array.from({ length: 50 }, (_, index) => ({ id: `m${index}`, subscriptionId: 'sub', eventId: `e${index}`, eventType: 'order.updated' as const, patientId: PATIENT, nextAttemptAt: 0, createdAt: AT }));
    await Promise.all([a.webhooks.enqueue(messages, 50), b.webhooks.enqueue(messages.slice(10), 50), b.webhooks.enqueue(messages.slice(0, 20), 20)]);
    expect(await a.webhooks.counts()).toMatchObject({ queued: 50 });
    expect(await b.webhooks.cursor()).toBe(50);
  });

  it('lets one instance at a time hold a claimed message, and another take it over once the claim lease has passed', async () => {
    const url = await cluster.createDatabase();
    const [a, b] = await Promise.all([open(url), open(url)]);
    await withPatient(a);
    await a.webhooks.createSubscription({ id: 'sub', organizationId: ORG, clientId: 'c', events: ['order.all'], callback: 'https://example.test/', sealedSecret: 's', status: 'active', disabledReason: null, createdAt: AT });
    const messages = Array.from({ length: 20 }, (_, index) => ({ id: `m${index}`, subscriptionId: 'sub', eventId: `e${index}`, eventType: 'order.updated' as const, patientId: PATIENT, nextAttemptAt: 0, createdAt: AT }));
    await a.webhooks.enqueue(messages, 1);
    const claim = (store: PostgresStore, now: number) => store.webhooks.claimDue([{ subscriptionId: 'sub', limit: 20, skip: new Set() }], now);
    const [byA, byB] = await Promise.all([claim(a, 1000), claim(b, 1000)]);
    expect(byA.length + byB.length).toBe(20);
    expect(new Set([...byA, ...byB].map((message) => message.id)).size).toBe(20);
    expect(await claim(b, 5000)).toEqual([]);
    // The instance that held them died: past the lease (10 s here), they are due again, same messageIds.
    const takenOver = await claim(b, 1000 + 10_000);
    expect(takenOver.map((message) => message.id).sort()).toEqual(messages.map((message) => message.id).sort());
  });

  it("takes an ended instance's claims over at once (its session, and so its claimant lock, is gone), never a live one's", async () => {
    const url = await cluster.createDatabase();
    const [a, b] = await Promise.all([open(url), open(url)]);
    // Each instance's listening connection holds its claimant lock (as the delivery worker's does).
    const listening = [a, b].map((store) => store.outbox.onNotified(() => undefined));
    await vi.waitFor(() => expect([a, b].map((store) => store.notifications.liveClaimant())).not.toContain(null), { timeout: 10_000, interval: 20 });
    await withPatient(a);
    await a.webhooks.createSubscription({ id: 'sub', organizationId: ORG, clientId: 'c', events: ['order.all'], callback: 'https://example.test/', sealedSecret: 's', status: 'active', disabledReason: null, createdAt: AT });
    const messages = Array.from({ length: 20 }, (_, index) => ({ id: `m${index}`, subscriptionId: 'sub', eventId: `e${index}`, eventType: 'order.updated' as const, patientId: PATIENT, nextAttemptAt: 0, createdAt: AT }));
    await a.webhooks.enqueue(messages, 1);
    const claim = (store: PostgresStore, limit: number) => store.webhooks.claimDue([{ subscriptionId: 'sub', limit, skip: new Set() }], 1000);
    const byA = await claim(a, 10);
    const byB = await claim(b, 10);
    expect(byA).toHaveLength(10);
    expect(byA[0]?.claimChecks).toEqual({ status: 'active', routable: true });
    // Both live: nothing is released, by either.
    expect(await b.webhooks.releaseAbandoned(2000)).toBe(0);
    expect(await a.webhooks.releaseAbandoned(2000)).toBe(0);
    listening[0]!();
    await a.close();
    // a has ended: well inside its lease (10 s), b finds its claims due again, same messageIds, and b's own stay b's.
    let released = 0;
    await vi.waitFor(
      async () => {
        released += await b.webhooks.releaseAbandoned(2000);
        expect(released).toBe(10);
      },
      { timeout: 10_000, interval: 50 },
    );
    const takenOver = await b.webhooks.claimDue([{ subscriptionId: 'sub', limit: 20, skip: new Set(byB.map((message) => message.id)) }], 2000);
    expect(takenOver.map((message) => message.id).sort()).toEqual(byA.map((message) => message.id).sort());
    listening[1]!();
  });

  it('hands out outbox events in commit order: a reader following the sequence never passes an event whose transaction commits later, and writers do not wait for each other', async () => {
    const url = await cluster.createDatabase();
    const [a, b, reader] = await Promise.all([open(url), open(url), open(url)]);
    await withPatient(a);
    const order = { id: 'o', patientId: PATIENT, organizationId: ORG, status: 'new', createdAt: AT, updatedAt: AT };
    await a.orders.create(order, []);
    const [first, second] = [event(), event()];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let appended!: () => void;
    const firstAppended = new Promise<void>((resolve) => (appended = resolve));
    // The first transaction takes its sequence number, then stays open; the second commits meanwhile.
    const slow = a.db.transaction(async (tx) => {
      await a.outbox.appendInTransaction(tx, [first]);
      appended();
      await held;
    });
    await firstAppended;
    await b.orders.update({ ...order, status: 'fast' }, [second]);
    // A reader now waits for the open transaction rather than hand out the later number alone.
    const reading = reader.outbox.headsAfter(0, 10);
    const early = await Promise.race([reading.then(() => 'answered'), new Promise((resolve) => setTimeout(() => resolve('waiting'), 300))]);
    release();
    await slow;
    const seen = await reading;
    seen.push(...(await reader.outbox.headsAfter(seen.at(-1)?.sequence ?? 0, 10)));
    expect(early).toBe('waiting');
    expect(seen.map((head) => head.id)).toEqual([first.id, second.id]);
    // A subscription made now starts after both: neither is delivered to it, whatever the commit order was.
    await reader.webhooks.createSubscription({ id: 'sub', organizationId: ORG, clientId: 'c', events: ['order.all'], callback: 'https://example.test/', sealedSecret: 's', status: 'active', disabledReason: null, createdAt: AT });
    expect((await reader.webhooks.getSubscription('sub'))!.fromSequence).toBe(seen.at(-1)!.sequence);
  });

  it('creates one patient\'s documents from many connections at once, each with its event, and counts every one', async () => {
    const url = await cluster.createDatabase();
    const [a, b] = await Promise.all([open(url), open(url)]);
    await withPatient(a);
    const before = await a.documents.changeCounter(PATIENT);
    const document = (index: number) => ({
      id: randomUUID(), patientId: PATIENT, organizationId: ORG, fileName: `scan-${index}.stl`, fileType: 'STL', path: '/cases', createdAt: AT, lastModifiedAt: AT,
      hasContent: false, fileSize: null, sha256: null, version: 0, contentKey: null, contentType: null, thumbnailKey: null, createdBy: 'c', scannedAt: null,
    });
    const made = Array.from({ length: 40 }, (_, index) => document(index));
    await Promise.all(made.map((one, index) => (index % 2 === 0 ? a : b).documents.create(one, [{ ...event(), eventType: 'document.created', data: { id: one.id } }])));
    // The same name again (another case): refused, and no event written for it.
    await expect(b.documents.create({ ...document(0), fileName: 'SCAN-0.stl' }, [event()])).rejects.toBeInstanceOf(DuplicateError);
    const page = await a.documents.search({ patientId: PATIENT, offset: 0, limit: 1000, sortBy: 'fileName', sortDirection: 'ASC' });
    expect(page.total).toBe(40);
    expect(await a.documents.changeCounter(PATIENT)).toBe(before + 40);
    const events = await a.outbox.after(0, 100);
    expect(events.filter((one) => one.eventType === 'document.created').map((one) => one.data.id).sort()).toEqual(made.map((one) => one.id).sort());
  });
});

describe('PostgreSQL token limits', () => {
  it('counts in fixed windows shared by every limiter on the database, and deletes the windows that are over', async () => {
    const url = await cluster.createDatabase();
    const [one, two] = await Promise.all([open(url), open(url)]);
    let now = 1_000_000;
    const limits = { requestsPerClientAndSource: 100, failuresPerSource: 3, failuresPerClient: 100 };
    const first = one.sharedTokenLimiter(limits);
    const second = new PostgresTokenLimiter(two.db, limits, () => now);
    const limiter = new PostgresTokenLimiter(one.db, limits, () => now);
    expect(first).toBeInstanceOf(PostgresTokenLimiter);
    const attempt = (index: number) => ({ client: `client-${index}`, source: '203.0.113.9' });
    for (let index = 0; index < 3; index += 1) {
      expect(await (index % 2 === 0 ? limiter : second).admit(attempt(index))).toBe(0);
      await (index % 2 === 0 ? second : limiter).settle(attempt(index), 'failure');
    }
    expect(await second.admit(attempt(9))).toBe(60);
    now += 30_000;
    expect(await limiter.admit(attempt(9))).toBe(30);
    now += 30_000;
    expect(await limiter.admit(attempt(9))).toBe(0);
    // The next window's first admit sweeps what ended: only the rows of this window stay.
    now += 60_000;
    expect(await second.admit(attempt(10))).toBe(0);
    await expect.poll(async () => (await one.db.rows<{ key: string }>('SELECT key FROM token_limits')).length).toBe(1);
  });
});

describe('PostgreSQL store, database unreachable', () => {
  it('fails fast with an unavailable error the HTTP side answers as 503 + Retry-After, and works again once the database is back, without reopening', async () => {
    const url = await cluster.createDatabase();
    const store = await open(url, { connectTimeoutMs: 1000 });
    await withPatient(store);
    cluster.stop();
    try {
      const started = performance.now();
      const error = await store.patients.get(PATIENT).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(DatabaseUnavailableError);
      expect(performance.now() - started).toBeLessThan(5000);
      const fault = storageFault(error);
      expect(fault).toMatchObject({ status: 503, headers: { 'Retry-After': expect.stringMatching(/^\d+$/) } });
      await expect(store.orders.create({ id: 'o', patientId: PATIENT, organizationId: ORG, status: 'new', createdAt: AT, updatedAt: AT }, [event()])).rejects.toBeInstanceOf(DatabaseUnavailableError);
    } finally {
      cluster.start();
    }
    expect(await store.patients.get(PATIENT)).toMatchObject({ name: 'Jane Roe' });
    expect(await store.orders.get('o')).toBeUndefined();
  });
});
