/**
 * When synced files are checked against the server again (recheck.ts does one pair's check): at
 * start when the last complete pass (kept in the journal) is longer ago than the interval, then
 * every interval; within seconds of a `document.lost` or `document.restored` webhook; after a pass
 * cut short by the server, again later; and not while the server cannot be reached, without a
 * connection or without disk space (the pass waits for them).
 */
import type { DocumentApi } from '../api/document-api.js';
import { isDiskFull } from '../home/disk-full.js';
import type { SyncPair } from '../home/settings.js';
import type { Journal } from '../journal/journal.js';
import { toFileView } from '../journal/views.js';
import { classifyFailure } from '../upload/failure.js';
import type { PipelineJournal } from '../upload/pipeline.js';
import type { ProgressTracker } from '../upload/progress.js';
import type { FileStat } from '../watch/stability.js';
import type { SettledFileEvent } from './publisher.js';
import { RECHECK_MS, recheckPair } from './recheck.js';

/** A re-check cut short by the server (a 5xx, 429) is tried again after this long (or `recheckMs`, if shorter). */
export const RECHECK_RETRY_MS = 5 * 60 * 1000;
/** After a `document.lost` webhook: soon, gathering the burst of events one loss of many files sends. */
export const RECHECK_SOON_MS = 5000;

export interface RecheckHost {
  readonly journal: Journal;
  readonly progress: ProgressTracker;
  started(): boolean;
  api(): DocumentApi | null;
  /** Online, and no proxy said the server behind it does not answer. */
  reachable(): boolean;
  diskFull(): boolean;
  now(): number;
  stat(absolutePath: string): Promise<FileStat | undefined>;
  pairs(): SyncPair[];
  hasPair(pairId: string): boolean;
  /** The pair's folder is not there (an unmounted share). */
  folderMissing(pairId: string): boolean;
  /** The journal as the pipeline sees it, every write published as a change of that file. */
  tracked(): PipelineJournal;
  announceSettled(event: SettledFileEvent): void;
  enterDiskFull(): void;
  /** Nothing answered the pass (`offline`), or a proxy said the server behind it does not (`unavailable`). */
  serverUnreachable(offline: boolean, unavailable: boolean): void;
  /** The pass put files back in the queue. */
  requeued(): void;
  reportError(error: unknown): void;
}

export class RecheckSchedule {
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

  constructor(
    private readonly host: RecheckHost,
    every: number,
  ) {
    this.recheckEvery = every;
  }

  /** The pass under way, if any (settled when it ends, whatever its outcome). */
  get running(): Promise<void> | undefined {
    return this.rechecking;
  }

  /** A pass is due but waits for the server, a connection or disk space. */
  get wanted(): boolean {
    return this.recheckWanted;
  }

  /** Starts the pass that waited, if one did (the server answers again, a connection, space). */
  resumeIfWanted(): void {
    if (this.recheckWanted) this.recheckNow();
  }

  stop(): void {
    clearTimeout(this.recheckTimer);
    this.recheckTimer = undefined;
  }

  /**
   * The server said it lost stored content, or has it back (a `document.lost` or `document.restored`
   * webhook): synced files, and those failed as lost, are checked
   * again within seconds instead of at the next interval. A burst of such events (one per
   * document) makes at most one more pass after the one under way.
   */
  recheckSoon(): void {
    if (!this.host.started()) return;
    if (this.rechecking) {
      this.recheckAfterPass = true;
      return;
    }
    if (this.recheckTimer && this.recheckTimerAt <= this.host.now() + RECHECK_SOON_MS) return;
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
    if (!this.host.started() || this.rechecking) return;
    // A pass asked for by a `document.lost` notice stays where it is.
    if (this.recheckTimer && this.recheckTimerAt <= this.host.now() + RECHECK_SOON_MS) return;
    clearTimeout(this.recheckTimer);
    this.recheckTimer = undefined;
    this.recheckTimerAt = Infinity;
    this.scheduleRecheck();
  }

