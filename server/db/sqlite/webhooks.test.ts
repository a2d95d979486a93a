import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqlite } from './database.js';
import { SQLITE_MIGRATIONS, SqliteStore } from './store.js';

describe('004-webhook-messages-lean', () => {
  it('keeps the messages queued before it, with the body they were queued with, and queues new ones without one', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-migration-'));
    const file = path.join(dir, 'db.sqlite');
    const before = openSqlite(file, SQLITE_MIGRATIONS.filter((migration) => migration.name !== '004-webhook-messages-lean'));
    before
      .prepare(
        `INSERT INTO webhook_subscriptions (id, organization_id, client_id, events, callback, sealed_secret, status, created_at, from_sequence)
         VALUES ('s', 'o', 'c', '["patient.all"]', 'https://example.test/hook', 'sealed', 'active', 'x', 0)`,
      )
      .run();
    before
      .prepare(
        `INSERT INTO webhook_messages (id, subscription_id, event_id, event_type, patient_id, body, state, attempts, next_attempt_at, created_at, updated_at)
         VALUES ('old', 's', 'e-old', 'patient.updated', NULL, '{"old":true}', 'pending', 1, 0, 'x', 'x')`,
      )
      .run();
    before.close();

    const store = SqliteStore.open(file);
    store.db.prepare(`INSERT INTO outbox_events (id, event_type, patient_id, organization_id, operation_id, occurred_at, data) VALUES ('e-new', 'patient.created', NULL, 'o', 'op', '2026-11-21T09:00:00.000Z', '{"patient":{"id":"p"}}')`).run();
    await store.webhooks.enqueue([{ id: 'new', subscriptionId: 's', eventId: 'e-new', eventType: 'patient.created', patientId: null, nextAttemptAt: 0, createdAt: 'x' }], 1);
    const due = await store.webhooks.claimDue([{ subscriptionId: 's', limit: 10, skip: new Set() }], Date.now());
    const byId = Object.fromEntries(due.map((message) => [message.id, message]));
    expect(Object.keys(byId).sort()).toEqual(['new', 'old']);
    expect(byId.old).toMatchObject({ body: '{"old":true}', attempts: 1 });
    expect(byId.new).toMatchObject({ body: null, createdAt: 'x', event: { occurredAt: '2026-11-21T09:00:00.000Z', operationId: 'op', dataJson: '{"patient":{"id":"p"}}' } });
    // Claimed messages are finished by their queue position; a redelivery finds a dead one by its messageId.
    await store.webhooks.recordAttempts([
      { attempt: { messageId: 'old', subscriptionId: 's', attempt: 2, attemptedAt: 'z', statusCode: 500, latencyMs: 1, error: 'HTTP 500', outcome: 'dead' }, state: 'dead', nextAttemptAt: 0 },
      { attempt: { messageId: 'new', subscriptionId: 's', attempt: 1, attemptedAt: 'z', statusCode: 200, latencyMs: 1, error: null, outcome: 'delivered' }, state: 'delivered', nextAttemptAt: 0 },
    ]);
    expect((await store.webhooks.deadLetters('s', 0, 10)).rows.map((message) => message.id)).toEqual(['old']);
    expect(await store.webhooks.redeliver('s', 'old', 0, 'w')).toBe(true);
    expect(await store.webhooks.redeliver('s', 'new', 0, 'w')).toBe(false);
    expect(await store.webhooks.counts()).toMatchObject({ queued: 1, delivered: 1, dead: 0 });
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('active subscriptions', () => {
  const subscription = (id: string) => ({
    id, organizationId: 'o', clientId: 'c', events: ['patient.all'], callback: `https://example.test/${id}`,
    sealedSecret: 'sealed', status: 'active' as const, disabledReason: null, createdAt: `2026-11-21T09:00:0${id.length}.000Z`,
  });
  const ids = async (store: SqliteStore) => (await store.webhooks.activeSubscriptions()).map((active) => active.id);

  it('see every change: this connection’s subscribe, delete and 410-disable, and another connection’s commits', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-subscriptions-'));
    const file = path.join(dir, 'db.sqlite');
    const store = SqliteStore.open(file);
    const other = SqliteStore.open(file);
    try {
      await store.webhooks.createSubscription(subscription('a'));
      expect(await ids(store)).toEqual(['a']);
      await store.webhooks.createSubscription(subscription('bb'));
      expect(await ids(store)).toEqual(['a', 'bb']);
      // A second server process on the same database file (or the admin CLI).
      await other.webhooks.createSubscription(subscription('ccc'));
      expect(await ids(store)).toEqual(['a', 'bb', 'ccc']);
      await other.webhooks.deleteSubscription('a', 'x');
      expect(await ids(store)).toEqual(['bb', 'ccc']);
      await store.webhooks.deleteSubscription('bb', 'x');
      expect(await ids(store)).toEqual(['ccc']);
      // A callback answering 410 Gone disables its subscription.
      await store.webhooks.recordAttempts([
        {
          attempt: { messageId: 'm', subscriptionId: 'ccc', attempt: 1, attemptedAt: 'z', statusCode: 410, latencyMs: 1, error: 'HTTP 410', outcome: 'gone' },
          state: 'cancelled', nextAttemptAt: 0, disableSubscription: 'callback answered 410 Gone',
        },
      ]);
      expect(await ids(store)).toEqual([]);
    } finally {
      await other.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
