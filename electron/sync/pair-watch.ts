/**
 * Watching one sync pair's folder: watcher (scan + chokidar hints) → stability gate → mapping →
 * journal. A name the server would refuse is recorded as a failed row with the reason, so the user
 * sees it per file instead of the file being silently skipped.
 */
import { access } from 'node:fs/promises';
import { PLAIN_MESSAGES } from '../../shared/bridge-errors.js';
import { createIgnoreMatcher } from './ignore.js';
import type { FileRecord, ObservedFile } from './journal.js';
import { mapToRemote } from './mapping.js';
import type { SyncPair } from './settings.js';
import { StabilityGate, type FileStat } from './stability.js';
import { watchFolder, type FolderWatcher } from './watcher.js';

/** The journal as the folder watch uses it. */
export interface WatchJournal {
  byPair(pairId: string): FileRecord[];
  /** What `byPair` says about files still in the folder, without the full rows (optional). */
  knownFiles?(pairId: string): Array<readonly [string, FileStat]>;
  observe(pairId: string, relativePath: string, observed: ObservedFile): FileRecord;
  /** Many observations in one transaction (optional: `observe` one by one otherwise). */
  observeMany?(pairId: string, files: ReadonlyArray<{ relativePath: string; observed: ObservedFile }>): FileRecord[];
  markDeletedLocally(pairId: string, relativePath: string): FileRecord | undefined;
  transition: (id: number, state: 'failed', patch: { errorCode: string; errorMessage: string; errorDetail: string | null }) => FileRecord;
}

export interface PairWatchOptions {
  pair: SyncPair;
  journal: WatchJournal;
  settleMs: number;
  rescanMinutes: number;
  ignorePatterns: readonly string[];
  /** A row was added or changed. */
  onFileChanged: (record: FileRecord) => void;
  onError: (error: unknown) => void;
  /** The folder went missing or came back (see folderError). */
  onFolderChanged?: () => void;
  /** How often a missing folder is looked for (a share mounted late, a drive plugged back in). */
  folderCheckMs?: number;
}

export const FOLDER_CHECK_MS = 5000;

export class PairWatch {
  private watcher: FolderWatcher | undefined;
  private readonly gate: StabilityGate;
  private closed = false;
  /** Files found stable in this turn, written to the journal together (see onStable). */
  private stable: Array<{ relativePath: string; stat: FileStat }> = [];
  /** Set when the folder itself is missing or unreadable. */
  folderError: string | null = null;

  constructor(private readonly options: PairWatchOptions) {
    this.gate = new StabilityGate({
      root: options.pair.folder,
      settleMs: options.settleMs,
      onReady: (relativePath, stat) => this.onStable(relativePath, stat),
      onError: options.onError,
    });
  }

  /**
   * Resolves once the first full scan has been handed to the stability gate, or once the folder is
   * found missing: then it is looked for every few seconds, and watched as soon as it is back.
   */
  async start(): Promise<void> {
    const { pair, journal } = this.options;
    try {
      await access(pair.folder);
    } catch {
      this.folderMissing();
      return;
    }
    const known = journal.knownFiles
      ? journal.knownFiles(pair.id)
      : journal
          .byPair(pair.id)
          .filter((record) => !record.deletedLocally)
          .map((record) => [record.relativePath, { size: record.size, mtimeMs: record.mtimeMs }] as const);
    const isIgnored = createIgnoreMatcher(this.options.ignorePatterns);
    let gone = false;
    let watcher: FolderWatcher | undefined;
    try {
      watcher = await watchFolder({
        folder: pair.folder,
        isIgnored,
        known,
        rescanMinutes: this.options.rescanMinutes,
        ...(this.options.folderCheckMs === undefined ? {} : { folderCheckMs: this.options.folderCheckMs }),
        onCandidate: (relativePath, stat) => this.gate.observe(relativePath, stat),
        onRemoved: (relativePath) => this.onRemoved(relativePath),
        onError: this.options.onError,
        onFolderGone: () => {
          gone = true;
          // During the first scan the watch is not ours yet: handled once watchFolder returns.
          if (watcher !== undefined && this.watcher === watcher) this.onFolderGone(watcher).catch(this.options.onError);
        },
      });
    } catch (error) {
      // Gone between the look and the watch, or not a folder one can watch.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.options.onError(error);
      this.folderMissing();
      return;
    }
    this.watcher = watcher;
    if (this.closed) await watcher.close();
    else if (gone) await this.onFolderGone(watcher);
    else if (this.folderError !== null) {
      this.folderError = null;
      this.options.onFolderChanged?.();
    }
  }

