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
  observe(pairId: string, relativePath: string, observed: ObservedFile): FileRecord;
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
}

export class PairWatch {
  private watcher: FolderWatcher | undefined;
  private readonly gate: StabilityGate;
  private closed = false;
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

  /** Resolves once the first full scan has been handed to the stability gate. */
  async start(): Promise<void> {
    const { pair, journal } = this.options;
    try {
      await access(pair.folder);
    } catch {
      this.folderError = PLAIN_MESSAGES.FOLDER_MISSING;
      return;
    }
    const known = journal
      .byPair(pair.id)
      .filter((record) => !record.deletedLocally)
      .map((record) => [record.relativePath, { size: record.size, mtimeMs: record.mtimeMs }] as const);
    const isIgnored = createIgnoreMatcher(this.options.ignorePatterns);
    this.watcher = await watchFolder({
      folder: pair.folder,
      isIgnored,
      known,
      rescanMinutes: this.options.rescanMinutes,
      onCandidate: (relativePath, stat) => this.gate.observe(relativePath, stat),
      onRemoved: (relativePath) => this.onRemoved(relativePath),
      onError: this.options.onError,
    });
    if (this.closed) await this.watcher.close();
  }

  /** Files seen but not yet stable. */
  get settling(): number {
    return this.gate.pendingCount;
  }

  rescan(): Promise<void> {
    return this.watcher?.rescan() ?? Promise.resolve();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.gate.close();
    await this.watcher?.close();
  }

  private onStable(relativePath: string, stat: FileStat): void {
    if (this.closed) return;
    const { pair, journal } = this.options;
    const mapping = mapToRemote(pair, relativePath);
    if (mapping.ok) {
      this.options.onFileChanged(journal.observe(pair.id, relativePath, { ...stat, remotePath: mapping.remotePath, fileName: mapping.fileName }));
      return;
    }
    const fileName = relativePath.slice(relativePath.lastIndexOf('/') + 1);
    const record = journal.observe(pair.id, relativePath, { ...stat, remotePath: pair.remoteBasePath, fileName });
    if (record.state === 'failed') return this.options.onFileChanged(record);
    this.options.onFileChanged(journal.transition(record.id, 'failed', { errorCode: 'INVALID_NAME', errorMessage: mapping.reason, errorDetail: null }));
  }

  private onRemoved(relativePath: string): void {
    this.gate.forget(relativePath);
    const record = this.options.journal.markDeletedLocally(this.options.pair.id, relativePath);
    if (record) this.options.onFileChanged(record);
  }
}
