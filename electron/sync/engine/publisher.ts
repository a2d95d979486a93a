/**
 * What the engine publishes for the UI and the CLI: each file's new state at once, throttled
 * snapshots (byte progress, pair totals), files settled as synced or failed, and errors that are no
 * file's. Snapshots are built only while someone listens to every event.
 */
import type { FileView, PairView } from '../../../shared/bridge.js';
import type { FileRecord } from '../journal/file-record.js';
import type { FileState } from '../journal/states.js';
import { toFileView } from '../journal/views.js';
import type { ProgressTracker } from '../upload/progress.js';

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

/** What the publisher reads from the engine when a snapshot goes out. */
export interface PublishedSource {
  hasPair(pairId: string): boolean;
  get(fileId: number): FileRecord | undefined;
  pairViews(): PairView[];
  readonly progress: ProgressTracker;
}

export class EnginePublisher {
  private readonly listeners = new Set<(event: EngineEvent) => void>();
  private readonly settledListeners = new Set<(event: SettledFileEvent) => void>();
  private readonly errorListeners = new Set<(message: string) => void>();
  private readonly changedFiles = new Map<string, Set<number>>();
  /** The state each file was last published in, so every transition is published exactly once. */
  private readonly publishedStates = new Map<number, FileState>();
  private pairsDirty = false;
  private publishTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly source: PublishedSource,
    /** How often UI snapshots go out at most. */
    private readonly everyMs: number,
  ) {}

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

  /** True while someone listens to every event (snapshots are built only then). */
  get listening(): boolean {
    return this.listeners.size > 0;
  }

  /**
   * A file entering a new state is published at once, on its own: a small file passes queued →
   * uploading → verifying → synced within one snapshot interval, and the UI must show each step.
   * Byte progress within a state stays in the throttled snapshots.
   */
  publishTransition(record: FileRecord): void {
    if (this.listeners.size === 0 || !this.source.hasPair(record.pairId)) return;
    if (this.publishedStates.get(record.id) === record.state) return;
    this.publishedStates.set(record.id, record.state);
    this.emit({ type: 'files-changed', pairId: record.pairId, files: [toFileView(record, this.source.progress)] });
  }

  markPairs(): void {
    this.pairsDirty = true;
    this.schedulePublish();
  }

  markFiles(pairId: string, fileIds: readonly number[]): void {
    const set = this.changedFiles.get(pairId) ?? new Set<number>();
    for (const id of fileIds) set.add(id);
    this.changedFiles.set(pairId, set);
    this.pairsDirty = true;
    this.schedulePublish();
  }

  announceSettled(event: SettledFileEvent): void {
    this.emit(event);
    for (const listener of this.settledListeners) listener(event);
  }

  emit(event: EngineEvent): void {
    for (const listener of this.listeners) listener(event);
    if (event.type === 'engine-error') for (const listener of this.errorListeners) listener(event.message);
  }

  /** No snapshot goes out after this (until something is marked again). */
  stop(): void {
    clearTimeout(this.publishTimer);
    this.publishTimer = undefined;
  }

  private schedulePublish(): void {
    if (this.publishTimer || this.listeners.size === 0) return;
    this.publishTimer = setTimeout(() => {
      this.publishTimer = undefined;
      this.publish();
    }, this.everyMs);
  }

  private publish(): void {
    for (const [pairId, ids] of this.changedFiles) {
      if (!this.source.hasPair(pairId) || ids.size === 0) continue;
      const files = [...ids].map((id) => this.source.get(id)).filter((record): record is FileRecord => record !== undefined);
      for (const record of files) this.publishedStates.set(record.id, record.state);
      this.emit({ type: 'files-changed', pairId, files: files.map((record) => toFileView(record, this.source.progress)) });
    }
    this.changedFiles.clear();
    if (this.pairsDirty) {
      this.pairsDirty = false;
      this.emit({ type: 'pairs-changed', pairs: this.source.pairViews() });
    }
  }
}
