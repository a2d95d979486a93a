/**
 * A pair whose files are all synced but which still holds files the engine has not taken on yet
 * (a CBCT export being written, a scan locked by the scanner software) is not "idle".
 */
import { describe, expect, it } from 'vitest';
import { traySummary } from '../electron/main/notices.js';
import { ProgressTracker } from '../electron/sync/upload/progress.js';
import type { SyncPair } from '../electron/sync/home/settings.js';
import { buildPairView } from '../electron/sync/journal/views.js';

const pair: SyncPair = { id: 'pair-1', folder: '/scans', patientId: '5f0e8a3c-1d2b-4c3d-8e9f-000000000001', remoteBasePath: '/', paused: false };
const view = (settling: number, unreadable: string[] = [], paused = false) =>
  buildPairView({ pair: { ...pair, paused }, records: [], progress: new ProgressTracker(() => 0), online: true, settling, unreadable });

describe('a pair with files not yet taken on', () => {
  it('is syncing while files are still being written, and needs attention when one cannot be opened', () => {
    expect(view(0)).toMatchObject({ state: 'idle', settling: 0, unreadable: [] });
    expect(view(2)).toMatchObject({ state: 'syncing', settling: 2 });
    expect(view(2, ['case/lower.stl'])).toMatchObject({ state: 'attention', unreadable: ['case/lower.stl'] });
    expect(view(2, ['case/lower.stl'], true).state).toBe('paused');
  });
});

describe('the tray line', () => {
  it('is not "Up to date" while a file cannot be opened or is still being written', () => {
    expect(traySummary([view(0)], true)).toBe('Up to date');
    expect(traySummary([view(3)], true)).toBe('Waiting for 3 files to finish writing…');
    expect(traySummary([view(3, ['lower.stl'])], true)).toBe('1 file cannot be opened');
  });
});
