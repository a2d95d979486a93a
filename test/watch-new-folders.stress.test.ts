/**
 * Files written into a folder that has just appeared, before the watch on it is in place, send no
 * event. A scanner writes exactly so (a new case folder, then hundreds of files within a second),
 * and such a file must not wait for the next full rescan (10 minutes). Hundreds of rounds of new
 * case folders (nested, renamed into place, with and without pauses, part of them with every core
 * busy), written by a process of their own: every file is reported within the settle time plus a
 * margin, and journaled as queued once it has settled too. These rounds load every core on purpose
 * and time each file, so this file runs alone (vitest.config.ts); the rounds that end synced on a
 * real server, timed only by generous deadlines, are test/watch-new-folders-sync.e2e.test.ts's.
 */
import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIgnoreMatcher } from '../electron/sync/watch/ignore.js';
import type { Journal } from '../electron/sync/journal/journal.js';
import { openJournal } from '../electron/sync/journal/open-journal.js';
import { PairWatch } from '../electron/sync/watch/pair-watch.js';
import { watchFolder, type FolderWatcher } from '../electron/sync/watch/watcher.js';
import { PATIENT } from './helpers/server.js';
import { loadEveryCore, ROUND_KINDS, ScanWriter, writeRound, type Written } from './helpers/scan-writer.js';

const SETTLE_MS = 300;
/**
 * A file written before the new folder's watch was live is found by the look after the settle time,
 * or by the one after that when the watch was still not live then; with every core busy (and other
 * work on a shared machine) such a look has taken up to 1.3 s to get its turn and report.
 */
const MARGIN_MS = 1500;
/**
 * What the stability gate takes, with every core busy, to stat and open a few hundred files and
 * journal them (3.6 s seen): how soon a file is found is held to MARGIN_MS by the watcher's rounds.
 */
const JOURNAL_MARGIN_MS = 5000;
const WATCHER_ROUNDS = 204;
/** These rounds run with one busy process per core. */
const LOADED_ROUNDS = { from: 68, to: 136 };
/** Another run, other rounds: the seed is in the title, and a run is played again by setting it here. */
const SEED = Math.floor(Math.random() * 2 ** 31);

/**
 * Reports arriving for the files of the round under way: resolves once all of them arrived, or at
 * the deadline with whatever arrived.
 */
class Arrivals {
  readonly at = new Map<string, number>();
  private waiting: { missing: Set<string>; done: () => void } | undefined;

  arrived(relativePath: string): void {
    if (this.at.has(relativePath)) return;
    this.at.set(relativePath, Date.now());
    if (!this.waiting) return;
    this.waiting.missing.delete(relativePath);
    if (this.waiting.missing.size === 0) this.waiting.done();
  }

  async untilAll(relativePaths: readonly string[], deadline: number): Promise<void> {
    const missing = new Set(relativePaths.filter((relativePath) => !this.at.has(relativePath)));
    if (missing.size === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.waiting = { missing, done };
    });
    this.waiting = undefined;
  }
}

/** The files of a round that did not arrive within `allowedMs` of appearing, told per round. */
function late(written: Written, arrivals: Arrivals, allowedMs: (file: Written['files'][number]) => number): string[] {
  const overdue = written.files.filter((file) => (arrivals.at.get(file.relativePath) ?? Infinity) > file.appearedAt + allowedMs(file));
  if (overdue.length === 0) return [];
  const never = overdue.filter((file) => !arrivals.at.has(file.relativePath)).length;
  const delays = overdue.flatMap((file) => {
    const at = arrivals.at.get(file.relativePath);
    return at === undefined ? [] : [at - file.appearedAt];
  });
  const latest = delays.length === 0 ? '' : ` (the latest after ${Math.max(...delays)} ms)`;
  const { kind, paused } = written.plan;
  return [
    `round ${written.round} (${kind}, ${paused ? 'with pauses' : 'at full speed'}): ${overdue.length} of ${written.files.length} late${latest}, ${never} of them not reported by the end (e.g. ${overdue[0]!.relativePath})`,
  ];
}

/**
 * Writes `count` rounds into `folder`, each waited for until all its files arrived or their time
 * is up, with every core busy in the `loaded` ones; then waits a little more, so that a late file
 * is told apart from one that would wait for the next rescan. Answers the rounds late, and the
 * slowest arrival.
 */
