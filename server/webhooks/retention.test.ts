/**
 * The automatic webhook retention (PATIENT_DOCS_WEBHOOK_RETENTION_DAYS): a server started with it
 * removes what delivery has finished with that many days ago, and keeps the queue and the dead
 * letters; on PostgreSQL one instance of several prunes at a time.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testPostgres } from '../../test/helpers/postgres.js';
import { startTestInstance, tempDir } from '../../test/helpers/server.js';
import { fillWebhookQueue } from '../../test/helpers/webhook-queue.js';
import { PostgresStore } from '../db/postgres/store.js';
import { SqliteStore } from '../db/sqlite/store.js';
import type { DispatcherLog } from './dispatcher.js';
import { WebhookRetention } from './retention.js';

const DAY_MS = 86_400_000;
const quiet: DispatcherLog = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

/** Calls `look` until it gives a value `done` accepts, for at most `ms`; returns the last value. */
async function eventually<T>(look: () => Promise<T>, done: (value: T) => boolean, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await look();
    if (done(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('webhook retention', () => {
  it('a server started with PATIENT_DOCS_WEBHOOK_RETENTION_DAYS removes messages that ended longer ago, keeping the queue and the dead letters', async () => {
    const dataDir = tempDir('retention');
    const old = new Date(Date.now() - 3 * DAY_MS).toISOString();
    const store = SqliteStore.open(path.join(dataDir, 'patient-docs.sqlite'));
    await fillWebhookQueue(store, old).finally(() => store.close());
    const one = await startTestInstance({ PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_WEBHOOK_RETENTION_DAYS: '2' });
    try {
      const { webhooks, outbox } = one.server.context.store;
      // The events go last (after the messages made of them): looked at together until both are done.
      const look = async () => ({
        counts: await webhooks.counts(),
        // The seed's own events, of today, stay too.
        events: (await outbox.after(0, 100)).filter((event) => event.occurredAt === old).map((event) => event.data.name),
      });
      const after = await eventually(look, (now) => now.counts.delivered === 0 && now.events.length === 2);
      expect(after).toEqual({ counts: { queued: 1, delivered: 0, dead: 1, cancelled: 0, failed: 2 }, events: ['dead', 'retrying'] });
    } finally {
      await one.close();
    }
  }, 60_000);

  it('on PostgreSQL one instance prunes per interval, and another takes over once its lease has ended', async () => {
    const url = await (await testPostgres()).createMigratedDatabase();
    const [first, second] = [await PostgresStore.open(url, { webhookLeaseMs: 60_000 }), await PostgresStore.open(url, { webhookLeaseMs: 60_000 })];
    try {
      await fillWebhookQueue(first, new Date(Date.now() - 3 * DAY_MS).toISOString());
      const options = { days: 2, intervalMs: 4_000 };
      const retentions = [first, second].map((store) => new WebhookRetention(store.webhooks, options, quiet, store.leases));
      const reports = await Promise.all(retentions.map((retention) => retention.sweep()));
      expect(reports.filter((report) => report === undefined)).toHaveLength(1);
      expect(reports.find((report) => report !== undefined)).toEqual({ delivered: 2, cancelled: 0, dead: 0, attempts: 2, events: 2 });
      const holder = reports[0] === undefined ? 1 : 0;
      const other = retentions[1 - holder]!;
      expect(await other.sweep()).toBeUndefined();
      // The holder stops renewing (gone): the other prunes once the lease has run out.
      const taken = await eventually(() => other.sweep(), (report) => report !== undefined, 15_000);
      expect(taken).toEqual({ delivered: 0, cancelled: 0, dead: 0, attempts: 0, events: 0 });
      expect(await first.webhooks.counts()).toEqual({ queued: 1, delivered: 0, dead: 1, cancelled: 0, failed: 2 });
    } finally {
      await first.close();
      await second.close();
    }
  }, 120_000);
});
