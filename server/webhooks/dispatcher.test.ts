import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../db/sqlite/store.js';
import { outboxEvent } from '../domain/events.js';
import { WebhookDispatcher } from './dispatcher.js';
import { SecretBox } from './secret-box.js';
import type { SendRequest } from './sender.js';
import { CallbackGuard } from './ssrf.js';

const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A store with one active subscription to orders, and the secrets that sealed its hmac. */
async function storeWithSubscription(): Promise<{ store: SqliteStore; secrets: SecretBox }> {
  const store = SqliteStore.open(':memory:');
  const secrets = new SecretBox(randomBytes(32));
  await store.webhooks.createSubscription({
    id: 'sub-1', organizationId: ORG, clientId: 'client', events: ['order.all'], callback: 'https://127.0.0.1:9/hook',
    sealedSecret: secrets.seal('hmac-1', 'sub-1'), status: 'active', disabledReason: null, createdAt: new Date().toISOString(),
  });
  return { store, secrets };
}

/** Starts a dispatcher whose sends all succeed at once, after one order.created event is in the outbox; `sent` collects the requests. */
function dispatchOneOrder(store: SqliteStore, secrets: SecretBox): { dispatcher: WebhookDispatcher; sent: SendRequest[] } {
  const sent: SendRequest[] = [];
  const dispatcher = new WebhookDispatcher(
    {
      outbox: store.outbox, patients: store.patients, webhooks: store.webhooks, secrets, log: quiet,
      guard: new CallbackGuard({ allowPrivate: true }),
      send: async (request) => {
        sent.push(request);
        return { statusCode: 200, latencyMs: 1, error: null };
      },
    },
    { retryDelaysMs: [10], timeoutMs: 1000, maxConcurrency: 4, maxPerCallback: 2, pollIntervalMs: 10, safetyPollMs: 1000, batchSize: 100, dnsCacheMs: 1000, routingMemoMs: 5 },
  );
  const at = new Date().toISOString();
  store.db.transaction(() => store.outbox.appendInTransaction([outboxEvent('order.created', { patientId: null, organizationId: ORG, operationId: 'op-1', occurredAt: at, data: { order: { id: 'o-1' } } })]))();
  dispatcher.start();
  return { dispatcher, sent };
}

describe('WebhookDispatcher fan-out', () => {
  it('does not move past events whose messages could not be written: they are queued on the next try', async () => {
    const { store, secrets } = await storeWithSubscription();
    // The first write of messages fails, as a busy database would make it.
    const enqueue = store.webhooks.enqueue.bind(store.webhooks);
    let failures = 0;
    store.webhooks.enqueue = async (messages, cursor) => {
      if (messages.length > 0 && failures === 0) {
        failures += 1;
        throw new Error('SQLITE_BUSY: database is locked');
      }
      return enqueue(messages, cursor);
    };
    const { dispatcher, sent } = dispatchOneOrder(store, secrets);
    try {
      await waitFor(() => sent.length === 1);
      expect(failures).toBe(1);
      expect(JSON.parse(sent[0]!.body)).toMatchObject({ eventType: 'order.created', organizationId: ORG, data: { order: { id: 'o-1' } } });
      expect(sent[0]!.signing?.hmac).toBe('hmac-1');
    } finally {
      await dispatcher.stop();
      await store.close();
    }
  });

  it('keeps attempt outcomes the database could not record (busy, disk full) and records them on the next flush', async () => {
    const { store, secrets } = await storeWithSubscription();
    const recordAttempts = store.webhooks.recordAttempts.bind(store.webhooks);
    let failures = 0;
    store.webhooks.recordAttempts = async (results) => {
      if (failures === 0) {
        failures += 1;
        throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      }
      return recordAttempts(results);
    };
    const { dispatcher, sent } = dispatchOneOrder(store, secrets);
    try {
      let counts = await store.webhooks.counts();
      const deadline = Date.now() + 5000;
      while (counts.delivered === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        counts = await store.webhooks.counts();
      }
      expect(failures).toBe(1);
      expect(counts).toMatchObject({ delivered: 1, queued: 0 });
      expect(sent).toHaveLength(1);
    } finally {
      await dispatcher.stop();
      await store.close();
    }
  });
});
