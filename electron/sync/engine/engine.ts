/**
 * The sync engine (DESIGN §4): pairs of folders, each watched (PairWatch), and one scheduler that
 * runs due journal rows through the pipeline with bounded concurrency. It publishes what happened
 * (files and pairs changed, online or not) for the UI; it owns no HTTP, settings or secrets of its
 * own — those come in through its constructor. Its parts: publisher.ts (events and snapshots),
 * connectivity.ts (online, the probe while the server cannot be reached), disk-space.ts (a full
 * disk holds all work), recheck-schedule.ts (when synced files are checked again).
 */
import type { FileView, PairView } from '../../../shared/bridge.js';
import { DEFAULT_BACKOFF, type BackoffPolicy } from '../api/backoff.js';
import { isDiskFull } from '../home/disk-full.js';
import type { DocumentApi } from '../api/document-api.js';
import { UNREACHABLE_CODES } from '../upload/failure.js';
import { sha256File } from '../upload/hash.js';
import type { FileRecord, RetryTarget } from '../journal/file-record.js';
import type { Journal } from '../journal/journal.js';
import { PairWatch } from '../watch/pair-watch.js';
import { syncFile, type PipelineJournal, type PipelineOutcome } from '../upload/pipeline.js';
import { ProgressTracker } from '../upload/progress.js';
import { RECHECK_MS } from './recheck.js';
import type { SyncPair } from '../home/settings.js';
import { statIfPresent, type FileStat } from '../watch/stability.js';
import type { FileState } from '../journal/states.js';
import { buildPairView, isListed, toFileView } from '../journal/views.js';
import { Connectivity, PROBE_MS } from './connectivity.js';
import { DISK_CHECK_MS, DiskSpace } from './disk-space.js';
import { EnginePublisher, type EngineEvent, type SettledFileEvent } from './publisher.js';
import { RecheckSchedule } from './recheck-schedule.js';

export interface EngineTuning {
  concurrency: number;
  settleMs: number;
  rescanMinutes: number;
  ignorePatterns: string[];
}

export interface EngineOptions {
  journal: Journal;
  tuning: EngineTuning;
  api?: DocumentApi | null;
  backoff?: BackoffPolicy;
  now?: () => number;
  random?: () => number;
  stat?: (absolutePath: string) => Promise<FileStat | undefined>;
  hash?: (absolutePath: string, signal?: AbortSignal) => Promise<string>;
  /** How often UI snapshots (byte progress, pair totals) go out at most; state changes go out at once. */
  publishEveryMs?: number;
  /** How often the journal is looked at for retries whose time has come when nothing else happens. */
  idlePollMs?: number;
  /** How often the journal is tried again while the disk is full. */
  diskCheckMs?: number;
  /** How often a pair's missing folder is looked for (pair-watch.ts FOLDER_CHECK_MS by default). */
  folderCheckMs?: number;
  /** Why a pair's folder may not be synced at all (pair-folders.ts forbiddenFolder), checked before every scan. */
  folderRefusal?: (folder: string) => string | undefined;
  /** While the server cannot be reached, how often one small request asks whether it is back. */
  probeMs?: number;
  /**
   * How often synced files are checked against the server again (recheck.ts), counted from the
   * last complete check (kept in the journal): at start when that is longer ago. 0 turns it off.
   */
  recheckMs?: number;
}

interface RunningFile {
  pairId: string;
  controller: AbortController;
  done: Promise<void>;
}

export class SyncEngine {
  private readonly journal: Journal;
  private readonly now: () => number;
  private readonly progress: ProgressTracker;
  private readonly pairs = new Map<string, SyncPair>();
  private readonly watches = new Map<string, PairWatch>();
  private readonly running = new Map<number, RunningFile>();
  private readonly publisher: EnginePublisher;
  private readonly connectivity: Connectivity;
  private readonly diskSpace: DiskSpace;
  private readonly rechecks: RecheckSchedule;
  private api: DocumentApi | null;
  private tuning: EngineTuning;
  private started = false;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAt = Infinity;
  private pumpScheduled = false;
  private prefetched: FileRecord[] = [];