  /**
   * The folder vanished under the watch. Nothing is marked deleted: a share that comes back brings
   * its files back, and a scan then tells what really changed while it was away.
   */
  private async onFolderGone(watcher: FolderWatcher): Promise<void> {
    if (this.watcher === watcher) this.watcher = undefined;
    await watcher.close();
    this.folderMissing();
  }

  private folderMissing(): void {
    if (this.closed) return;
    if (this.folderError === null) {
      this.folderError = PLAIN_MESSAGES.FOLDER_MISSING;
      this.options.onFolderChanged?.();
    }
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.lookForFolder(), this.options.folderCheckMs ?? FOLDER_CHECK_MS);
  }

  private lookForFolder(): Promise<void> {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (this.closed || this.watcher) return Promise.resolve();
    this.restarting ??= this.start().finally(() => {
      this.restarting = undefined;
    });
    return this.restarting;
  }

  private retryTimer: NodeJS.Timeout | undefined;
  private restarting: Promise<void> | undefined;

  /** Files seen but not yet stable. */
  get settling(): number {
    return this.gate.pendingCount;
  }

  /** Walks the folder now; a missing folder is looked for now instead of at the next retry. */
  rescan(): Promise<void> {
    return this.watcher?.rescan() ?? this.lookForFolder();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.gate.close();
    await this.restarting;
    await this.watcher?.close();
  }

  /**
   * The gate releases a whole folder of files at once (a scan: thousands). They are journaled in one
   * transaction at the end of the current microtask run instead of one transaction each; each row
   * is still written before anything acts on it (the engine hears of a file only afterwards).
   */
  private onStable(relativePath: string, stat: FileStat): void {
    if (this.closed) return;
    if (this.stable.length === 0) queueMicrotask(() => this.flushStable());
    this.stable.push({ relativePath, stat });
  }

  private flushStable(): void {
    const batch = this.stable;
    this.stable = [];
    if (this.closed || batch.length === 0) return;
    const { pair, journal } = this.options;
    const mappings = batch.map(({ relativePath }) => mapToRemote(pair, relativePath));
    const observed = batch.map(({ relativePath, stat }, index) => {
      const mapping = mappings[index]!;
      const fileName = mapping.ok ? mapping.fileName : relativePath.slice(relativePath.lastIndexOf('/') + 1);
      return { relativePath, observed: { ...stat, remotePath: mapping.ok ? mapping.remotePath : pair.remoteBasePath, fileName } };
    });
    const records = journal.observeMany
      ? journal.observeMany(pair.id, observed)
      : observed.map((file) => journal.observe(pair.id, file.relativePath, file.observed));
    records.forEach((record, index) => {
      const mapping = mappings[index]!;
      if (mapping.ok || record.state === 'failed') return this.options.onFileChanged(record);
      this.options.onFileChanged(journal.transition(record.id, 'failed', { errorCode: 'INVALID_NAME', errorMessage: mapping.reason, errorDetail: null }));
    });
  }

  private onRemoved(relativePath: string): void {
    this.gate.forget(relativePath);
    const record = this.options.journal.markDeletedLocally(this.options.pair.id, relativePath);
    if (record) this.options.onFileChanged(record);
  }
}
