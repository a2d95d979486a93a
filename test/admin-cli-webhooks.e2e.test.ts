/**
 * `patient-docs-admin webhooks prune` on a data directory whose webhook queue the server filled
 * (test/helpers/webhook-queue.ts, through the store as the dispatcher writes it): delivered
 * messages, a dead letter and a message still waiting for its retry, with their events and attempts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../server/db/sqlite/store.js';
import { adminCommands, type AdminCommands } from './helpers/processes.js';
import { tempDir } from './helpers/server.js';
import { fillWebhookQueue } from './helpers/webhook-queue.js';

const LONG_AGO = '2026-01-05T09:00:00.000Z';
let dataDir: string;
let commands: AdminCommands;
const admin = (...args: string[]) => commands.run(...args);

beforeAll(async () => {
  dataDir = tempDir('admin-cli-webhooks');
  const store = SqliteStore.open(path.join(dataDir, 'patient-docs.sqlite'));
  await fillWebhookQueue(store, LONG_AGO).finally(() => store.close());
  commands = adminCommands({ PATIENT_DOCS_DATA_DIR: dataDir });
});
afterAll(async () => {
  await commands?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('patient-docs-admin webhooks prune', () => {
  it('refuses a missing, malformed or future --before in one line (exit 2), removing nothing', async () => {
    const missing = await admin('webhooks', 'prune');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^patient-docs-admin: --before is required\n\nUsage: patient-docs-admin/);
    for (const [value, message] of [
      ['last week', '--before "last week" must be a date (2026-11-21) or a date and time (2026-11-21T09:30:00Z)'],
      ['2999-01-01', '--before "2999-01-01" is in the future; only messages that ended before now can be removed'],
    ] as const) {
      const refused = await admin('webhooks', 'prune', '--before', value);
      expect([refused.code, refused.stderr.trim(), refused.stdout]).toEqual([2, `patient-docs-admin: ${message}`, '']);
    }
  });

  it('removes delivered messages with their attempts and events, keeps the dead letter unless --dead, and never the message waiting for its retry', async () => {
    const first = await admin('webhooks', 'prune', '--before', '2026-02-01');
    expect(first.code).toBe(0);
    expect(first.stdout.trim()).toBe(
      `removed 2 delivered and 0 cancelled messages that ended before ${new Date(2026, 1, 1).toISOString()}, with their 2 attempts, and 2 outbox events no message needs any more; ` +
        'queued and in-flight messages are kept, and dead letters too (add --dead to remove them)',
    );
    const dead = await admin('webhooks', 'prune', '--before', new Date().toISOString(), '--dead', '--json');
    expect(dead.code).toBe(0);
    expect(dead.json()).toEqual({ before: expect.any(String), delivered: 0, cancelled: 0, dead: 1, attempts: 1, events: 1 });
    const again = await admin('webhooks', 'prune', '--before', new Date().toISOString(), '--dead');
    expect(again.stdout).toMatch(/^removed 0 delivered, 0 cancelled and 0 dead messages that ended before .*, with their 0 attempts, and 0 outbox events no message needs any more; queued and in-flight messages are kept\n$/);
    const store = SqliteStore.open(path.join(dataDir, 'patient-docs.sqlite'));
    try {
      expect(await store.webhooks.counts()).toEqual({ queued: 1, delivered: 0, dead: 0, cancelled: 0, failed: 1 });
      expect((await store.outbox.after(0, 10)).map((event) => event.data.name)).toEqual(['retrying']);
      const [retry] = await store.webhooks.claimDue([{ subscriptionId: 'sub-1', limit: 1, skip: new Set() }], Date.now() + 7_200_000);
      expect(retry).toMatchObject({ id: 'm-retrying', attempts: 1, event: { dataJson: '{"name":"retrying"}' } });
    } finally {
      await store.close();
    }
  });
});