  constructor(private readonly options: EngineOptions) {
    this.journal = options.journal;
    this.now = options.now ?? Date.now;
    this.progress = new ProgressTracker(this.now);
    this.api = options.api ?? null;
    this.tuning = { ...options.tuning };
    this.publisher = new EnginePublisher(
      {
        hasPair: (pairId) => this.pairs.has(pairId),
        get: (fileId) => this.journal.get(fileId),
        pairViews: () => this.pairViews(),
        progress: this.progress,
      },
      options.publishEveryMs ?? 250,
    );
    const started = () => this.started;
    const emit = (event: EngineEvent) => this.publisher.emit(event);
    const markPairs = () => this.publisher.markPairs();
    this.connectivity = new Connectivity(
      { started, api: () => this.api, diskFull: () => this.diskSpace.full, emit, markPairs, catchUp: () => this.catchUp() },
      options.probeMs ?? PROBE_MS,
    );
    this.diskSpace = new DiskSpace(
      { started, canWrite: () => this.journal.canWrite(), emit, markPairs, spaceAgain: () => this.spaceAgain() },
      options.diskCheckMs ?? DISK_CHECK_MS,
    );
    const stat = options.stat ?? statIfPresent;
    this.rechecks = new RecheckSchedule(
      {
        journal: this.journal,
        progress: this.progress,
        started,
        api: () => this.api,
        reachable: () => this.connectivity.reachable,
        diskFull: () => this.diskSpace.full,
        now: () => this.now(),
        stat,
        pairs: () => [...this.pairs.values()],
        hasPair: (pairId) => this.pairs.has(pairId),
        folderMissing: (pairId) => Boolean(this.watches.get(pairId)?.folderError),
        tracked: () => this.tracked(),
        announceSettled: (event) => this.publisher.announceSettled(event),
        enterDiskFull: () => this.diskSpace.enterDiskFull(),
        serverUnreachable: (offline, unavailable) => {
          this.connectivity.setOnline(!offline);
          if (unavailable && !offline) this.connectivity.serverUnavailable = true;
          this.connectivity.scheduleProbe();
        },
        requeued: () => {
          this.prefetched = [];
          this.requestPump();
        },
        reportError: (error) => this.reportError(error),
      },
      options.recheckMs ?? RECHECK_MS,
    );
  }

  /** Every event, including the UI snapshots (which are only built while someone listens here). */
  onEvent(listener: (event: EngineEvent) => void): () => void {
    return this.publisher.onEvent(listener);
  }

  /** Only files reaching `synced` or `failed`: cheap, no snapshots (what the CLI prints). */
  onDidSettleFile(listener: (event: SettledFileEvent) => void): () => void {
    return this.publisher.onDidSettleFile(listener);
  }

  /** Errors that are no file's (a folder that cannot be read): cheap, like onDidSettleFile. */
  onEngineError(listener: (message: string) => void): () => void {
    return this.publisher.onEngineError(listener);
  }

  get isOnline(): boolean {
    return this.connectivity.isOnline;
  }

  /** Plain words while this computer's disk is too full for the journal, else null. */
  get diskFullMessage(): string | null {
    return this.diskSpace.message;
  }

  /**
   * The server connection; null stops new work (files wait until it is set). A new connection (a
   * CA certificate or client secret saved, another server) may be what files were waiting for:
   * those waiting out a retry delay are tried with it at once.
   */
  setApi(api: DocumentApi | null): void {
    this.api = api;
    if (api) this.retryWaitingNow();
    if (api) this.rechecks.resumeIfWanted();
    this.requestPump();
  }

  /**
   * Retry as the user means it, after fixing the cause (consent given, the limit raised, the server
   * back): failed files are queued again, and files waiting out a retry delay are tried now.
   */
  retryNow(target?: RetryTarget): { failed: number; waiting: number } {
    return { failed: this.retryFailed(target), waiting: this.retryWaitingNow(target) };
  }

  /** Files waiting out a retry delay (all, one pair's, one file) are tried now; returns how many. */
  retryWaitingNow(target?: RetryTarget): number {
    let count = 0;
    try {
      count = this.journal.retryWaitingNow(this.now(), target);
    } catch (error) {
      this.reportError(error);
    }
    if (count > 0) {
      this.prefetched = [];
      this.publisher.markPairs();
      for (const pair of this.pairs.values()) this.publisher.markFiles(pair.id, []);
    }
    this.requestPump();
    return count;
  }

  async setTuning(tuning: Partial<EngineTuning>): Promise<void> {
    const before = this.tuning;
    this.tuning = { ...before, ...tuning };
    const watchChanged =
      before.settleMs !== this.tuning.settleMs ||
      before.rescanMinutes !== this.tuning.rescanMinutes ||
      before.ignorePatterns.join('\n') !== this.tuning.ignorePatterns.join('\n');
    if (watchChanged && this.started) for (const pair of this.pairs.values()) await this.restartWatch(pair);
    this.requestPump();
  }

