/**
 * New case folders written at once (a scanner's export: a new folder, then its files within a
 * second), one round of each kind, written by a process of their own into a pair of a real engine
 * against a real server process: every file is journaled once found and settled, and ends synced,
 * one document each. The stress rounds of the same writes, timed file by file with every core busy,
 * are test/watch-new-folders.stress.test.ts's (run alone).
 */
import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { PATIENT } from './helpers/server.js';
import { ROUND_KINDS, ScanWriter, writeRound } from './helpers/scan-writer.js';
import { allDocuments, startEngine, waitFor } from './helpers/sync.js';

const SETTLE_MS = 300;
/** What the stability gate takes, on a busy machine, to stat and open a few hundred files and journal them (3.6 s seen with every core busy). */
const JOURNAL_MARGIN_MS = 5000;
/** Another run, other rounds: the seed is in the title, and a run is played again by setting it here. */
const SEED = Math.floor(Math.random() * 2 ** 31);

describe(`files written into new folders at once, end to end against the real server (seed ${SEED})`, () => {
  let base: string;
  let staging: string;
  let writer: ScanWriter;
  let server: ServerProcess;

  beforeAll(async () => {
    // The staging folder is on the same disk, outside the watched folder: renames stay renames.
    base = await mkdtemp(path.join(tmpdir(), 'new-folders-sync-'));
    staging = path.join(base, 'staging');
    fs.mkdirSync(staging);
    writer = ScanWriter.start();
    server = await startServerProcess();
  });
  afterAll(async () => {
    await server?.stop();
    await writer?.close();
    if (base) await rm(base, { recursive: true, force: true });
  });

  it('every file of new case folders is journaled once found and settled, and ends synced', async () => {
    const roundsFolder = path.join(base, 'watched');
    fs.mkdirSync(roundsFolder);
    const sut = await startEngine(server.url, { folder: roundsFolder, remoteBasePath: '/new-folders', tuning: { settleMs: SETTLE_MS, rescanMinutes: 0 } });
    const state = (relativePath: string) => sut.journal.find(sut.pair.id, relativePath)?.state ?? 'not journaled';
    try {
      const expected: string[] = [];
      for (let round = 0; round < ROUND_KINDS.length; round++) {
        const written = await writeRound({ writer, folder: roundsFolder, staging, round, seed: SEED, maxFiles: 40 });
        const files = written.files.map((file) => file.relativePath);
        expected.push(...files);
        const deadline = Math.max(...written.files.map((file) => file.appearedAt)) + 2 * SETTLE_MS + JOURNAL_MARGIN_MS;
        await waitFor(`round ${round} (${written.plan.kind}) journaled`, () => files.every((relativePath) => state(relativePath) !== 'not journaled'), Math.max(0, deadline - Date.now()), 50).catch((error: unknown) => {
          throw new Error(`${String(error)}: ${files.filter((relativePath) => state(relativePath) === 'not journaled').length} of ${files.length} files not found`);
        });
      }
      const notSynced = () => expected.filter((relativePath) => state(relativePath) !== 'synced');
      await waitFor(`all ${expected.length} files synced`, () => notSynced().length === 0 && sut.engine.isSettled(), 45_000).catch((error: unknown) => {
        throw new Error(`${String(error)}: ${notSynced().length} of ${expected.length} not synced: ${notSynced().slice(0, 5).map((relativePath) => `${relativePath} ${state(relativePath)}`).join(', ')}`);
      });
      const documents = await allDocuments(sut.api, PATIENT, '/new-folders');
      expect(documents.map((document) => `${document.path}/${document.fileName}`).sort()).toEqual(expected.map((relativePath) => `/new-folders/${relativePath}`).sort());
    } finally {
      await sut.close();
    }
  }, 90_000);
});
