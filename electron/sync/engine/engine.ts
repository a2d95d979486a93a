/**
 * The sync engine (DESIGN §4): pairs of folders, each watched (PairWatch), and one scheduler that
 * runs due journal rows through the pipeline with bounded concurrency. It publishes what happened
 * (files and pairs changed, online or not) for the UI; it owns no HTTP, settings or secrets of its
 * own — those come in through its constructor.
 */
import type { FileView, PairView } from '../../../shared/bridge.js';
import { PLAIN_MESSAGES } from '../../../shared/bridge-errors.js';
import { DEFAULT_BACKOFF, type BackoffPolicy } from '../api/backoff.js';
import { isDiskFull } from '../home/disk-full.js';
import type { DocumentApi } from '../api/document-api.js';
import { classifyFailure, UNREACHABLE_CODES } from '../upload/failure.js';
import { sha256File } from '../upload/hash.js';
import type { FileRecord, Journal, RetryTarget } from '../journal/journal.js';
import { PairWatch } from '../watch/pair-watch.js';
import { syncFile, type PipelineJournal, type PipelineOutcome } from '../upload/pipeline.js';
import { ProgressTracker } from '../upload/progress.js';
import { RECHECK_MS, recheckPair } from './recheck.js';
import type { SyncPair } from '../home/settings.js';
import { statIfPresent, type FileStat } from '../watch/stability.js';
import type { FileState } from '../journal/states.js';
import { buildPairView, isListed, toFileView } from '../journal/views.js';

export interface EngineTuning {
  concurrency: number;
  settleMs: number;
  rescanMinutes: number;
  ignorePatterns: string[];
}

export type EngineEvent =
  | { type: 'pairs-changed'; pairs: PairView[] }
  | { type: 'files-changed'; pairId: string; files: FileView[] }
  | { type: 'file-synced'; file: FileView }
  | { type: 'file-failed'; file: FileView }
  | { type: 'online-changed'; online: boolean }
  /** This computer's disk became too full for the journal (`message` in plain words), or has space again (null). */
  | { type: 'disk-full-changed'; message: string | null }
  | { type: 'engine-error'; message: string };

export type SettledFileEvent = Extract<EngineEvent, { type: 'file-synced' | 'file-failed' }>;

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

/** A re-check cut short by the server (a 5xx, 429) is tried again after this long (or `recheckMs`, if shorter). */
export const RECHECK_RETRY_MS = 5 * 60 * 1000;
/** After a `document.lost` webhook: soon, gathering the burst of events one loss of many files sends. */
export const RECHECK_SOON_MS = 5000;

/** Shorter than the retry delays grow to (minutes), so waiting files go soon after the server is back. */
export const PROBE_MS = 15_000;

