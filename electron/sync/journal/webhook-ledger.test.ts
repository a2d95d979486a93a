import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openJournal } from './open-journal.js';
import { WEBHOOK_ACTIVITY_LIMIT } from './webhook-ledger.js';
import type { Journal } from './journal.js';

describe('journal: webhook ledger', () => {
  let directory: string;
  let file: string;
  let clock: number;
  let journal: Journal;

  const open = () => openJournal(file, { now: () => clock });

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'journal-'));
    file = join(directory, 'journal.sqlite');
    clock = 10_000;
    journal = open();
  });

  afterEach(() => {
    journal.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('remembers delivered webhook messages across a restart', () => {
    journal.recordWebhook({ verdict: 'accepted', messageId: 'm-1', eventType: 'patient.created', patientId: 'p-1' });
    journal.close();
    journal = open();
    expect(journal.seenMessage('m-1')).toBe(true);
    expect(journal.webhookActivity(1)[0]).toMatchObject({ messageId: 'm-1', eventType: 'patient.created', patientId: 'p-1' });
    expect(journal.seenMessage('m-2')).toBe(false);
  });

  it('keeps only the latest webhook activity, newest first, rejected ones included', () => {
    for (let index = 0; index < WEBHOOK_ACTIVITY_LIMIT + 5; index += 1) {
      journal.recordWebhook({ verdict: 'accepted', messageId: `m-${index}`, eventType: 'order.updated' });
    }
    journal.recordWebhook({ verdict: 'rejected', reason: 'signature does not match' });
    const activity = journal.webhookActivity(WEBHOOK_ACTIVITY_LIMIT + 100);
    expect(activity).toHaveLength(WEBHOOK_ACTIVITY_LIMIT);
    expect(activity[0]).toMatchObject({ verdict: 'rejected', messageId: null, reason: 'signature does not match' });
    expect(activity[1]).toMatchObject({ verdict: 'accepted', messageId: `m-${WEBHOOK_ACTIVITY_LIMIT + 4}` });
    expect(activity.at(-1)?.messageId).toBe('m-6');
  });
});
