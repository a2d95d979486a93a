import { describe, expect, it } from 'vitest';
import { useTestJournal } from './test-journal.js';

const PAIR = 'pair-1';
const scan = { size: 100, mtimeMs: 1_000, remotePath: '/scans/2026', fileName: 'jaw.stl' };

describe('journal: rows due and retry delays', () => {
  const t = useTestJournal();

  it('holds a waiting file back until its retry time', () => {
    const { id } = t.journal.observe(PAIR, 'jaw.stl', scan);
    t.journal.transition(id, 'creating');
    t.journal.transition(id, 'waiting', { attempts: 1, nextAttemptAt: 15_000, errorCode: 'NETWORK', errorMessage: 'The server could not be reached.' });
    expect(t.journal.due(14_999, 10)).toEqual([]);
    expect(t.journal.due(15_000, 10).map((row) => row.id)).toEqual([id]);
    expect(t.journal.due(15_000, 10, { pairIds: ['other-pair'] })).toEqual([]);
  });

  it('holds a file that changed under its upload until it has settled again', () => {
    const { id } = t.journal.observe(PAIR, 'jaw.stl', scan);
    t.journal.transition(id, 'creating');
    t.journal.transition(id, 'uploading', { documentId: 'doc-1' });
    t.journal.transition(id, 'queued', { size: 120, nextAttemptAt: 12_000 });
    expect(t.journal.due(11_999, 10)).toEqual([]);
    expect(t.journal.due(12_000, 10).map((row) => row.id)).toEqual([id]);
    // A new file is due at once.
    const fresh = t.journal.observe(PAIR, 'new.stl', scan);
    expect(t.journal.due(10_000, 10).map((row) => row.id)).toEqual([fresh.id]);
  });

  it('makes due at once only the files waiting for an unreachable server, not those the server asked to wait', () => {
    const wait = (name: string, code: string) => {
      const { id } = t.journal.observe(PAIR, name, { ...scan, fileName: name });
      t.journal.transition(id, 'creating');
      return t.journal.transition(id, 'waiting', { attempts: 3, nextAttemptAt: 600_000, errorCode: code }).id;
    };
    const unreachable = wait('a.stl', 'UNREACHABLE');
    const untrusted = wait('b.stl', 'CERT_UNTRUSTED');
    const limited = wait('c.stl', 'RATE_LIMITED');
    const serverBusy = wait('d.stl', 'SERVER_ERROR');
    t.clock = 20_000;
    expect(t.journal.retryUnreachableNow(t.clock, ['UNREACHABLE', 'CERT_UNTRUSTED'])).toBe(2);
    expect(t.journal.get(unreachable)).toMatchObject({ state: 'waiting', nextAttemptAt: 20_000, attempts: 3 });
    expect(t.journal.get(untrusted)).toMatchObject({ nextAttemptAt: 20_000 });
    expect(t.journal.get(limited)).toMatchObject({ nextAttemptAt: 600_000 });
    expect(t.journal.get(serverBusy)).toMatchObject({ nextAttemptAt: 600_000 });
    expect(t.journal.due(t.clock, 10).map((record) => record.id).sort()).toEqual([unreachable, untrusted].sort());
    expect(t.journal.retryUnreachableNow(t.clock, [])).toBe(0);
  });
});
