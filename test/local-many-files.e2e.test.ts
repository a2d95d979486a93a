/**
 * A DICOM series dropped in one go: every slice is synced exactly once, and from the moment the
 * engine first sees the series until the last slice is verified the folder never reads "idle"
 * (the big figure, 2,000 slices and memory, is bench/; this is the quick truth check).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PairView } from '../shared/bridge.js';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { PATIENT } from './helpers/server.js';
import { allDocuments, startEngine, waitFor, type EngineUnderTest } from './helpers/sync.js';

const SLICES = 300;

describe('a series of many slices at once', () => {
  let server: ServerProcess;
  let sut: EngineUnderTest;

  beforeAll(async () => {
    server = await startServerProcess();
    sut = await startEngine(server.url, { remoteBasePath: '/series', tuning: { settleMs: 400 } });
  });
  afterAll(async () => {
    await sut?.close();
    await server?.stop();
  });

  it('syncs every slice once, and the folder is never shown idle while slices are on their way', async () => {
    const seen: PairView[] = [];
    sut.engine.onEvent((event) => {
      if (event.type === 'pairs-changed') seen.push(event.pairs[0]!);
    });
    const series = path.join(sut.folder, 'CT-0001');
    fs.mkdirSync(series);
    for (let index = 0; index < SLICES; index += 1) fs.writeFileSync(path.join(series, `slice-${String(index).padStart(4, '0')}.dcm`), Buffer.alloc(1024 + index, index % 251));

    // What the UI would show at each moment once the engine has seen the series.
    const shown: string[] = [];
    let watching = false;
    await waitFor(
      'every slice synced',
      () => {
        watching ||= sut.engine.settlingCount('pair-1') > 0;
        const view = sut.engine.pairView('pair-1')!;
        if (watching && view.state === 'idle' && view.counts.synced < SLICES) shown.push(`idle with ${view.counts.synced} synced`);
        return view.counts.synced === SLICES && sut.engine.isSettled();
      },
      90_000,
      50,
    );
    expect(watching).toBe(true);
    expect(shown).toEqual([]);
    await waitFor('the last snapshot published', () => seen.at(-1)?.counts.synced === SLICES);
    expect(seen.at(-1)).toMatchObject({ state: 'idle', settling: 0 });
    const documents = await allDocuments(sut.api, PATIENT, '/series/CT-0001');
    expect(documents).toHaveLength(SLICES);
    expect(documents.every((document) => document.version === 1)).toBe(true);
  }, 120_000);
});
