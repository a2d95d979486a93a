/**
 * For the journal's unit tests: a journal in a fresh temp folder before each test, with a clock the
 * test sets (`t.clock = …`), closed and removed after it. `t.reopen()` closes the journal and opens
 * the same file again, as an app restart does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { Journal } from './journal.js';
import { openJournal } from './open-journal.js';

export interface TestJournal {
  journal: Journal;
  clock: number;
  reopen(): Journal;
}

export function useTestJournal(): TestJournal {
  let directory = '';
  const open = () => openJournal(join(directory, 'journal.sqlite'), { now: () => t.clock });
  const t: TestJournal = {
    journal: undefined as unknown as Journal,
    clock: 10_000,
    reopen() {
      t.journal.close();
      t.journal = open();
      return t.journal;
    },
  };
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'journal-'));
    t.clock = 10_000;
    t.journal = open();
  });
  afterEach(() => {
    t.journal.close();
    rmSync(directory, { recursive: true, force: true });
  });
  return t;
}