export const DISK_CHECK_MS = 2000;

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
  private readonly listeners = new Set<(event: EngineEvent) => void>();
  private readonly settledListeners = new Set<(event: SettledFileEvent) => void>();
  private readonly errorListeners = new Set<(message: string) => void>();
  private readonly changedFiles = new Map<string, Set<number>>();
  /** The state each file was last published in, so every transition is published exactly once. */
  private readonly publishedStates = new Map<number, FileState>();
  private api: DocumentApi | null;
  private tuning: EngineTuning;
  private started = false;
  private online = true;
  private pairsDirty = false;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAt = Infinity;
  private pumpScheduled = false;
  private prefetched: FileRecord[] = [];
  private publishTimer: NodeJS.Timeout | undefined;
  /** Set when a proxy said the server behind it does not answer (502, 504), until the server answers. */
  private serverUnavailable = false;
  /** Files waiting for such an answer from a proxy (in memory: their journal code does not say so). */
  private readonly unavailableFiles = new Set<number>();
  private probeTimer: NodeJS.Timeout | undefined;
  /** Set while the journal cannot be written (a full disk): no file is started until it can. */
  private diskFull = false;
  private diskCheckTimer: NodeJS.Timeout | undefined;
  private recheckTimer: NodeJS.Timeout | undefined;
  /** The re-check pass under way, if any. */
  private rechecking: Promise<void> | undefined;
  /** A re-check is due but waits for the server to be reachable (or a connection, or disk space). */
  private recheckWanted = false;
  /** When the re-check timer fires. */
  private recheckTimerAt = Infinity;
  /** `document.lost` arrived during a pass: one more pass follows it. */
  private recheckAfterPass = false;
  /** How often synced files are checked again (`recheckMs`, changed by setRecheckMs); 0: off. */
  private recheckEvery: number;

  constructor(private readonly options: EngineOptions) {
    this.journal = options.journal;
    this.now = options.now ?? Date.now;
    this.progress = new ProgressTracker(this.now);
    this.api = options.api ?? null;
    this.tuning = { ...options.tuning };
    this.recheckEvery = options.recheckMs ?? RECHECK_MS;
  }

  /** Every event, including the UI snapshots (which are only built while someone listens here). */
  onEvent(listener: (event: EngineEvent) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.publishedStates.clear();
    };
  }

  /** Only files reaching `synced` or `failed`: cheap, no snapshots (what the CLI prints). */
  onDidSettleFile(listener: (event: SettledFileEvent) => void): () => void {
    this.settledListeners.add(listener);
    return () => this.settledListeners.delete(listener);
  }

  /** Errors that are no file's (a folder that cannot be read): cheap, like onDidSettleFile. */
  onEngineError(listener: (message: string) => void): () => void {
    this.errorListeners.add(listener);
    return () => this.errorListeners.delete(listener);
  }

  get isOnline(): boolean {
    return this.online;
  }

  /** Plain words while this computer's disk is too full for the journal, else null. */
  get diskFullMessage(): string | null {
    return this.diskFull ? PLAIN_MESSAGES.DISK_FULL : null;
  }

  /**
   * The server connection; null stops new work (files wait until it is set). A new connection (a
   * CA certificate or client secret saved, another server) may be what files were waiting for:
   * those waiting out a retry delay are tried with it at once.
   */
  setApi(api: DocumentApi | null): void {
    this.api = api;
    if (api) this.retryWaitingNow();
    if (api && this.recheckWanted) this.recheckNow();
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
      this.markPairs();
      for (const pair of this.pairs.values()) this.markFiles(pair.id, []);
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
    this.pairsDirty = true;
    this.schedulePublish();
    this.requestPump();
    this.scheduleRecheck();
  }

  /** Stops watching and lets running uploads stop at a resumable point (their rows wait for the next start). */
  async stop(): Promise<void> {
    this.started = false;
    clearTimeout(this.wakeTimer);
    clearTimeout(this.publishTimer);
    clearTimeout(this.diskCheckTimer);
    clearTimeout(this.probeTimer);
    clearTimeout(this.recheckTimer);
    this.probeTimer = undefined;
    this.recheckTimer = undefined;
    this.wakeTimer = undefined;
    this.publishTimer = undefined;
    this.diskCheckTimer = undefined;
    for (const file of this.running.values()) file.controller.abort();
    await Promise.all([...this.running.values()].map((file) => file.done));
    await this.rechecking;
    await Promise.all([...this.watches.values()].map((watch) => watch.close()));
    this.watches.clear();
  }

  async addPair(pair: SyncPair): Promise<PairView> {
    this.pairs.set(pair.id, { ...pair });
    if (this.started) await this.restartWatch(pair);
    this.markPairs();
    this.requestPump();
    return this.pairView(pair.id)!;
  }

  /** Stops syncing the folder. Its journal rows stay for the record; nothing changes on the server. */
  async removePair(pairId: string): Promise<void> {
    this.pairs.delete(pairId);
    await this.watches.get(pairId)?.close();
    this.watches.delete(pairId);
    this.abortPair(pairId);
    this.markPairs();
  }

  setPaused(pairId: string, paused: boolean): PairView | undefined {
    const pair = this.pairs.get(pairId);
    if (!pair) return undefined;
    pair.paused = paused;
    this.prefetched = [];
    if (paused) this.abortPair(pairId);
    this.markPairs();
    this.requestPump();
    return this.pairView(pairId);
  }

  retryFailed(target?: RetryTarget): number {
    const count = this.journal.retryFailed(target);
    if (count > 0) {
      this.markPairs();
      for (const pair of this.pairs.values()) this.markFiles(pair.id, []);
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
      online: this.online,
      folderError: watch?.folderError ?? null,
      settling: watch?.settling ?? 0,
      unreadable: watch?.unreadable() ?? [],
      diskFull: this.diskFull,
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
    if (this.running.size > 0 || this.diskFull || this.rechecking) return false;
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
    if (api && activePairs.length > 0 && !this.diskFull) {
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
          this.markFiles(pair.id, [fileId]);
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
    this.markFiles(pairId, [fileId]);
    if (outcome.record.errorCode === 'DISK_FULL' && outcome.result === 'waiting') this.enterDiskFull();
    const wasUnreachable = !this.online || this.serverUnavailable;
    // The server itself answered this file (whatever it said), or nothing did.
    let answered = false;
    if (outcome.result === 'waiting') {
      this.setOnline(!outcome.offline);
      if (outcome.unavailable) {
        this.serverUnavailable = true;
        // Its code (SERVER_ERROR) does not tell a proxy's 502 from the server's own 503: remember it.
        if (!outcome.offline) this.unavailableFiles.add(fileId);
      } else {
        this.unavailableFiles.delete(fileId);
        answered = true;
      }
      if (outcome.record.nextAttemptAt !== null) this.scheduleWake(outcome.record.nextAttemptAt);
    } else if (outcome.result !== 'stopped') {
      this.unavailableFiles.delete(fileId);
      answered = true;
      this.setOnline(true);
      // A file that changed under its upload is held until it settles again.
      if (outcome.result === 'queued' && outcome.record.nextAttemptAt !== null) this.scheduleWake(outcome.record.nextAttemptAt);
    }
    if (answered && wasUnreachable) this.catchUp();
    else if (!answered && outcome.result === 'waiting') this.scheduleProbe();
    if (outcome.result !== 'synced' && outcome.result !== 'failed') return;
    this.announceSettled({ type: outcome.result === 'synced' ? 'file-synced' : 'file-failed', file: toFileView(outcome.record, this.progress) });
  }

  private announceSettled(event: SettledFileEvent): void {
    this.emit(event);
    for (const listener of this.settledListeners) listener(event);
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
        this.publishTransition(record);
        this.markFiles(record.pairId, [record.id]);
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
        this.publishTransition(record);
        this.markFiles(record.pairId, [record.id]);
        this.requestPump();
      },
      onError: (error) => this.reportError(error),
      onFolderChanged: () => {
        // A folder that may not be synced any more (re-linked to the sync home): what runs stops now.
        if (this.watches.get(pair.id)?.refused) this.abortPair(pair.id);
        this.markPairs();
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
    if (this.listeners.size === 0) return;
    let signature = '';
    for (const [pairId, watch] of this.watches) signature += `${pairId}:${watch.settling}:${watch.unreadable().join('/')}\n`;
    if (signature === this.settlingSignature) return;
    this.settlingSignature = signature;
    this.markPairs();
  }

  private settlingSignature = '';

  /**
   * While nothing answers, every file waits out its own delay (minutes after a weekend): one small
   * request (the patient list, one entry) asks now and then whether the server is back, so the waiting
   * files need not wait for the first of those delays, nor for a new scan, to find out.
   */
  private scheduleProbe(): void {
    if (this.probeTimer || !this.started) return;
    this.probeTimer = setTimeout(() => void this.probe(), this.options.probeMs ?? PROBE_MS);
  }

  private async probe(): Promise<void> {
    const api = this.api;
    if (!this.started || (this.online && !this.serverUnavailable)) return void (this.probeTimer = undefined);
    let answered = true;
    if (api && !this.diskFull) {
      try {
        await api.listPatients({ limit: 1 });
      } catch (error) {
        // A refusal (no scope for the patient list, a bad secret) is an answer too: the files find their own reasons.
        const verdict = classifyFailure(error);
        answered = !(verdict.kind === 'retry' && verdict.unavailable);
      }
    } else answered = false;
    this.probeTimer = undefined;
    if (!this.started) return;
    if (answered && (!this.online || this.serverUnavailable)) {
      this.setOnline(true);
      this.catchUp();
    } else if (!answered) this.scheduleProbe();
  }

  // --- synced files checked again ---------------------------------------------------------------

  /**
   * The server said it lost stored content, or has it back (a `document.lost` or `document.restored`
   * webhook): synced files, and those failed as lost, are checked
   * again within seconds instead of at the next interval. A burst of such events (one per
   * document) makes at most one more pass after the one under way.
   */
  recheckSoon(): void {
    if (!this.started) return;
    if (this.rechecking) {
      this.recheckAfterPass = true;
      return;
    }
    if (this.recheckTimer && this.recheckTimerAt <= this.now() + RECHECK_SOON_MS) return;
    this.recheckIn(RECHECK_SOON_MS);
  }

  /**
   * A new interval for the re-check (Settings): the next pass is moved to `every` after the last
   * complete one (now, if that is longer ago), with no restart; 0 stops the periodic passes (a
   * `document.lost` notice still starts one). A pass under way finishes and schedules by the new value.
   */
  setRecheckMs(every: number): void {
    if (every === this.recheckEvery) return;
    this.recheckEvery = every;
    if (!this.started || this.rechecking) return;
    // A pass asked for by a `document.lost` notice stays where it is.
    if (this.recheckTimer && this.recheckTimerAt <= this.now() + RECHECK_SOON_MS) return;
    clearTimeout(this.recheckTimer);
    this.recheckTimer = undefined;
    this.recheckTimerAt = Infinity;
    this.scheduleRecheck();
  }

  /** The re-check timer, set (or moved) to fire in `delay` ms. */
  private recheckIn(delay: number): void {
    clearTimeout(this.recheckTimer);
    this.recheckTimerAt = this.now() + delay;
    this.recheckTimer = setTimeout(() => {
      this.recheckTimer = undefined;
      this.recheckNow();
    }, delay);
  }

  /** The next re-check: `recheckMs` after the last complete one (now, if that is longer ago or never). */
  private scheduleRecheck(): void {
    const every = this.recheckEvery;
    if (!this.started || every <= 0 || this.rechecking) return;
    clearTimeout(this.recheckTimer);
    this.recheckTimer = undefined;
    let last: number | null = null;
    try {
      last = this.journal.lastRecheckAt();
    } catch (error) {
      this.reportError(error);
    }
    const delay = last === null ? 0 : Math.min(Math.max(0, last + every - this.now()), 0x7fffffff);
    // Started at once when due, so that `run --once` (isSettled) waits for it.
    if (delay === 0) return this.recheckNow();
    this.recheckIn(delay);
  }

  /**
   * One pass over every synced file of the active pairs. Not while the server cannot be reached
   * (the catch-up after it answers again starts the pass), nor without a connection or disk space.
   */
  private recheckNow(): void {
    if (!this.started || this.rechecking) return;
    const api = this.api;
    if (!api || this.diskFull || !this.online || this.serverUnavailable) {
      this.recheckWanted = true;
      return;
    }
    this.recheckWanted = false;
    this.rechecking = this.recheckPass(api).then(
      (complete) => {
        this.rechecking = undefined;
        if (complete) this.scheduleRecheck();
        if (this.recheckAfterPass) {
          this.recheckAfterPass = false;
          this.recheckSoon();
        }
      },
      (error: unknown) => {
        // The journal refused a write (a full disk): tried again when there is space (or the server answers again).
        this.rechecking = undefined;
        this.recheckWanted = true;
        this.reportError(error);
      },
    );
  }

  /** True when every active pair was checked; false when cut short (it is then tried again). */
  private async recheckPass(api: DocumentApi): Promise<boolean> {
    const journal = this.tracked();
    let changed = 0;
    for (const pair of [...this.pairs.values()]) {
      // A folder not there (an unmounted share) says nothing about its files: checked next time.
      if (pair.paused || !this.started || this.watches.get(pair.id)?.folderError) continue;
      try {
        const counts = await recheckPair(pair, {
          journal: {
            get: journal.get,
            syncedAfter: (pairId, afterId, limit) => this.journal.syncedAfter(pairId, afterId, limit),
            lostAfter: (pairId, afterId, limit) => this.journal.lostAfter(pairId, afterId, limit),
            markDeletedLocally: (pairId, relativePath) => this.journal.markDeletedLocally(pairId, relativePath),
            transition: (id, state, patch, note) => {
              const record = journal.transition(id, state, patch, note);
              // Said like a failure of the pipeline (the CLI prints it, the app announces it).
              if (record.state === 'failed') this.announceSettled({ type: 'file-failed', file: toFileView(record, this.progress) });
              // A lost scan whose stored file IT restored on the server: synced again, said like an upload's end.
              else if (record.state === 'synced') this.announceSettled({ type: 'file-synced', file: toFileView(record, this.progress) });
              return record;
            },
          },
          api,
          stat: this.options.stat ?? statIfPresent,
          now: this.now,
          stopped: () => !this.started || !this.pairs.has(pair.id),
        });
        changed += counts.requeued + counts.failed + counts.restored;
      } catch (error) {
        if (isDiskFull(error)) {
          // The journal cannot take the finding: all work waits for space, the pass with it.
          this.recheckWanted = true;
          this.enterDiskFull();
          return false;
        }
        const verdict = classifyFailure(error);
        if (verdict.kind === 'stopped') return false;
        if (verdict.kind === 'retry') {
          if (verdict.offline || verdict.unavailable) {
            // Nothing answers: the catch-up, once something does, starts the pass again.
            this.setOnline(!verdict.offline);
            if (verdict.unavailable && !verdict.offline) this.serverUnavailable = true;
            this.recheckWanted = true;
            this.scheduleProbe();
          } else {
            this.recheckIn(Math.min(this.recheckEvery || RECHECK_MS, RECHECK_RETRY_MS));
          }
          return false;
        }
        // Refused for this patient (consent, access): its files show their own reasons when they next sync.
      }
    }
    if (changed > 0) {
      this.prefetched = [];
      this.requestPump();
    }
    if (!this.started) return false;
    this.journal.setLastRecheckAt(this.now());
    return true;
  }

  // --- a full disk ------------------------------------------------------------------------------

  /** A journal write refused by a full disk holds all work (no file's failure); anything else is reported as it is. */
  private reportError(error: unknown): void {
    if (isDiskFull(error)) return this.enterDiskFull();
    this.emit({ type: 'engine-error', message: error instanceof Error ? error.message : String(error) });
  }

  /**
   * Every step writes its journal row before it acts, so a refused write leaves each file in the
   * last state that was written (never `synced` unless verified); the crash-resume path takes
   * them on from there once the journal can be written again.
   */
  private enterDiskFull(): void {
    if (!this.diskFull) {
      this.diskFull = true;
      this.emit({ type: 'disk-full-changed', message: PLAIN_MESSAGES.DISK_FULL });
      this.emit({ type: 'engine-error', message: PLAIN_MESSAGES.DISK_FULL });
      this.markPairs();
    }
    this.scheduleDiskCheck();
  }

  private scheduleDiskCheck(): void {
    if (this.diskCheckTimer || !this.started) return;
    this.diskCheckTimer = setTimeout(() => {
      this.diskCheckTimer = undefined;
      if (!this.started) return;
      if (!this.journal.canWrite()) return this.scheduleDiskCheck();
      this.diskFull = false;
      this.prefetched = [];
      this.emit({ type: 'disk-full-changed', message: null });
      this.markPairs();
      for (const watch of this.watches.values()) watch.retryHeld();
      if (this.recheckWanted) this.recheckNow();
      this.requestPump();
    }, this.options.diskCheckMs ?? DISK_CHECK_MS);
  }

  // --- publishing ------------------------------------------------------------------------------

  private setOnline(online: boolean): void {
    if (this.online === online) return;
    this.online = online;
    this.emit({ type: 'online-changed', online });
    this.markPairs();
  }

  /**
   * The server answered after it could not be reached (offline → online, or a proxy's 502/504
   * before): the files that waited only for that are due at once, not when their retry delays
   * (grown to minutes over a weekend) run out. The pump still starts at most `concurrency` at a time.
   */
  private catchUp(): void {
    this.serverUnavailable = false;
    clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
    if (this.recheckWanted) this.recheckNow();
    const behindProxy = [...this.unavailableFiles];
    this.unavailableFiles.clear();
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
    for (const pair of this.pairs.values()) this.markFiles(pair.id, []);
    this.requestPump();
  }

  /**
   * A file entering a new state is published at once, on its own: a small file passes queued →
   * uploading → verifying → synced within one snapshot interval, and the UI must show each step.
   * Byte progress within a state stays in the throttled snapshots.
   */
  private publishTransition(record: FileRecord): void {
    if (this.listeners.size === 0 || !this.pairs.has(record.pairId)) return;
    if (this.publishedStates.get(record.id) === record.state) return;
    this.publishedStates.set(record.id, record.state);
    this.emit({ type: 'files-changed', pairId: record.pairId, files: [toFileView(record, this.progress)] });
  }

  private markPairs(): void {
    this.pairsDirty = true;
    this.schedulePublish();
  }

  private markFiles(pairId: string, fileIds: readonly number[]): void {
    const set = this.changedFiles.get(pairId) ?? new Set<number>();
    for (const id of fileIds) set.add(id);
    this.changedFiles.set(pairId, set);
    this.pairsDirty = true;
    this.schedulePublish();
  }

  private schedulePublish(): void {
    if (this.publishTimer || this.listeners.size === 0) return;
    this.publishTimer = setTimeout(() => {
      this.publishTimer = undefined;
      this.publish();
    }, this.options.publishEveryMs ?? 250);
  }

  private publish(): void {
    for (const [pairId, ids] of this.changedFiles) {
      if (!this.pairs.has(pairId) || ids.size === 0) continue;
      const files = [...ids].map((id) => this.journal.get(id)).filter((record): record is FileRecord => record !== undefined);
      for (const record of files) this.publishedStates.set(record.id, record.state);
      this.emit({ type: 'files-changed', pairId, files: files.map((record) => toFileView(record, this.progress)) });
    }
    this.changedFiles.clear();
    if (this.pairsDirty) {
      this.pairsDirty = false;
      this.emit({ type: 'pairs-changed', pairs: this.pairViews() });
    }
  }

  private emit(event: EngineEvent): void {
    for (const listener of this.listeners) listener(event);
    if (event.type === 'engine-error') for (const listener of this.errorListeners) listener(event.message);
  }
}
