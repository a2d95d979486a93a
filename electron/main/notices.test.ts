import { describe, expect, it } from 'vitest';
import type { PairView } from '../../shared/bridge.js';
import { GONE_FROM_SERVER_MESSAGE, PLAIN_MESSAGES } from '../../shared/bridge-errors.js';
import { FILE_STATES } from '../../shared/bridge.js';
import { noticesBetween } from './notices.js';

function pair(failureReasons: PairView['failureReasons'], synced: number): PairView {
  const failed = failureReasons.reduce((sum, reason) => sum + reason.count, 0);
  const counts = { ...(Object.fromEntries(FILE_STATES.map((state) => [state, 0])) as PairView['counts']), synced, failed };
  return {
    id: 'pair-1', folder: '/scans', patientId: 'p', patientName: 'Jane Roe', remoteBasePath: '/scans', paused: false, state: failed > 0 ? 'attention' : 'idle', counts,
    bytesDone: 0, bytesTotal: 0, rateBytesPerSecond: 0, etaSeconds: null, cases: [], items: { done: synced, total: synced + failed }, skipped: 0, lastError: failureReasons[0] ?? null, failureReasons, retryReason: null,
    folderError: null, settling: 0, unreadable: [], heldForDiskFull: 0,
  };
}

describe('desktop notifications of failed files', () => {
  const lost = { code: 'LOST_ON_SERVER' as const, message: PLAIN_MESSAGES.LOST_ON_SERVER };
  const gone = { code: 'NOT_FOUND' as const, message: GONE_FROM_SERVER_MESSAGE };
  const tooLarge = { code: 'TOO_LARGE' as const, message: PLAIN_MESSAGES.TOO_LARGE };

  it('a synced scan the re-check found gone from the server is "no longer on the server", not "could not be uploaded"', () => {
    expect(noticesBetween([pair([], 3)], [pair([{ ...lost, count: 1 }], 2)])[0]).toMatchObject({ title: 'A scan is no longer on the server', body: `${PLAIN_MESSAGES.LOST_ON_SERVER} (Jane Roe)` });
    expect(noticesBetween([pair([], 3)], [pair([{ ...gone, count: 2 }], 1)])[0]!.title).toBe('2 scans are no longer on the server');
  });

  it('an upload that failed still says so, and a mix needs attention', () => {
    expect(noticesBetween([pair([], 3)], [pair([{ ...tooLarge, count: 1 }], 2)])[0]!.title).toBe('A file could not be uploaded');
    expect(noticesBetween([pair([{ ...lost, count: 1 }], 2)], [pair([{ ...lost, count: 1 }, { ...tooLarge, count: 1 }], 1)])[0]!.title).toBe('A file could not be uploaded');
    expect(noticesBetween([pair([], 3)], [pair([{ ...lost, count: 1 }, { ...tooLarge, count: 1 }], 1)])[0]!.title).toBe('2 files need attention');
  });
});
