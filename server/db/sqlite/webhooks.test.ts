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

describe('an attempt that ends after its message was cancelled', () => {
  const subscription = (id: string) => ({
    id, organizationId: 'o', clientId: 'c', events: ['patient.all'], callback: `https://example.test/${id}`,
    sealedSecret: 'sealed', status: 'active' as const, disabledReason: null, createdAt: '2026-11-21T09:00:00.000Z',
  });
  const queue = async (store: SqliteStore, subscriptionId: string, ids: string[]) => {
    for (const id of ids) {
      store.db
        .prepare(`INSERT INTO outbox_events (id, event_type, patient_id, organization_id, operation_id, occurred_at, data) VALUES (?, 'patient.created', NULL, 'o', 'op', 'x', '{}')`)
        .run(`e-${id}`);
    }
    const cursor = store.db.prepare('SELECT MAX(sequence) FROM outbox_events').pluck().get() as number;
    await store.webhooks.enqueue(ids.map((id) => ({ id, subscriptionId, eventId: `e-${id}`, eventType: 'patient.created' as const, patientId: null, nextAttemptAt: 0, createdAt: 'x' })), cursor);
    const claimed = await store.webhooks.claimDue([{ subscriptionId, limit: ids.length, skip: new Set() }], Date.now());
    expect(claimed.map((message) => message.id).sort()).toEqual([...ids].sort());
  };
  type Outcome = 'retry' | 'delivered' | 'dead' | 'gone';
  const finished = (subscriptionId: string, messageId: string, outcome: Outcome) => ({
    attempt: {
      messageId, subscriptionId, attempt: 1, attemptedAt: '2026-11-21T09:00:05.000Z',
      statusCode: { retry: 503, delivered: 200, dead: 500, gone: 410 }[outcome], latencyMs: 3000,
      error: outcome === 'delivered' ? null : `HTTP ${outcome}`, outcome,
    },
    state: ({ retry: 'pending', delivered: 'delivered', dead: 'dead', gone: 'cancelled' } as const)[outcome],
    nextAttemptAt: outcome === 'retry' ? Date.now() + 60_000 : 0,
    ...(outcome === 'gone' ? { disableSubscription: 'callback answered 410 Gone' } : {}),
  });
  const states = (store: SqliteStore, subscriptionId: string) =>
    Object.fromEntries(
      (store.db.prepare('SELECT id, state FROM webhook_messages WHERE subscription_id = ?').all(subscriptionId) as Array<{ id: string; state: string }>).map((row) => [row.id, row.state]),
    );
  const withStore = async (run: (store: SqliteStore, file: string) => Promise<void>) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-cancel-race-'));
    try {
      await run(SqliteStore.open(path.join(dir, 'db.sqlite')), path.join(dir, 'db.sqlite'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };

  it('stays cancelled when its subscription was deleted in flight (a 2xx marks it delivered), logs the attempt, and is queued nowhere, even after a restart', async () => {
    await withStore(async (store, file) => {
      await store.webhooks.createSubscription(subscription('s'));
      await queue(store, 's', ['retried', 'delivered', 'dead']);
      // DELETE /v1/webhooks/s while the three attempts are in flight.
      expect(await store.webhooks.deleteSubscription('s', '2026-11-21T09:00:01.000Z')).toBe(true);
      expect(await store.webhooks.counts()).toMatchObject({ queued: 0, cancelled: 3 });
      await store.webhooks.recordAttempts([finished('s', 'retried', 'retry'), finished('s', 'delivered', 'delivered'), finished('s', 'dead', 'dead')]);
      expect(states(store, 's')).toEqual({ retried: 'cancelled', delivered: 'delivered', dead: 'cancelled' });
      expect(store.db.prepare(`SELECT last_error FROM webhook_messages WHERE id = 'retried'`).pluck().get()).toBe('subscription deleted');
      expect((await store.webhooks.attempts('s', 0, 10)).rows.map((attempt) => [attempt.messageId, attempt.outcome]).sort()).toEqual([
        ['dead', 'dead'],
        ['delivered', 'delivered'],
        ['retried', 'retry'],
      ]);
      expect(await store.webhooks.counts()).toMatchObject({ queued: 0, delivered: 1, dead: 0, cancelled: 2, failed: 2 });
      // The dispatcher's own check before an attempt cancels once more: the first reason stays.
      await store.webhooks.cancel('s', 'retried', 'subscription deleted or disabled', 'later');
      expect(store.db.prepare(`SELECT last_error FROM webhook_messages WHERE id = 'retried'`).pluck().get()).toBe('subscription deleted');
      await store.close();

      const restarted = SqliteStore.open(file);
      await restarted.webhooks.recoverInterrupted();
      expect(await restarted.webhooks.counts()).toMatchObject({ queued: 0, delivered: 1, cancelled: 2 });
      expect(await restarted.webhooks.dueSubscriptions(Date.now() + 3_600_000, 64)).toEqual([]);
      await restarted.close();
    });
  });

  it('stays cancelled when a 410 of another message disabled its subscription in flight, whether recorded in the same batch or later', async () => {
    await withStore(async (store) => {
      await store.webhooks.createSubscription(subscription('g'));
      await queue(store, 'g', ['gone', 'same-batch', 'later-retry', 'later-ok']);
      await store.webhooks.recordAttempts([finished('g', 'gone', 'gone'), finished('g', 'same-batch', 'retry')]);
      await store.webhooks.recordAttempts([finished('g', 'later-retry', 'retry'), finished('g', 'later-ok', 'delivered')]);
      expect(await store.webhooks.subscriptionStatus('g')).toBe('disabled');
      expect(states(store, 'g')).toEqual({ gone: 'cancelled', 'same-batch': 'cancelled', 'later-retry': 'cancelled', 'later-ok': 'delivered' });
      expect((await store.webhooks.attempts('g', 0, 10)).total).toBe(4);
      expect(await store.webhooks.counts()).toMatchObject({ queued: 0, delivered: 1, cancelled: 3 });
      await store.close();
    });
  });

  it('a redelivery never queues a message of a subscription that is no longer active, and a restart ends messages left queued on one', async () => {
    await withStore(async (store, file) => {
      await store.webhooks.createSubscription(subscription('r'));
      await queue(store, 'r', ['dead', 'phantom']);
      await store.webhooks.recordAttempts([finished('r', 'dead', 'dead')]);
      await store.webhooks.deleteSubscription('r', '2026-11-21T09:00:01.000Z');
      // Deleted between the route's check and the update: the message stays dead.
      expect(await store.webhooks.redeliver('r', 'dead', 0, 'w')).toBe(false);
      // A database written before this fix: a message of the deleted subscription left pending.
      store.db.prepare(`UPDATE webhook_messages SET state = 'pending', last_error = NULL WHERE id = 'phantom'`).run();
      expect(await store.webhooks.counts()).toMatchObject({ queued: 1 });
      await store.close();

      const restarted = SqliteStore.open(file);
      await restarted.webhooks.recoverInterrupted();
      expect(states(restarted, 'r')).toEqual({ dead: 'dead', phantom: 'cancelled' });
      expect(await restarted.webhooks.counts()).toMatchObject({ queued: 0, dead: 1, cancelled: 1 });
      await restarted.close();
    });
  });
});
