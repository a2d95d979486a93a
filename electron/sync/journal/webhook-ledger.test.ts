import { describe, expect, it } from 'vitest';
import { WEBHOOK_ACTIVITY_LIMIT } from './webhook-ledger.js';
import { useTestJournal } from './test-journal.js';

describe('journal: webhook ledger', () => {
  const t = useTestJournal();

  it('remembers delivered webhook messages across a restart', () => {
    t.journal.recordWebhook({ verdict: 'accepted', messageId: 'm-1', eventType: 'patient.created', patientId: 'p-1' });
    t.reopen();
    expect(t.journal.seenMessage('m-1')).toBe(true);
    expect(t.journal.webhookActivity(1)[0]).toMatchObject({ messageId: 'm-1', eventType: 'patient.created', patientId: 'p-1' });
    expect(t.journal.seenMessage('m-2')).toBe(false);
  });

  it('keeps only the latest webhook activity, newest first, rejected ones included', () => {
    for (let index = 0; index < WEBHOOK_ACTIVITY_LIMIT + 5; index += 1) {
      t.journal.recordWebhook({ verdict: 'accepted', messageId: `m-${index}`, eventType: 'order.updated' });
    }
    t.journal.recordWebhook({ verdict: 'rejected', reason: 'signature does not match' });
    const activity = t.journal.webhookActivity(WEBHOOK_ACTIVITY_LIMIT + 100);
    expect(activity).toHaveLength(WEBHOOK_ACTIVITY_LIMIT);
    expect(activity[0]).toMatchObject({ verdict: 'rejected', messageId: null, reason: 'signature does not match' });
    expect(activity[1]).toMatchObject({ verdict: 'accepted', messageId: `m-${WEBHOOK_ACTIVITY_LIMIT + 4}` });
    expect(activity.at(-1)?.messageId).toBe('m-6');
  });
});