  /** The next re-check: `recheckMs` after the last complete one (now, if that is longer ago or never). */
  scheduleRecheck(): void {
    const every = this.recheckEvery;
    if (!this.host.started() || every <= 0 || this.rechecking) return;
    clearTimeout(this.recheckTimer);
    this.recheckTimer = undefined;
    let last: number | null = null;
    try {
      last = this.host.journal.lastRecheckAt();
    } catch (error) {
      this.host.reportError(error);
    }
    const delay = last === null ? 0 : Math.min(Math.max(0, last + every - this.host.now()), 0x7fffffff);
    // Started at once when due, so that `run --once` (isSettled) waits for it.
    if (delay === 0) return this.recheckNow();
    this.recheckIn(delay);
  }

  /**
   * One pass over every synced file of the active pairs. Not while the server cannot be reached
   * (the catch-up after it answers again starts the pass), nor without a connection or disk space.
   */
  recheckNow(): void {
    if (!this.host.started() || this.rechecking) return;
    const api = this.host.api();
    if (!api || this.host.diskFull() || !this.host.reachable()) {
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
        this.host.reportError(error);
      },
    );
  }

  /** The re-check timer, set (or moved) to fire in `delay` ms. */
  private recheckIn(delay: number): void {
    clearTimeout(this.recheckTimer);
    this.recheckTimerAt = this.host.now() + delay;
    this.recheckTimer = setTimeout(() => {
      this.recheckTimer = undefined;
      this.recheckNow();
    }, delay);
  }

  /** True when every active pair was checked; false when cut short (it is then tried again). */
  private async recheckPass(api: DocumentApi): Promise<boolean> {
    const host = this.host;
    const journal = host.tracked();
    let changed = 0;
    for (const pair of host.pairs()) {
      // A folder not there (an unmounted share) says nothing about its files: checked next time.
      if (pair.paused || !host.started() || host.folderMissing(pair.id)) continue;
      try {
        const counts = await recheckPair(pair, {
          journal: {
            get: journal.get,
            syncedAfter: (pairId, afterId, limit) => host.journal.syncedAfter(pairId, afterId, limit),
            lostAfter: (pairId, afterId, limit) => host.journal.lostAfter(pairId, afterId, limit),
            markDeletedLocally: (pairId, relativePath) => host.journal.markDeletedLocally(pairId, relativePath),
            transition: (id, state, patch, note) => {
              const record = journal.transition(id, state, patch, note);
              // Said like a failure of the pipeline (the CLI prints it, the app announces it).
              if (record.state === 'failed') host.announceSettled({ type: 'file-failed', file: toFileView(record, host.progress) });
              // A lost scan whose stored file IT restored on the server: synced again, said like an upload's end.
              else if (record.state === 'synced') host.announceSettled({ type: 'file-synced', file: toFileView(record, host.progress) });
              return record;
            },
          },
          api,
          stat: (absolutePath) => host.stat(absolutePath),
          now: () => host.now(),
          stopped: () => !host.started() || !host.hasPair(pair.id),
        });
        changed += counts.requeued + counts.failed + counts.restored;
      } catch (error) {
        if (isDiskFull(error)) {
          // The journal cannot take the finding: all work waits for space, the pass with it.
          this.recheckWanted = true;
          host.enterDiskFull();
          return false;
        }
        const verdict = classifyFailure(error);
        if (verdict.kind === 'stopped') return false;
        if (verdict.kind === 'retry') {
          if (verdict.offline || verdict.unavailable) {
            // Nothing answers: the catch-up, once something does, starts the pass again.
            this.recheckWanted = true;
            host.serverUnreachable(verdict.offline, verdict.unavailable);
          } else {
            this.recheckIn(Math.min(this.recheckEvery || RECHECK_MS, RECHECK_RETRY_MS));
          }
          return false;
        }
        // Refused for this patient (consent, access): its files show their own reasons when they next sync.
      }
    }
    if (changed > 0) host.requeued();
    if (!host.started()) return false;
    host.journal.setLastRecheckAt(host.now());
    return true;
  }
}