  async start(pairs: readonly SyncPair[]): Promise<void> {
    this.started = true;
    for (const pair of pairs) this.pairs.set(pair.id, { ...pair });
    await Promise.all([...this.pairs.values()].map((pair) => this.restartWatch(pair)));
    this.publisher.markPairs();
    this.requestPump();
    this.rechecks.scheduleRecheck();
  }

  /** Stops watching and lets running uploads stop at a resumable point (their rows wait for the next start). */
  async stop(): Promise<void> {
    this.started = false;
    clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    this.publisher.stop();
    this.diskSpace.stop();
    this.connectivity.stop();
    this.rechecks.stop();
    for (const file of this.running.values()) file.controller.abort();
    await Promise.all([...this.running.values()].map((file) => file.done));
    await this.rechecks.running;
    await Promise.all([...this.watches.values()].map((watch) => watch.close()));
    this.watches.clear();
  }

  async addPair(pair: SyncPair): Promise<PairView> {
    this.pairs.set(pair.id, { ...pair });
    if (this.started) await this.restartWatch(pair);
    this.publisher.markPairs();
    this.requestPump();
    return this.pairView(pair.id)!;
  }

  /** Stops syncing the folder. Its journal rows stay for the record; nothing changes on the server. */
  async removePair(pairId: string): Promise<void> {
    this.pairs.delete(pairId);
    await this.watches.get(pairId)?.close();
    this.watches.delete(pairId);
    this.abortPair(pairId);
    this.publisher.markPairs();
  }

  setPaused(pairId: string, paused: boolean): PairView | undefined {
    const pair = this.pairs.get(pairId);
    if (!pair) return undefined;
    pair.paused = paused;
    this.prefetched = [];
    if (paused) this.abortPair(pairId);
    this.publisher.markPairs();
    this.requestPump();
    return this.pairView(pairId);
  }

  retryFailed(target?: RetryTarget): number {
    const count = this.journal.retryFailed(target);
    if (count > 0) {
      this.publisher.markPairs();
      for (const pair of this.pairs.values()) this.publisher.markFiles(pair.id, []);
    }
    this.requestPump();
    return count;
  }

  /** Walks every folder now (the scan is the truth; watch events are hints). */
  async rescan(): Promise<void> {
    await Promise.all([...this.watches.values()].map((watch) => watch.rescan()));
  }

  pairList(): SyncPair[] {
    return [...this.pairs.values()].map((pair) => ({ ...pair }));
  }

  pairViews(): PairView[] {
    return [...this.pairs.keys()].map((id) => this.pairView(id)!);
  }

  pairView(pairId: string): PairView | undefined {
    const pair = this.pairs.get(pairId);
    if (!pair) return undefined;
    const watch = this.watches.get(pairId);
    return buildPairView({
      pair,
      records: this.journal.byPair(pairId),
      progress: this.progress,
      online: this.connectivity.isOnline,
      folderError: watch?.folderError ?? null,
      settling: watch?.settling ?? 0,
      unreadable: watch?.unreadable() ?? [],
      diskFull: this.diskSpace.full,
    });
  }

  fileViews(pairId: string, states?: readonly FileState[]): FileView[] {
    return this.journal
      .byPair(pairId)
      .filter((record) => !states || states.includes(record.state))
      .filter(isListed)
      .map((record) => toFileView(record, this.progress));
  }

  /** Files of a pair seen but not yet stable (still being written, or not readable yet). */
  settlingCount(pairId: string): number {
    return this.watches.get(pairId)?.settling ?? 0;
  }

  /** Of `settlingCount`, the files that stopped changing but wait for disk space to be journaled. */
  heldForSpaceCount(pairId: string): number {
    return this.watches.get(pairId)?.heldForSpace ?? 0;
  }

  /** True when nothing is settling, due, running or waiting for a retry (or for disk space). */
  isSettled(): boolean {
    if (this.running.size > 0 || this.diskSpace.full || this.rechecks.running) return false;
    for (const watch of this.watches.values()) if (watch.settling > 0) return false;
    for (const pair of this.pairs.values()) {
      if (pair.paused || this.watches.get(pair.id)?.refused) continue;
      const counts = this.journal.counts(pair.id);
      if (counts.queued + counts.creating + counts.uploading + counts.verifying + counts.waiting > 0) return false;
    }
    return true;
  }

  // --- scheduling ------------------------------------------------------------------------------

