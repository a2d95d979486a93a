import { describe, expect, it } from 'vitest';
import { PLAIN_MESSAGES } from '../../../shared/bridge-errors.js';
import type { FileRecord } from './file-record.js';
import { ProgressTracker } from '../upload/progress.js';
import type { SyncPair } from '../home/settings.js';
import { buildPairView } from './views.js';

const pair: SyncPair = { id: 'pair-1', folder: '/scans', patientId: '5f0e8a3c-1d2b-4c3d-8e9f-000000000001', patientName: 'Jane Roe', remoteBasePath: '/', paused: false };
let nextId = 1;

function record(state: FileRecord['state'], updatedAt: number, error: { code: string; detail?: string } | null = null): FileRecord {
  const id = nextId++;
  return {
    id,
    pairId: pair.id,
    relativePath: `file-${id}.stl`,
    remotePath: '/',
    fileName: `file-${id}.stl`,
    size: 10,
    mtimeMs: 0,
    sha256: null,
    documentId: null,
    remoteSha256: null,
    remoteVersion: null,
    state,
    attempts: 1,
    nextAttemptAt: state === 'waiting' ? updatedAt + 5000 : null,
    errorCode: error?.code ?? null,
    errorMessage: error ? PLAIN_MESSAGES[error.code as keyof typeof PLAIN_MESSAGES] : null,
    errorDetail: error?.detail ?? null,
    bytesDone: 0,
    uploadUrl: null,
    deletedLocally: false,
    updatedAt,
    syncedAt: null,
    lostAt: null,
  };
}

const view = (records: FileRecord[], folderError: string | null = null) => buildPairView({ pair, records, progress: new ProgressTracker(() => 0), online: true, folderError });

describe('a pair’s reasons', () => {
  it('tells the failed files by their own reasons, most common first, not by a newer waiting file’s', () => {
    const records = [
      record('failed', 1, { code: 'INVALID_NAME', detail: 'fileName must not contain control characters' }),
      record('failed', 2, { code: 'INVALID_NAME', detail: 'fileName must not end with a dot' }),
      record('failed', 3, { code: 'NO_CONSENT' }),
      record('waiting', 9, { code: 'UNREACHABLE' }),
    ];
    const pairView = view(records);
    const names = records.map((entry) => entry.relativePath);
    expect(pairView.failureReasons).toEqual([
      { code: 'INVALID_NAME', message: PLAIN_MESSAGES.INVALID_NAME, detail: 'fileName must not end with a dot', count: 2, fileNames: [names[1], names[0]] },
      { code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT, detail: undefined, count: 1, fileNames: [names[2]] },
    ]);
    expect(pairView.lastError?.code).toBe('NO_CONSENT'); // the newest failure, never the waiting file
    expect(pairView.retryReason?.code).toBe('UNREACHABLE');
    expect(pairView.folderError).toBeNull();
  });

  it('has no failure reason while files only wait for a retry', () => {
    const pairView = view([record('waiting', 5, { code: 'SERVER_ERROR' }), record('synced', 6)]);
    expect(pairView.failureReasons).toEqual([]);
    expect(pairView.lastError).toBeNull();
    expect(pairView.retryReason?.code).toBe('SERVER_ERROR');
  });

  it('names a missing folder first, and a pair with nothing else to do needs attention for it', () => {
    const pairView = view([record('synced', 1), record('failed', 2, { code: 'TOO_LARGE' })], PLAIN_MESSAGES.FOLDER_MISSING);
    expect(pairView.folderError).toEqual({ code: 'FOLDER_MISSING', message: PLAIN_MESSAGES.FOLDER_MISSING });
    expect(pairView.lastError?.code).toBe('FOLDER_MISSING');
    expect(pairView.failureReasons.map((reason) => reason.code)).toEqual(['TOO_LARGE']);
    expect(view([record('synced', 1)], PLAIN_MESSAGES.FOLDER_MISSING).state).toBe('attention');
    expect(view([record('synced', 1)]).state).toBe('idle');
  });

  it('sets an empty file aside: not failed, not in the progress, the folder up to date', () => {
    const empty = { ...record('failed', 3, { code: 'EMPTY_FILE' }), size: 0 };
    const pairView = view([record('synced', 1), empty]);
    expect(pairView.counts.failed).toBe(0);
    expect(pairView.skipped).toBe(1);
    expect(pairView.failureReasons).toEqual([]);
    expect(pairView.state).toBe('idle');
    expect(pairView.items).toEqual({ done: 1, total: 1 });
  });

  it('counts a DICOM series as one item for the text and the bar, done once all its slices are', () => {
    const slice = (state: FileRecord['state'], name: string) => ({ ...record(state, 1), relativePath: `CBCT/${name}`, fileName: name });
    const scan = { ...record('synced', 1), relativePath: 'Case 1/upper.stl' };
    expect(view([scan, slice('synced', 'IM1'), slice('synced', 'IM2'), slice('uploading', 'IM10')]).items).toEqual({ done: 1, total: 2 });
    const done = view([scan, slice('synced', 'IM1'), slice('synced', 'IM2.dcm')]);
    expect(done.items).toEqual({ done: 2, total: 2 });
    expect(done.cases.find((entry) => entry.path === 'CBCT')?.items).toEqual({ done: 1, total: 1 });
  });

  it('names the failed files of each reason, newest first', () => {
    const refused = (at: number, name: string) => ({ ...record('failed', at, { code: 'NO_CONSENT' }), relativePath: `Case/${name}` });
    const pairView = view([refused(1, 'a.stl'), refused(3, 'c.stl'), refused(2, 'b.stl'), refused(0, 'old.stl')]);
    expect(pairView.failureReasons).toMatchObject([{ code: 'NO_CONSENT', count: 4, fileNames: ['Case/c.stl', 'Case/b.stl', 'Case/a.stl'] }]);
  });
});