async function runRounds(options: {
  writer: ScanWriter;
  folder: string;
  staging: string;
  count: number;
  loaded: { from: number; to: number };
  arrivals: Arrivals;
  /** How long after it appeared a file may arrive. */
  allowedMs: (file: Written['files'][number], written: Written) => number;
}): Promise<{ problems: string[]; files: number; slowestMs: number }> {
  const { writer, folder, staging, count, loaded, arrivals, allowedMs } = options;
  const rounds: Written[] = [];
  let load: { stop(): Promise<void> } | undefined;
  try {
    for (let round = 0; round < count; round++) {
      if (round === loaded.from) load = loadEveryCore();
      if (round === loaded.to) await load?.stop();
      const written = await writeRound({ writer, folder, staging, round, seed: SEED });
      rounds.push(written);
      const deadline = Math.max(...written.files.map((file) => file.appearedAt + allowedMs(file, written)));
      await arrivals.untilAll(
        written.files.map((file) => file.relativePath),
        deadline,
      );
    }
    await arrivals.untilAll(
      rounds.flatMap((written) => written.files.map((file) => file.relativePath)),
      Date.now() + 5000,
    );
  } finally {
    await load?.stop();
  }
  return {
    problems: rounds.flatMap((written) => late(written, arrivals, (file) => allowedMs(file, written))),
    files: rounds.reduce((sum, written) => sum + written.files.length, 0),
    slowestMs: Math.max(...rounds.flatMap((written) => written.files.map((file) => (arrivals.at.get(file.relativePath) ?? Infinity) - file.appearedAt))),
  };
}

describe(`files written into new folders at once (seed ${SEED})`, () => {
  let folder: string;
  let staging: string;
  let writer: ScanWriter;

  beforeAll(async () => {
    // The staging folder is on the same disk, outside the watched folder: renames stay renames.
    const base = await mkdtemp(path.join(tmpdir(), 'new-folders-'));
    folder = path.join(base, 'watched');
    staging = path.join(base, 'staging');
    fs.mkdirSync(folder);
    fs.mkdirSync(staging);
    writer = ScanWriter.start();
  });
  afterAll(async () => {
    await writer?.close();
    await rm(path.dirname(folder), { recursive: true, force: true });
  });

  it(`the watcher reports every file within the settle time plus ${MARGIN_MS} ms, ${WATCHER_ROUNDS} rounds, a third of them with every core busy`, async () => {
    const arrivals = new Arrivals();
    const errors: unknown[] = [];
    const roundsFolder = path.join(folder, 'watcher');
    fs.mkdirSync(roundsFolder);
    const watcher: FolderWatcher = await watchFolder({
      folder: roundsFolder,
      isIgnored: createIgnoreMatcher([]),
      settleMs: SETTLE_MS,
      rescanMinutes: 0,
      onCandidate: (relativePath) => arrivals.arrived(relativePath),
      onRemoved: () => undefined,
      onError: (error) => errors.push(error),
    });
    let outcome;
    try {
      outcome = await runRounds({ writer, folder: roundsFolder, staging, count: WATCHER_ROUNDS, loaded: LOADED_ROUNDS, arrivals, allowedMs: () => SETTLE_MS + MARGIN_MS });
    } finally {
      await watcher.close();
    }
    const { problems, files, slowestMs } = outcome;
    console.info(`watcher: ${files} files in ${WATCHER_ROUNDS} rounds, the slowest reported after ${slowestMs} ms`);
    expect(problems, `${problems.length} of ${WATCHER_ROUNDS} rounds (${files} files) had files reported late or never`).toEqual([]);
    expect(errors).toEqual([]);
  }, 120_000);

  it('a pair watch journals every file as queued once it has been found and has settled (real journal)', async () => {
    const roundsFolder = path.join(folder, 'pair');
    fs.mkdirSync(roundsFolder);
    const journalHome = await mkdtemp(path.join(tmpdir(), 'new-folders-journal-'));
    const journal: Journal = openJournal(path.join(journalHome, 'journal.db'));
    const arrivals = new Arrivals();
    const errors: unknown[] = [];
    const watch = new PairWatch({
      pair: { id: 'pair-1', folder: roundsFolder, patientId: PATIENT, patientName: 'Jane Roe', remoteBasePath: '/scans', paused: false },
      journal,
      settleMs: SETTLE_MS,
      rescanMinutes: 0,
      ignorePatterns: [],
      onFileChanged: (record) => {
        if (record.state === 'queued') arrivals.arrived(record.relativePath);
      },
      onError: (error) => errors.push(error),
    });
    const rounds = ROUND_KINDS.length * 4;
    let outcome;
    try {
      await watch.start();
      outcome = await runRounds({
        writer,
        folder: roundsFolder,
        staging,
        count: rounds,
        loaded: { from: rounds / 2, to: rounds },
        arrivals,
        // Every file of the round found within the settle time (plus the margin), then the round's
        // folders one settle time without a change, stat'ed, opened and journaled on a busy machine.
        allowedMs: (file, written) => Math.max(...written.files.map((other) => other.appearedAt)) - file.appearedAt + 2 * SETTLE_MS + JOURNAL_MARGIN_MS,
      });
      const notQueued = [...arrivals.at.keys()].filter((relativePath) => journal.find('pair-1', relativePath)?.state !== 'queued');
      expect(notQueued, 'journaled, but not queued').toEqual([]);
    } finally {
      await watch.close();
      journal.close();
      await rm(journalHome, { recursive: true, force: true });
    }
    const { problems, files, slowestMs } = outcome;
    console.info(`pair watch: ${files} files in ${rounds} rounds, the slowest journaled after ${slowestMs} ms`);
    expect(problems, `${problems.length} of ${rounds} rounds had files journaled late or never`).toEqual([]);
    expect(errors).toEqual([]);
  }, 60_000);
});