  /** Many things ask for work at once (a scan releases thousands of files): look once per turn. */
  private requestPump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    if (!this.started) return;
    this.noticeSettling();
    const api = this.api;
    const activePairs = [...this.pairs.values()].filter((pair) => !pair.paused && !this.watches.get(pair.id)?.refused).map((pair) => pair.id);
    if (api && activePairs.length > 0 && !this.diskSpace.full) {
      while (this.running.size < this.tuning.concurrency) {
        const record = this.nextDue(activePairs);
        if (!record) break;
        this.launch(record, api);
      }
    }
    this.scheduleWake(this.now() + (this.options.idlePollMs ?? 5000));
  }

  /**
   * The next row to work on. Rows are read from the journal a batch at a time (the query sorts
   * every candidate, so asking for one row per finished file would cost O(n²) over a large sync);
   * each is re-read before it starts, so a row that changed meanwhile is skipped.
   */
  private nextDue(activePairs: readonly string[]): FileRecord | undefined {
    for (;;) {
      if (this.prefetched.length === 0) {
        const batch = Math.max(32, this.tuning.concurrency * 4);
        this.prefetched = this.journal.due(this.now(), batch, { busy: this.running.keys(), pairIds: activePairs });
        if (this.prefetched.length === 0) return undefined;
      }
      const candidate = this.prefetched.shift()!;
      if (this.running.has(candidate.id) || !activePairs.includes(candidate.pairId)) continue;
      const current = this.journal.get(candidate.id);
      if (current && current.state === candidate.state && current.updatedAt === candidate.updatedAt) return current;
    }
  }

  private launch(record: FileRecord, api: DocumentApi): void {
    const pair = this.pairs.get(record.pairId)!;
    const controller = new AbortController();
    this.progress.start(record.id, pair.id);
    const done = syncFile(
      record.id,
      pair,
      {
        journal: this.tracked(),
        api,
        backoff: this.options.backoff ?? DEFAULT_BACKOFF,
        now: this.now,
        stat: this.options.stat ?? statIfPresent,
        hash: this.options.hash ?? sha256File,
        ...(this.options.random ? { random: this.options.random } : {}),
        settleMs: this.tuning.settleMs,
        onProgress: (fileId, bytes) => {
          this.progress.update(fileId, bytes);
          this.publisher.markFiles(pair.id, [fileId]);
        },
      },
      controller.signal,
    ).then(
      (outcome) => this.settled(record.id, pair.id, outcome),
      (error: unknown) => this.reportError(error),
    );
    this.running.set(record.id, {
      pairId: pair.id,
      controller,
      done: done.finally(() => {
        this.running.delete(record.id);
        this.progress.finish(record.id);
        this.requestPump();
      }),
    });
  }

  private settled(fileId: number, pairId: string, outcome: PipelineOutcome): void {
    this.publisher.markFiles(pairId, [fileId]);
    if (outcome.record.errorCode === 'DISK_FULL' && outcome.result === 'waiting') this.diskSpace.enterDiskFull();
    const wasUnreachable = !this.connectivity.reachable;
    // The server itself answered this file (whatever it said), or nothing did.
    let answered = false;
    if (outcome.result === 'waiting') {
      this.connectivity.setOnline(!outcome.offline);
      if (outcome.unavailable) {
        this.connectivity.serverUnavailable = true;
        // Its code (SERVER_ERROR) does not tell a proxy's 502 from the server's own 503: remember it.
        if (!outcome.offline) this.connectivity.unavailableFiles.add(fileId);
      } else {
        this.connectivity.unavailableFiles.delete(fileId);
        answered = true;
      }
      if (outcome.record.nextAttemptAt !== null) this.scheduleWake(outcome.record.nextAttemptAt);
    } else if (outcome.result !== 'stopped') {
      this.connectivity.unavailableFiles.delete(fileId);
      answered = true;
      this.connectivity.setOnline(true);
      // A file that changed under its upload is held until it settles again.
      if (outcome.result === 'queued' && outcome.record.nextAttemptAt !== null) this.scheduleWake(outcome.record.nextAttemptAt);
    }
    if (answered && wasUnreachable) this.catchUp();
    else if (!answered && outcome.result === 'waiting') this.connectivity.scheduleProbe();
    if (outcome.result !== 'synced' && outcome.result !== 'failed') return;
    this.publisher.announceSettled({ type: outcome.result === 'synced' ? 'file-synced' : 'file-failed', file: toFileView(outcome.record, this.progress) });
  }

  private scheduleWake(at: number): void {
    if (!this.started || at >= this.wakeAt) return;
    clearTimeout(this.wakeTimer);
    this.wakeAt = at;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      this.wakeAt = Infinity;
      this.requestPump();
    }, Math.max(0, at - this.now()));
  }

  private abortPair(pairId: string): void {
    for (const file of this.running.values()) if (file.pairId === pairId) file.controller.abort();
  }

  /** The journal as the pipeline sees it, with every write reported as a change of that file. */
  private tracked(): PipelineJournal {
    return {
      get: (id) => this.journal.get(id),
      transition: (id, state, patch, note) => {
        const record = this.journal.transition(id, state, patch, note);
        this.publisher.publishTransition(record);
        this.publisher.markFiles(record.pairId, [record.id]);
        return record;
      },
    };
  }

  private async restartWatch(pair: SyncPair): Promise<void> {
    await this.watches.get(pair.id)?.close();
    const watch = new PairWatch({
      pair,
      journal: this.journal,
      settleMs: this.tuning.settleMs,
      rescanMinutes: this.tuning.rescanMinutes,
      ignorePatterns: this.tuning.ignorePatterns,
      onFileChanged: (record) => {
        this.publisher.publishTransition(record);
        this.publisher.markFiles(record.pairId, [record.id]);
        this.requestPump();
      },
      onError: (error) => this.reportError(error),
      onFolderChanged: () => {
        // A folder that may not be synced any more (re-linked to the sync home): what runs stops now.
        if (this.watches.get(pair.id)?.refused) this.abortPair(pair.id);
        this.publisher.markPairs();
      },
      ...(this.options.folderCheckMs === undefined ? {} : { folderCheckMs: this.options.folderCheckMs }),
      ...(this.options.folderRefusal ? { folderRefusal: this.options.folderRefusal } : {}),
    });
    this.watches.set(pair.id, watch);
    await watch.start();
  }

  /**
   * Files the watches hold (being written, or not readable) are no journal rows, so no transition
   * publishes them: the pump, which runs at least every idle poll, tells the UI when they change.
   */
  private noticeSettling(): void {
    if (!this.publisher.listening) return;
    let signature = '';
    for (const [pairId, watch] of this.watches) signature += `${pairId}:${watch.settling}:${watch.unreadable().join('/')}\n`;
    if (signature === this.settlingSignature) return;
    this.settlingSignature = signature;
    this.publisher.markPairs();
  }

  private settlingSignature = '';

  // --- synced files checked again (recheck-schedule.ts) ----------------------------------------

  /**
   * The server said it lost stored content, or has it back (a `document.lost` or `document.restored`
   * webhook): synced files, and those failed as lost, are checked again within seconds.
   */
  recheckSoon(): void {
    this.rechecks.recheckSoon();
  }

  /** A new interval for the re-check (Settings), with no restart; 0 stops the periodic passes. */
  setRecheckMs(every: number): void {
    this.rechecks.setRecheckMs(every);
  }

  // --- errors, a full disk, the server back ------------------------------------------------------

  /** A journal write refused by a full disk holds all work (no file's failure); anything else is reported as it is. */
  private reportError(error: unknown): void {
    if (isDiskFull(error)) return this.diskSpace.enterDiskFull();
    this.publisher.emit({ type: 'engine-error', message: error instanceof Error ? error.message : String(error) });
  }

  /** The journal takes writes again: what waited for space goes on. */
  private spaceAgain(): void {
    this.prefetched = [];
    this.publisher.emit({ type: 'disk-full-changed', message: null });
    this.publisher.markPairs();
    for (const watch of this.watches.values()) watch.retryHeld();
    this.rechecks.resumeIfWanted();
    this.requestPump();
  }

  /**
   * The server answered after it could not be reached (offline → online, or a proxy's 502/504
   * before): the files that waited only for that are due at once, not when their retry delays
   * (grown to minutes over a weekend) run out. The pump still starts at most `concurrency` at a time.
   */
  private catchUp(): void {
    const behindProxy = this.connectivity.answered();
    this.rechecks.resumeIfWanted();
    let count = 0;
    try {
      const now = this.now();
      count = this.journal.retryUnreachableNow(now, UNREACHABLE_CODES);
      for (const fileId of behindProxy) count += this.journal.retryWaitingNow(now, { fileId });
    } catch (error) {
      this.reportError(error);
    }
    if (count === 0) return;
    this.prefetched = [];
    for (const pair of this.pairs.values()) this.publisher.markFiles(pair.id, []);
    this.requestPump();
  }
}
