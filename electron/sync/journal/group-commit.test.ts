import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GroupCommit } from './group-commit.js';
import { openJournal } from './open-journal.js';
import { IllegalTransitionError } from './states.js';

const scan = { size: 100, mtimeMs: 1_000, remotePath: '/scans', fileName: 'jaw.stl' };

describe('group commit', () => {
  let directory = '';
  let file = '';
  let writer: Database.Database;
  /** A second connection, as another process (or the app after a crash) would open the file. */
  let reader: Database.Database;
  const seen = () => reader.prepare('SELECT name FROM notes ORDER BY id').pluck().all();
  const insert = (name: string, parent: number | null = null) => () => writer.prepare('INSERT INTO notes (name, parent) VALUES (?, ?)').run(name, parent).changes;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'group-commit-'));
    file = join(directory, 'journal.sqlite');
    writer = new Database(file);
    writer.pragma('journal_mode = WAL');
    writer.pragma('foreign_keys = ON');
    // A reference checked only at COMMIT: a way to make a real commit fail.
    writer.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, name TEXT UNIQUE, parent INTEGER REFERENCES notes (id) DEFERRABLE INITIALLY DEFERRED)');
    reader = new Database(file, { readonly: true });
  });
  afterEach(() => {
    reader.close();
    writer.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('commits the writes of one turn in one transaction, before any caller goes on', async () => {
    const group = new GroupCommit(writer);
    const first = group.run(insert('creating jaw.stl'));
    const second = group.run(insert('creating bite.ply'));
    // Queued, not written yet: nothing a crash now could lose was promised.
    expect(seen()).toEqual([]);
    await first;
    // Durable for the caller that goes on: another connection sees it, and the other write with it.
    expect(seen()).toEqual(['creating jaw.stl', 'creating bite.ply']);
    await expect(second).resolves.toBe(1);
  });

  it('undoes only the write that throws, and rejects only its caller', async () => {
    const group = new GroupCommit(writer);
    const kept = group.run(insert('uploading jaw.stl'));
    const refused = group.run(insert('uploading jaw.stl'));
    const after = group.run(insert('uploading bite.ply'));
    await expect(refused).rejects.toThrow(/UNIQUE/);
    await expect(kept).resolves.toBe(1);
    await expect(after).resolves.toBe(1);
    expect(seen()).toEqual(['uploading jaw.stl', 'uploading bite.ply']);
  });

  it('rejects every caller of a group whose commit fails, and keeps none of its writes', async () => {
    const group = new GroupCommit(writer);
    const callers = [group.run(insert('verifying jaw.stl')), group.run(insert('orphan', 999)), group.run(insert('verifying bite.ply'))];
    const outcomes = await Promise.allSettled(callers);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(outcomes.map((outcome) => (outcome as PromiseRejectedResult).reason.code)).toEqual(Array(3).fill('SQLITE_CONSTRAINT_FOREIGNKEY'));
    expect(seen()).toEqual([]);
    expect(writer.inTransaction).toBe(false);
    // The next group starts clean.
    await group.run(insert('verifying jaw.stl'));
    expect(seen()).toEqual(['verifying jaw.stl']);
  });
});

describe('the journal with grouped transitions', () => {
  let directory = '';
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'group-journal-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('persists each file’s grouped transition before its caller goes on, and keeps the order of writes', async () => {
    const journal = openJournal(join(directory, 'journal.sqlite'));
    const reader = new Database(join(directory, 'journal.sqlite'), { readonly: true });
    try {
      const jaw = journal.observe('pair', 'jaw.stl', scan);
      const bite = journal.observe('pair', 'bite.stl', { ...scan, fileName: 'bite.stl' });
      const stateOf = (id: number) => reader.prepare('SELECT state FROM files WHERE id = ?').pluck().get(id);
      const creating = journal.transitionGrouped(jaw.id, 'creating');
      const biteCreating = journal.transitionGrouped(bite.id, 'creating');
      await expect(creating).resolves.toMatchObject({ state: 'creating' });
      expect([stateOf(jaw.id), stateOf(bite.id)]).toEqual(['creating', 'creating']);
      await biteCreating;

      // A transition written at once comes after the grouped ones asked for before it.
      const uploading = journal.transitionGrouped(jaw.id, 'uploading', { documentId: 'doc-1' });
      expect(journal.transition(jaw.id, 'verifying', { remoteSha256: 'aa', remoteVersion: 1 }).state).toBe('verifying');
      await expect(uploading).resolves.toMatchObject({ state: 'uploading', documentId: 'doc-1' });
      expect(stateOf(jaw.id)).toBe('verifying');

      // An illegal move fails its own caller only.
      const illegal = journal.transitionGrouped(bite.id, 'synced');
      const legal = journal.transitionGrouped(jaw.id, 'synced');
      await expect(illegal).rejects.toBeInstanceOf(IllegalTransitionError);
      await expect(legal).resolves.toMatchObject({ state: 'synced' });
      expect([stateOf(jaw.id), stateOf(bite.id)]).toEqual(['synced', 'creating']);
    } finally {
      reader.close();
      journal.close();
    }
  });
});
