/**
 * The journal file as a power cut or a failing disk leaves it: openJournal sets it aside (with its
 * write-ahead log) and starts a fresh one instead of refusing to start.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openJournal } from '../electron/sync/journal/open-journal.js';
import { tempDir } from './helpers/server.js';

const scan = { size: 100, mtimeMs: 1_000, remotePath: '/scans', fileName: 'jaw.stl' };

describe('a damaged journal', () => {
  const directories: string[] = [];
  afterEach(() => {
    for (const directory of directories.splice(0)) fs.rmSync(directory, { recursive: true, force: true });
  });

  /** A journal with rows, closed, then damaged by `damage`. */
  function damagedJournal(damage: (file: string) => void): string {
    const directory = tempDir('local-journal');
    directories.push(directory);
    const file = path.join(directory, 'journal.db');
    const journal = openJournal(file);
    for (let index = 0; index < 500; index += 1) journal.observe('pair', `case-${index}/jaw.stl`, scan);
    journal.close();
    damage(file);
    return file;
  }

  it.each([
    ['garbage', (file: string) => fs.writeFileSync(file, 'x'.repeat(8192))],
    ['truncated', (file: string) => fs.truncateSync(file, Math.floor(fs.statSync(file).size / 3))],
    ['a page overwritten', (file: string) => {
      const descriptor = fs.openSync(file, 'r+');
      fs.writeSync(descriptor, Buffer.alloc(4096, 0xa5), 0, 4096, 4096);
      fs.closeSync(descriptor);
    }],
  ])('%s: set aside, never deleted, and a fresh journal opens', (_label, damage) => {
    const file = damagedJournal(damage);
    const before = fs.readFileSync(file);
    const journal = openJournal(file);
    try {
      expect(journal.recovery?.setAsideAs).toMatch(/journal\.db\.unreadable-/);
      expect(fs.readFileSync(journal.recovery!.setAsideAs).equals(before)).toBe(true);
      expect(journal.byPair('pair')).toEqual([]);
      expect(journal.observe('pair', 'case-1/jaw.stl', scan).state).toBe('queued');
    } finally {
      journal.close();
    }
    const reopened = openJournal(file);
    expect(reopened.recovery).toBeUndefined();
    expect(reopened.byPair('pair')).toHaveLength(1);
    reopened.close();
  });

  it('a healthy journal opens as it was', () => {
    const file = damagedJournal(() => undefined);
    const journal = openJournal(file);
    expect(journal.recovery).toBeUndefined();
    expect(journal.byPair('pair')).toHaveLength(500);
    journal.close();
  });
});
