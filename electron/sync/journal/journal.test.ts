import { describe, expect, it } from 'vitest';
import { useTestJournal } from './test-journal.js';
import { IllegalTransitionError } from './states.js';

const PAIR = 'pair-1';
const scan = { size: 100, mtimeMs: 1_000, remotePath: '/scans/2026', fileName: 'jaw.stl' };

describe('journal', () => {
  const t = useTestJournal();

  it('queues a new file once, however often the scan sees it unchanged', () => {
    const first = t.journal.observe(PAIR, 'case/jaw.stl', scan);
    const again = t.journal.observe(PAIR, 'case/jaw.stl', scan);
    expect(first).toMatchObject({ state: 'queued', size: 100, remotePath: '/scans/2026', fileName: 'jaw.stl', deletedLocally: false });
    expect(again.id).toBe(first.id);
    expect(t.journal.byPair(PAIR)).toHaveLength(1);
    expect(t.journal.history(first.id).map((entry) => entry.event)).toEqual(['queued']);
  });

  it('walks a file to synced and keeps a readable history', () => {
    const { id } = t.journal.observe(PAIR, 'jaw.stl', scan);
    t.journal.transition(id, 'creating');
    t.journal.transition(id, 'uploading', { documentId: 'doc-1', sha256: 'aa' });
    t.journal.transition(id, 'uploading', { bytesDone: 50 });
    t.journal.transition(id, 'verifying', { remoteSha256: 'aa', remoteVersion: 1, bytesDone: 100 });
    t.clock = 20_000;
    const synced = t.journal.transition(id, 'synced');
    expect(synced).toMatchObject({ state: 'synced', documentId: 'doc-1', remoteSha256: 'aa', syncedAt: 20_000, errorMessage: null });
    expect(t.journal.history(id)).toEqual([
      expect.objectContaining({ event: 'queued' }),
      expect.objectContaining({ event: 'uploaded', sha256: 'aa', version: 1 }),
      expect.objectContaining({ event: 'verified', sha256: 'aa', version: 1, at: 20_000 }),
    ]);
  });

  it('forgets a resumable upload begun for bytes the file no longer has', () => {
    const { id } = t.journal.observe(PAIR, 'jaw.stl', scan);
    t.journal.transition(id, 'creating');
    t.journal.transition(id, 'uploading', { documentId: 'doc-1', uploadUrl: 'http://server/uploads/1', bytesDone: 50 });
    t.journal.transition(id, 'waiting', { nextAttemptAt: 20_000 });
    const changed = t.journal.observe(PAIR, 'jaw.stl', { ...scan, size: 120 });
    expect(changed).toMatchObject({ state: 'waiting', size: 120, uploadUrl: null, bytesDone: 0, documentId: 'doc-1' });
  });

  it('re-queues a modified synced file as a new version of the same document', () => {
    const { id } = t.journal.observe(PAIR, 'jaw.stl', scan);
    t.journal.transition(id, 'creating');
    t.journal.transition(id, 'uploading', { documentId: 'doc-1', sha256: 'aa' });
    t.journal.transition(id, 'verifying', { remoteSha256: 'aa', remoteVersion: 1 });
    t.journal.transition(id, 'synced');

    const modified = t.journal.observe(PAIR, 'jaw.stl', { ...scan, size: 120, mtimeMs: 2_000 });
    expect(modified).toMatchObject({ id, state: 'queued', size: 120, documentId: 'doc-1', remoteSha256: 'aa' });

    t.journal.transition(id, 'uploading', { sha256: 'bb' });
    t.journal.transition(id, 'verifying', { remoteSha256: 'bb', remoteVersion: 2 });
    t.journal.transition(id, 'synced');
    const events = t.journal.history(id).map((entry) => entry.event);
    expect(events).toEqual(['queued', 'uploaded', 'verified', 'queued', 'version', 'verified']);
  });

  it('refuses an illegal move and leaves the row as it was', () => {
    const { id } = t.journal.observe(PAIR, 'jaw.stl', scan);
    expect(() => t.journal.transition(id, 'synced')).toThrow(IllegalTransitionError);
    expect(t.journal.get(id)?.state).toBe('queued');
  });

  it('resumes a step interrupted by a crash after a restart', () => {
    const { id } = t.journal.observe(PAIR, 'jaw.stl', scan);
    t.journal.observe(PAIR, 'later.stl', scan);
    t.journal.transition(id, 'creating');
    t.journal.transition(id, 'uploading', { documentId: 'doc-1', uploadUrl: 'http://server/uploads/1', bytesDone: 64 });
    t.journal.close();

    t.reopen();
    const due = t.journal.due(t.clock, 10);
    expect(due.map((row) => row.relativePath)).toEqual(['jaw.stl', 'later.stl']);
    expect(due[0]).toMatchObject({ state: 'uploading', documentId: 'doc-1', uploadUrl: 'http://server/uploads/1', bytesDone: 64 });
    expect(t.journal.due(t.clock, 10, { busy: [id] }).map((row) => row.relativePath)).toEqual(['later.stl']);
  });

  it('keeps the row of a deleted file and explains why an unstarted one will not upload', () => {
    const synced = t.journal.observe(PAIR, 'done.stl', scan);
    t.journal.transition(synced.id, 'verifying');
    t.journal.transition(synced.id, 'synced');
    t.journal.observe(PAIR, 'pending.stl', scan);

    expect(t.journal.markDeletedLocally(PAIR, 'done.stl')).toMatchObject({ state: 'synced', deletedLocally: true });
    const pending = t.journal.markDeletedLocally(PAIR, 'pending.stl');
    expect(pending).toMatchObject({ state: 'failed', deletedLocally: true });
    expect(pending?.errorMessage).toMatch(/deleted from the folder/);
    expect(t.journal.byPair(PAIR)).toHaveLength(2);
    expect(t.journal.retryFailed({ pairId: PAIR })).toBe(0);

    // The scanner writes the file back: it is uploaded after all.
    expect(t.journal.observe(PAIR, 'pending.stl', scan)).toMatchObject({ state: 'queued', deletedLocally: false, errorMessage: null });
    expect(t.journal.history(pending!.id).map((entry) => entry.event)).toEqual(['queued', 'deleted-locally', 'queued']);
  });

  it('retries failed files for one file or a whole pair and counts states per pair', () => {
    const failOne = (path: string) => {
      const { id } = t.journal.observe(PAIR, path, scan);
      t.journal.transition(id, 'failed', { errorCode: 'FORBIDDEN', errorMessage: 'The clinic may not add files for this patient.' });
      return id;
    };
    const first = failOne('a.stl');
    failOne('b.stl');
    t.journal.observe('pair-2', 'c.stl', scan);
    expect(t.journal.counts(PAIR)).toEqual({ queued: 0, creating: 0, uploading: 0, verifying: 0, synced: 0, waiting: 0, failed: 2 });
    expect(t.journal.history(first).at(-1)).toMatchObject({ event: 'failed', detail: 'The clinic may not add files for this patient.' });

    expect(t.journal.retryFailed({ fileId: first })).toBe(1);
    expect(t.journal.get(first)).toMatchObject({ state: 'queued', errorCode: null, attempts: 0 });
    expect(t.journal.retryFailed({ pairId: PAIR })).toBe(1);
    expect(t.journal.counts(PAIR)).toMatchObject({ queued: 2, failed: 0 });
  });

  it('re-queues a failed file when it changes on disk, but not when it is merely seen again', () => {
    const { id } = t.journal.observe(PAIR, 'a.stl', scan);
    t.journal.transition(id, 'failed', { errorCode: 'PAYLOAD_TOO_LARGE', errorMessage: 'The file is larger than the server accepts.' });
    expect(t.journal.observe(PAIR, 'a.stl', scan).state).toBe('failed');
    expect(t.journal.observe(PAIR, 'a.stl', { ...scan, size: 10 }).state).toBe('queued');
  });

});
