import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openJournal } from './open-journal.js';
import type { Journal } from './journal.js';

const PAIR = 'pair-1';
const scan = { size: 100, mtimeMs: 1_000, remotePath: '/scans/2026', fileName: 'jaw.stl' };

describe('journal: rows due and retry delays', () => {
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

  it('holds a waiting file back until its retry time', () => {
    const { id } = journal.observe(PAIR, 'jaw.stl', scan);
    journal.transition(id, 'creating');
    journal.transition(id, 'waiting', { attempts: 1, nextAttemptAt: 15_000, errorCode: 'NETWORK', errorMessage: 'The server could not be reached.' });
    expect(journal.due(14_999, 10)).toEqual([]);
    expect(journal.due(15_000, 10).map((row) => row.id)).toEqual([id]);
    expect(journal.due(15_000, 10, { pairIds: ['other-pair'] })).toEqual([]);
  });

  it('holds a file that changed under its upload until it has settled again', () => {
    const { id } = journal.observe(PAIR, 'jaw.stl', scan);
    journal.transition(id, 'creating');
    journal.transition(id, 'uploading', { documentId: 'doc-1' });
    journal.transition(id, 'queued', { size: 120, nextAttemptAt: 12_000 });
    expect(journal.due(11_999, 10)).toEqual([]);
    expect(journal.due(12_000, 10).map((row) => row.id)).toEqual([id]);
    // A new file is due at once.
    const fresh = journal.observe(PAIR, 'new.stl', scan);
    expect(journal.due(10_000, 10).map((row) => row.id)).toEqual([fresh.id]);
  });

  it('makes due at once only the files waiting for an unreachable server, not those the server asked to wait', () => {
    const wait = (name: string, code: string) => {
      const { id } = journal.observe(PAIR, name, { ...scan, fileName: name });
      journal.transition(id, 'creating');
      return journal.transition(id, 'waiting', { attempts: 3, nextAttemptAt: 600_000, errorCode: code }).id;
    };
    const unreachable = wait('a.stl', 'UNREACHABLE');
    const untrusted = wait('b.stl', 'CERT_UNTRUSTED');
    const limited = wait('c.stl', 'RATE_LIMITED');
    const serverBusy = wait('d.stl', 'SERVER_ERROR');
    clock = 20_000;
    expect(journal.retryUnreachableNow(clock, ['UNREACHABLE', 'CERT_UNTRUSTED'])).toBe(2);
    expect(journal.get(unreachable)).toMatchObject({ state: 'waiting', nextAttemptAt: 20_000, attempts: 3 });
    expect(journal.get(untrusted)).toMatchObject({ nextAttemptAt: 20_000 });
    expect(journal.get(limited)).toMatchObject({ nextAttemptAt: 600_000 });
    expect(journal.get(serverBusy)).toMatchObject({ nextAttemptAt: 600_000 });
    expect(journal.due(clock, 10).map((record) => record.id).sort()).toEqual([unreachable, untrusted].sort());
    expect(journal.retryUnreachableNow(clock, [])).toBe(0);
  });
});
