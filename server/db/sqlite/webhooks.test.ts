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
    // The same (event, subscription) again: its messageId is the same, so nothing new is queued.
    await store.webhooks.enqueue([{ id: 'new', subscriptionId: 's', eventId: 'e-new', eventType: 'patient.created', patientId: null, nextAttemptAt: 0, createdAt: 'y' }], 1);
    const due = await store.webhooks.claimDue([{ subscriptionId: 's', limit: 10, skip: new Set() }], Date.now());
    const byId = Object.fromEntries(due.map((message) => [message.id, message]));
    expect(Object.keys(byId).sort()).toEqual(['new', 'old']);
    expect(byId.old).toMatchObject({ body: '{"old":true}', attempts: 1 });
    expect(byId.new).toMatchObject({ body: null, createdAt: 'x', event: { occurredAt: '2026-11-21T09:00:00.000Z', operationId: 'op', dataJson: '{"patient":{"id":"p"}}' } });
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
