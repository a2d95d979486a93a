import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DocumentDto, SearchBody } from '../../../shared/schemas.js';
import type { DocumentApi } from '../api/document-api.js';
import type { FileRecord } from '../journal/file-record.js';
import type { Journal } from '../journal/journal.js';
import { openJournal } from '../journal/open-journal.js';
import { judge, RECHECK_BATCH, recheckPair } from './recheck.js';

const SHA = 'a'.repeat(64);

function record(partial: Partial<FileRecord> = {}): FileRecord {
  return {
    id: 1,
    pairId: 'pair-1',
    relativePath: 'jaw.stl',
    remotePath: '/scans',
    fileName: 'jaw.stl',
    size: 100,
    mtimeMs: 1,
    sha256: SHA,
    documentId: 'd1',
    remoteSha256: SHA,
    remoteVersion: 2,
    state: 'synced',
    attempts: 0,
    nextAttemptAt: null,
    errorCode: null,
    errorMessage: null,
    errorDetail: null,
    bytesDone: 100,
    uploadUrl: null,
    deletedLocally: false,
    updatedAt: 1,
    syncedAt: 1,
    lostAt: null,
    ...partial,
  };
}

function remote(partial: Partial<DocumentDto> = {}): DocumentDto {
  return { id: 'd1', storageUrl: 'http://s/d1', fileName: 'jaw.stl', fileType: 'STL', path: '/scans', lastModifiedAt: '', hasContent: true, fileSize: 100, sha256: SHA, version: 2, storageDownloadUri: 'http://s/dl', thumbnailDownloadUri: null, ...partial } as DocumentDto;
}

describe('judge: what the server answer says about a synced file', () => {
  it('kept when the server holds the same bytes, or a newer version someone else uploaded', () => {
    expect(judge(record(), remote())).toBe('kept');
    expect(judge(record(), remote({ sha256: 'b'.repeat(64), version: 3 }))).toBe('kept');
  });

  it('lost when the document has no content; older after a restore from before this version; gone when not there', () => {
    expect(judge(record(), remote({ hasContent: false, fileSize: null, sha256: null, storageDownloadUri: null }))).toBe('lost');
    expect(judge(record(), remote({ sha256: 'b'.repeat(64), version: 1 }))).toBe('older');
    expect(judge(record(), undefined)).toBe('gone');
  });
});

