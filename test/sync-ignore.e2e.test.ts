/**
 * An ignore pattern added while files are already in the journal (the IT answer to a file that
 * keeps failing): the file stops counting — it leaves the failed and pending views and no longer
 * keeps a run from finishing green — while a file already synced stays as history. Against the
 * real server and real folders.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { startEngine, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

describe('an ignore pattern added later', () => {
  let server: ServerProcess;
  let sut: EngineUnderTest;

  beforeAll(async () => {
    server = await startServerProcess();
    sut = await startEngine(server.url, { remoteBasePath: '/ignore-later' });
  });
  afterAll(async () => {
    await sut?.close();
    await server?.stop();
  });

  const record = (relativePath: string) => sut.journal.find(sut.pair.id, relativePath);
  const failedPaths = () => sut.engine.fileViews(sut.pair.id, ['failed']).map((file) => file.relativePath);

  it('takes a failing file out of the failed view, leaves a synced one as history, and shows the failure again once the pattern is gone', async () => {
    writeFile(sut.folder, 'report.pdf ', 'trailing space: the server refuses the name');
    writeFile(sut.folder, 'report-old.pdf', 'synced before the pattern');
    writeFile(sut.folder, 'ok.stl', 'solid ok');
    await waitFor('the files settled', () => record('ok.stl')?.state === 'synced' && record('report-old.pdf')?.state === 'synced' && record('report.pdf ')?.state === 'failed');
    expect(failedPaths()).toEqual(['report.pdf ']);

    await sut.engine.setTuning({ ignorePatterns: ['report*'] });
    await waitFor('the ignored file no longer counted', () => failedPaths().length === 0 && sut.engine.isSettled());
    const pair = sut.engine.pairView(sut.pair.id)!;
    expect(pair.state).toBe('idle');
    expect(pair.counts.failed).toBe(0);
    expect(sut.engine.fileViews(sut.pair.id).map((file) => [file.relativePath, file.state])).toEqual([
      ['ok.stl', 'synced'],
      ['report-old.pdf', 'synced'],
    ]);
    expect(sut.journal.history(record('report.pdf ')!.id).map((entry) => entry.event)).toContain('ignored');

    await sut.engine.setTuning({ ignorePatterns: [] });
    await waitFor('the failure shown again', () => failedPaths().includes('report.pdf '));
    expect(record('report.pdf ')).toMatchObject({ state: 'failed', errorCode: 'INVALID_NAME' });
  });
});
