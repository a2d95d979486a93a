import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSettings, type SyncPair } from './settings.js';
import { describeLiveChanges, describePairChanges, KeptSettings, pairChanges, readLiveSettings, SettingsFileProblem } from './settings-live.js';

describe('settings a running engine takes up', () => {
  let directory: string;

  beforeEach(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'settings-live-'));
  });

  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('reads what another process saved, with the defaults for what the file leaves out', async () => {
    const settings = openSettings(directory);
    expect(readLiveSettings(settings)).toEqual({ concurrency: 3, settleMs: 2000, rescanMinutes: 10, recheckMinutes: 240, ignorePatterns: [], bandwidthLimit: 0 });
    // Another process (the CLI's `config`) writes the file; this store reads it again.
    openSettings(directory).set('recheckMinutes', 15);
    expect(readLiveSettings(settings).recheckMinutes).toBe(15);
    await writeFile(settings.path, JSON.stringify({ concurrency: 2 }));
    expect(readLiveSettings(settings)).toEqual({ concurrency: 2, settleMs: 2000, rescanMinutes: 10, recheckMinutes: 240, ignorePatterns: [], bandwidthLimit: 0 });
  });

  it('says why a file that cannot be used is not, without repairing it', async () => {
    const settings = openSettings(directory);
    const problem = (): SettingsFileProblem => {
      try {
        readLiveSettings(settings);
      } catch (error) {
        if (error instanceof SettingsFileProblem) return error;
        throw error;
      }
      throw new Error('no problem found');
    };
    await writeFile(settings.path, '{ "concurrency": 2,');
    expect(problem().message).toBe(`The settings file ${settings.path} was changed but cannot be used (it is not valid JSON): the settings from before stay in force until it is fixed.`);
    await writeFile(settings.path, JSON.stringify({ concurrency: 99, recheckMinutes: 5 }));
    expect(problem().reason).toMatch(/^not allowed: .*concurrency.* must be <= 32/);
    await rm(settings.path);
    expect(problem().reason).toBe('it is not there');
  });

  it('reads as last read while the file is broken, refuses to save over it, and writes a deleted file again in full', async () => {
    const file = openSettings(directory);
    file.set('pairs', [{ id: 'chair-1', folder: '/scans/chair-1', patientId: '7b0f2c1e-4a5d-4e6f-8a9b-0c1d2e3f4a5b', remoteBasePath: '/scans', paused: false }]);
    const kept = new KeptSettings(file);
    await writeFile(file.path, '{ "pairs": [');
    expect(kept.get('pairs').map((pair) => pair.id)).toEqual(['chair-1']);
    expect(() => kept.read()).toThrow(SettingsFileProblem);
    expect(() => kept.set('concurrency', 2)).toThrow(/cannot be used \(it is not valid JSON\).* Nothing was changed\.$/);
    expect(await readFile(file.path, 'utf8')).toBe('{ "pairs": [');

    await rm(file.path);
    expect(kept.get('pairs').map((pair) => pair.id)).toEqual(['chair-1']);
    kept.set('concurrency', 2);
    expect(JSON.parse(await readFile(file.path, 'utf8'))).toMatchObject({ concurrency: 2, settleMs: 2000, pairs: [{ id: 'chair-1' }] });
    expect(kept.read().concurrency).toBe(2);
  });

  it('names each change in plain words, old value and new', () => {
    const before = { concurrency: 3, settleMs: 2000, rescanMinutes: 10, recheckMinutes: 240, ignorePatterns: [], bandwidthLimit: 0 };
    expect(describeLiveChanges(before, { ...before })).toEqual([]);
    expect(describeLiveChanges(before, { concurrency: 2, settleMs: 500, rescanMinutes: 0, recheckMinutes: 15, ignorePatterns: ['*.tmp', '~*'], bandwidthLimit: 500000 })).toEqual([
      'synced files checked on the server: every 15 minutes (was every 240 minutes)',
      'files uploaded at once: 2 (was 3)',
      'a file must stay unchanged for: 500 ms (was 2000 ms)',
      'folders rescanned: never (was every 10 minutes)',
      'files ignored: *.tmp, ~* (was none)',
      'upload limit: 500000 bytes/s (was none)',
    ]);
    expect(describeLiveChanges({ ...before, recheckMinutes: 15 }, { ...before, recheckMinutes: 0 })).toEqual(['synced files checked on the server: never (was every 15 minutes)']);
  });

  it('tells the sync folders another process added, removed, changed, paused or resumed from the ones the engine runs', () => {
    const pair = (id: string, change: Partial<SyncPair> = {}): SyncPair => ({ id, folder: `/scans/${id}`, patientId: '7b0f2c1e-4a5d-4e6f-8a9b-0c1d2e3f4a5b', patientName: 'Jane Roe', remoteBasePath: '/scans', paused: false, ...change });
    const running = [pair('kept'), pair('gone'), pair('moved'), pair('pausing'), pair('resuming', { paused: true })];
    const saved = [pair('kept'), pair('moved', { remoteBasePath: '/cbct' }), pair('pausing', { paused: true }), pair('resuming'), pair('new', { patientName: undefined })];
    const changes = pairChanges(running, saved);
    expect(Object.fromEntries(Object.entries(changes).map(([kind, pairs]) => [kind, (pairs as SyncPair[]).map((entry) => entry.id)]))).toEqual({ added: ['new'], removed: ['gone'], changed: ['moved'], paused: ['pausing'], resumed: ['resuming'] });
    expect(describePairChanges(changes)).toEqual([
      'now syncing /scans/new → patient 7b0f2c1e-4a5d-4e6f-8a9b-0c1d2e3f4a5b /scans',
      '/scans/moved now syncs to Jane Roe /cbct',
      'no longer syncing /scans/gone',
      '/scans/pausing paused',
      '/scans/resuming resumed',
    ]);
    expect(pairChanges(running, running)).toEqual({ added: [], removed: [], changed: [], paused: [], resumed: [] });
  });
});