describe('recheckPair over many synced files', () => {
  let directory: string;
  let journal: Journal;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'recheck-'));
    journal = openJournal(join(directory, 'journal.db'));
  });

  afterEach(() => {
    journal.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('checks 50,000 synced files in searches of 30 ids without writing anything when all are in place', async () => {
    const files = Array.from({ length: 50_000 }, (_, index) => ({ relativePath: `case-${index % 500}/scan-${index}.stl`, observed: { size: 100, mtimeMs: 1, remotePath: '/scans', fileName: `scan-${index}.stl` } }));
    journal.observeMany('pair-1', files);
    // Straight to synced in one statement (the pipeline's steps are not what is measured here).
    const raw = new Database(join(directory, 'journal.db'));
    raw.prepare(`UPDATE files SET state = 'synced', document_id = 'doc-' || id, sha256 = ?, remote_sha256 = ?, remote_version = 1`).run(SHA, SHA);
    raw.close();
    const historyBefore = journal.history(1).length;
    const searches: SearchBody[] = [];
    const api: Pick<DocumentApi, 'search'> = {
      search: async (_patientId, body) => {
        searches.push(body);
        return { documents: body.id!.map((id) => remote({ id, version: 1 })), offset: 0, limit: RECHECK_BATCH, total: body.id!.length };
      },
    };
    const started = performance.now();
    const counts = await recheckPair(
      { id: 'pair-1', folder: directory, patientId: 'p1' },
      { journal, api: api as DocumentApi, stat: async () => ({ size: 100, mtimeMs: 1 }), now: Date.now, stopped: () => false },
    );
    const elapsed = performance.now() - started;
    expect(counts).toEqual({ checked: 50_000, requeued: 0, failed: 0, restored: 0 });
    expect(searches).toHaveLength(Math.ceil(50_000 / RECHECK_BATCH));
    expect(searches.every((body) => body.id!.length <= 30 && body.hasContent === true)).toBe(true);
    expect(journal.history(1)).toHaveLength(historyBefore);
    // The journal's share of a pass (the server's 1,667 searches come on top): well under a few seconds.
    expect(elapsed).toBeLessThan(10_000);
  }, 60_000);

  it('notes when it found a scan missing, for staff to see; a newer scan from the folder is not the one found missing', async () => {
    const names = ['kept.stl', 'lost.stl', 'lost-and-deleted.stl', 'older.stl'];
    journal.observeMany('pair-1', names.map((name) => ({ relativePath: name, observed: { size: 100, mtimeMs: 1, remotePath: '/scans', fileName: name } })));
    const raw = new Database(join(directory, 'journal.db'));
    raw.prepare(`UPDATE files SET state = 'synced', document_id = 'doc-' || id, sha256 = ?, remote_sha256 = ?, remote_version = 2, synced_at = 1000`).run(SHA, SHA);
    raw.close();
    const byName = (name: string) => journal.byPair('pair-1').find((file) => file.relativePath === name)!;
    const api: Pick<DocumentApi, 'search'> = {
      search: async () => ({
        documents: [
          remote({ id: byName('kept.stl').documentId! }),
          remote({ id: byName('lost.stl').documentId!, hasContent: false, sha256: null, fileSize: null } as never),
          remote({ id: byName('lost-and-deleted.stl').documentId!, hasContent: false, sha256: null, fileSize: null } as never),
          remote({ id: byName('older.stl').documentId!, sha256: 'b'.repeat(64), version: 1 }),
        ],
        offset: 0,
        limit: RECHECK_BATCH,
        total: 4,
      }),
    };
    const counts = await recheckPair(
      { id: 'pair-1', folder: directory, patientId: 'p1' },
      { journal, api: api as DocumentApi, stat: async (file) => (file.endsWith('lost-and-deleted.stl') ? undefined : { size: 100, mtimeMs: 1 }), now: () => 5000, stopped: () => false },
    );
    expect(counts).toEqual({ checked: 5, requeued: 2, failed: 1, restored: 0 });
    expect(byName('kept.stl')).toMatchObject({ state: 'synced', lostAt: null });
    expect(byName('lost.stl')).toMatchObject({ state: 'queued', lostAt: 5000 });
    expect(byName('older.stl')).toMatchObject({ state: 'queued', lostAt: 5000 });
    // Its old "synced" date (1000) stays in the record, but it is no longer what the row is about.
    expect(byName('lost-and-deleted.stl')).toMatchObject({ state: 'failed', errorCode: 'LOST_ON_SERVER', syncedAt: 1000, lostAt: 5000 });

    // The copy put back is the scan found missing: still said so once it is synced again.
    expect(journal.observe('pair-1', 'lost-and-deleted.stl', { size: 100, mtimeMs: 1, remotePath: '/scans', fileName: 'lost-and-deleted.stl' })).toMatchObject({ state: 'queued', lostAt: 5000 });
    // A synced scan changed in the folder is a new one: it was not found missing.
    expect(journal.observe('pair-1', 'kept.stl', { size: 120, mtimeMs: 2, remotePath: '/scans', fileName: 'kept.stl' })).toMatchObject({ state: 'queued', lostAt: null });
    const raw2 = new Database(join(directory, 'journal.db'));
    raw2.prepare(`UPDATE files SET state = 'synced' WHERE relative_path = 'lost.stl'`).run();
    raw2.close();
    expect(journal.observe('pair-1', 'lost.stl', { size: 120, mtimeMs: 2, remotePath: '/scans', fileName: 'lost.stl' })).toMatchObject({ state: 'queued', lostAt: null });
  });
  it('syncs a scan failed as lost again once the server has its very bytes back (IT restored them), and leaves the others failed', async () => {
    const names = ['restored.stl', 'still-lost.stl', 'other-bytes.stl', 'deleted.stl', 'copied-back.stl'];
    journal.observeMany('pair-1', names.map((name) => ({ relativePath: name, observed: { size: 100, mtimeMs: 1, remotePath: '/scans', fileName: name } })));
    const raw = new Database(join(directory, 'journal.db'));
    raw
      .prepare(`UPDATE files SET state = 'failed', error_code = 'LOST_ON_SERVER', error_message = 'lost', document_id = 'doc-' || id, sha256 = ?, remote_sha256 = ?, remote_version = 2, synced_at = 1000, lost_at = 3000, deleted_locally = 1`)
      .run(SHA, SHA);
    raw.close();
    const byName = (name: string) => journal.byPair('pair-1').find((file) => file.relativePath === name)!;
    const searches: SearchBody[] = [];
    const api: Pick<DocumentApi, 'search'> = {
      search: async (_patientId, body) => {
        searches.push(body);
        // The server answers hasContent searches: a document still without content is not in the page.
        return {
          documents: [remote({ id: byName('restored.stl').documentId! }), remote({ id: byName('other-bytes.stl').documentId!, sha256: 'b'.repeat(64), version: 3 }), remote({ id: byName('copied-back.stl').documentId! })],
          offset: 0,
          limit: RECHECK_BATCH,
          total: 3,
        };
      },
    };
    // Copied back into the folder meanwhile: queued by the watcher, the pipeline's from now on.
    const copiedBack = byName('copied-back.stl');
    const counts = await recheckPair(
      { id: 'pair-1', folder: directory, patientId: 'p1' },
      {
        journal: {
          ...journal,
          get: (id) => (id === copiedBack.id ? { ...copiedBack, state: 'queued' } : journal.get(id)),
          syncedAfter: (...args) => journal.syncedAfter(...args),
          lostAfter: (...args) => journal.lostAfter(...args),
          markDeletedLocally: (...args) => journal.markDeletedLocally(...args),
          transition: (...args) => journal.transition(...args),
        },
        api: api as DocumentApi,
        stat: async () => undefined,
        now: () => 5000,
        stopped: () => false,
      },
    );
    expect(counts).toEqual({ checked: 5, requeued: 0, failed: 0, restored: 1 });
    expect(searches).toEqual([expect.objectContaining({ hasContent: true, id: names.map((name) => byName(name).documentId) })]);
    expect(byName('restored.stl')).toMatchObject({ state: 'synced', errorCode: null, errorMessage: null, lostAt: null, remoteVersion: 2, deletedLocally: true });
    expect(journal.history(byName('restored.stl').id).at(-1)).toMatchObject({ event: 'verified', detail: expect.stringMatching(/^the server has this scan again .*its stored file was restored$/) });
    for (const name of ['still-lost.stl', 'other-bytes.stl', 'deleted.stl']) expect(byName(name)).toMatchObject({ state: 'failed', errorCode: 'LOST_ON_SERVER', lostAt: 3000 });
    expect(byName('copied-back.stl')).toMatchObject({ state: 'failed' });
  });
});
