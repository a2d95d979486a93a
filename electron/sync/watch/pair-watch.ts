/**
 * Watching one sync pair's folder: watcher (scan + chokidar hints) → stability gate → mapping →
 * journal. A name the server would refuse is recorded as a failed row with the reason, so the user
 * sees it per file instead of the file being silently skipped.
 */
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { PLAIN_MESSAGES } from '../../../shared/bridge-errors.js';
import { visibleName } from '../../../shared/names.js';
import { LINK_REASON } from '../upload/failure.js';
import { isDiskFull } from '../home/disk-full.js';
import { createIgnoreMatcher } from './ignore.js';
import type { FileRecord, HistoryNote, ObservedFile } from '../journal/file-record.js';
import { mapToRemote, serverNameKey } from '../upload/mapping.js';
import type { SyncPair } from '../home/settings.js';
import { fileIdentity, StabilityGate, type FileStat } from './stability.js';
import { watchFolder, type FolderWatcher } from './watcher.js';

/** The journal as the folder watch uses it. */
export interface WatchJournal {
  byPair(pairId: string): FileRecord[];
  find(pairId: string, relativePath: string): FileRecord | undefined;
  /** What `byPair` says about files still in the folder, without the full rows (optional). */
  knownFiles?(pairId: string): Array<readonly [string, FileStat]>;
  observe(pairId: string, relativePath: string, observed: ObservedFile): FileRecord;
  /** Many observations in one transaction (optional: `observe` one by one otherwise). */
  observeMany?(pairId: string, files: ReadonlyArray<{ relativePath: string; observed: ObservedFile }>): FileRecord[];
  markDeletedLocally(pairId: string, relativePath: string, note?: HistoryNote): FileRecord | undefined;
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
  /** Why the folder may not be synced at all (pair-folders.ts forbiddenFolder), else undefined. */
  folderRefusal?: (folder: string) => string | undefined;
}

export const FOLDER_CHECK_MS = 5000;

export class PairWatch {
  private watcher: FolderWatcher | undefined;
  private readonly gate: StabilityGate;
  private closed = false;
  /** Files found stable in this turn, written to the journal together (see onStable). */
  private stable: Array<{ relativePath: string; stat: FileStat }> = [];
  /** One batch is journaled at a time: a batch's name check reads the rows the one before wrote. */
  private flushing: Promise<void> = Promise.resolve();
  /** The files in the folder by the name the server would give them (serverNameKey): see nameClashes. */
  private names = new Map<string, Set<string>>();
  /** Stable files the journal refused (a full disk): written again by retryHeld, never dropped. */
  private held: Array<{ relativePath: string; stat: FileStat }> = [];
  /** Set when the folder itself is missing, unreadable or may not be synced. */
  folderError: string | null = null;
  /** The folder may not be synced (folderRefusal): nothing of it is uploaded until that changes. */
  refused = false;

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
    if (this.refusal() !== undefined) return this.folderMissing();
    try {
      // Readable and listable: a folder that exists but cannot be read is as good as missing.
      await access(pair.folder, constants.R_OK | constants.X_OK);
    } catch {
      this.folderMissing();
      return;
    }
    const isIgnored = onlyEntry(pair.only, createIgnoreMatcher(this.options.ignorePatterns));
    const known = this.dropIgnored(
      journal.knownFiles
        ? journal.knownFiles(pair.id)
        : journal
            .byPair(pair.id)
            .filter((record) => !record.deletedLocally)
            .map((record) => [record.relativePath, { size: record.size, mtimeMs: record.mtimeMs }] as const),
      isIgnored,
    );
    this.names.clear();
    for (const [relativePath] of known) this.addName(relativePath);
    let gone = false;
    let watcher: FolderWatcher | undefined;
    try {
      watcher = await watchFolder({
        folder: pair.folder,
        isIgnored,
        known,
        settleMs: this.options.settleMs,
        rescanMinutes: this.options.rescanMinutes,
        refusal: () => this.refusal(),
        ...(this.options.folderCheckMs === undefined ? {} : { folderCheckMs: this.options.folderCheckMs }),
        onCandidate: (relativePath, stat) => this.gate.observe(relativePath, stat),
        onLink: (relativePath, stat) => this.onLink(relativePath, stat),
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
      this.refused = false;
      this.options.onFolderChanged?.();
    }
  }

  /**
   * Files of the journal that an ignore pattern added since covers: the scan passes them by, so
   * they would stay queued or failed forever and keep a run from finishing green. They leave the
   * views like a deleted file (a synced one stays as history); should the pattern go, the scan
   * finds them again and a file that was waiting is queued again.
   */
  private dropIgnored(known: ReadonlyArray<readonly [string, FileStat]>, isIgnored: (relativePath: string) => boolean): Array<readonly [string, FileStat]> {
    const kept: Array<readonly [string, FileStat]> = [];
    for (const entry of known) {
      if (!isIgnored(entry[0])) {
        kept.push(entry);
        continue;
      }
      const record = this.options.journal.markDeletedLocally(this.options.pair.id, entry[0], { event: 'ignored', detail: 'an ignore pattern covers it' });
      if (record) this.options.onFileChanged(record);
    }
    return kept;
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

  /** Missing, unreadable or refused: said, and looked at again every few seconds. */
  private folderMissing(): void {
    if (this.closed) return;
    const refusal = this.refusal();
    const reason = refusal ?? PLAIN_MESSAGES.FOLDER_MISSING;
    if (this.folderError !== reason) {
      this.folderError = reason;
      this.refused = refusal !== undefined;
      this.options.onFolderChanged?.();
    }
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.lookForFolder(), this.options.folderCheckMs ?? FOLDER_CHECK_MS);
  }

  private refusal(): string | undefined {
    return this.options.folderRefusal?.(this.options.pair.folder);
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

  /** Files seen but not yet in the journal (not stable yet, or held for a full disk). */
  get settling(): number {
    return this.gate.pendingCount + this.held.length;
  }

  /** Of `settling`, the files that stopped changing but wait for the journal (a full disk). */
  get heldForSpace(): number {
    return this.held.length;
  }

  /** Files that stopped changing but cannot be opened for reading (see StabilityGate.unreadable). */
  unreadable(): string[] {
    return this.gate.unreadable();
  }

  /** The journal can be written again: the files held for it are journaled now. */
  retryHeld(): void {
    const held = this.held;
    this.held = [];
    for (const { relativePath, stat } of held) this.onStable(relativePath, stat);
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
    await this.flushing;
  }

  /**
   * The gate releases a whole folder of files at once (a scan: thousands). They are journaled in one
   * transaction at the end of the current microtask run instead of one transaction each; each row
   * is still written before anything acts on it (the engine hears of a file only afterwards).
   */
  private onStable(relativePath: string, stat: FileStat): void {
    if (this.closed) return;
    if (this.stable.length === 0) {
      queueMicrotask(() => {
        this.flushing = this.flushing.then(() => this.flushStable()).catch(this.options.onError);
      });
    }
    this.stable.push({ relativePath, stat });
  }

  private async flushStable(): Promise<void> {
    const batch = this.stable;
    this.stable = [];
    if (this.closed || batch.length === 0) return;
    const clashes = await this.nameClashes(batch);
    if (this.closed) return;
    const { pair, journal } = this.options;
    const mappings = batch.map(({ relativePath }) => mapToRemote(pair, relativePath));
    const observed = batch.map(({ relativePath, stat }, index) => {
      const mapping = mappings[index]!;
      const fileName = mapping.ok ? mapping.fileName : relativePath.slice(relativePath.lastIndexOf('/') + 1);
      return { relativePath, observed: { ...stat, remotePath: mapping.ok ? mapping.remotePath : pair.remoteBasePath, fileName } };
    });
    let records: FileRecord[];
    try {
      records = journal.observeMany ? journal.observeMany(pair.id, observed) : observed.map((file) => journal.observe(pair.id, file.relativePath, file.observed));
    } catch (error) {
      // One transaction: nothing of the batch was written. Kept for retryHeld, so a full disk
      // delays these files instead of losing them until the next rescan.
      if (isDiskFull(error)) this.held.push(...batch);
      throw error;
    }
    records.forEach((record, index) => {
      const mapping = mappings[index]!;
      const clash = mapping.ok ? clashes.get(record.relativePath) : undefined;
      if ((mapping.ok && clash === undefined) || record.state === 'failed') return this.options.onFileChanged(record);
      const failure = mapping.ok ? { errorCode: 'CONFLICT', errorMessage: clash! } : { errorCode: 'INVALID_NAME', errorMessage: mapping.reason };
      this.options.onFileChanged(journal.transition(record.id, 'failed', { ...failure, errorDetail: null }));
    });
  }

  /**
   * Files of the batch that the server would take for another file of the folder that is still
   * there, with the reason: a name written once composed and once decomposed (NFC and NFD: two
   * files on Linux and NTFS), or names that differ only in case on a disk that tells case apart.
   * Such a file is not uploaded (it would land on the other file's document as its new version);
   * it fails visibly. The file that had the name first keeps it; a file whose row already has a
   * document keeps it too.
   */
  private async nameClashes(batch: ReadonlyArray<{ relativePath: string }>): Promise<Map<string, string>> {
    const { pair, journal } = this.options;
    const clashes = new Map<string, string>();
    for (const { relativePath } of batch) {
      const others = [...this.addName(relativePath)].filter((other) => other !== relativePath && !clashes.has(other));
      if (others.length === 0) continue;
      const own = journal.find(pair.id, relativePath);
      if (own && (own.documentId !== null || (own.state !== 'queued' && own.state !== 'failed'))) continue;
      for (const other of others) {
        const row = journal.find(pair.id, other);
        // A file that failed before it had a document (for its name, for this very clash, a link)
        // holds no name on the server.
        if (row && (row.deletedLocally || (row.state === 'failed' && row.documentId === null))) continue;
        const [mine, theirs] = await Promise.all([fileIdentity(this.absolute(relativePath)), fileIdentity(this.absolute(other))]);
        // One file under two spellings (a disk that ignores case or normalization) is no clash.
        if (mine === undefined || theirs === undefined || mine === theirs) continue;
        clashes.set(relativePath, nameClashReason(other));
        break;
      }
    }
    return clashes;
  }

  /** Adds the file to the names index; returns every file sharing its server name, itself included. */
  private addName(relativePath: string): Set<string> {
    const key = serverNameKey(relativePath);
    let sharing = this.names.get(key);
    if (!sharing) this.names.set(key, (sharing = new Set()));
    sharing.add(relativePath);
    return sharing;
  }

  private absolute(relativePath: string): string {
    return path.join(this.options.pair.folder, ...relativePath.split('/'));
  }

  /**
   * A symbolic link in the folder: not followed (see watcher.ts), but given a failed row with the
   * reason, so that a scan saved as a link is not skipped without a word.
   */
  private onLink(relativePath: string, stat: FileStat): void {
    if (this.closed) return;
    this.gate.forget(relativePath);
    const { pair, journal } = this.options;
    // Journaled in turn with the stable files, whose name check reads the rows before it.
    this.flushing = this.flushing
      .then(() => {
        if (this.closed) return;
        const mapping = mapToRemote(pair, relativePath);
        const fileName = mapping.ok ? mapping.fileName : relativePath.slice(relativePath.lastIndexOf('/') + 1);
        const record = journal.observe(pair.id, relativePath, { ...stat, remotePath: mapping.ok ? mapping.remotePath : pair.remoteBasePath, fileName });
        if (record.state !== 'queued') return this.options.onFileChanged(record);
        this.options.onFileChanged(journal.transition(record.id, 'failed', { errorCode: 'UNAVAILABLE', errorMessage: LINK_REASON, errorDetail: null }));
      })
      .catch(this.options.onError);
  }

  private onRemoved(relativePath: string): void {
    const key = serverNameKey(relativePath);
    const sharing = this.names.get(key);
    sharing?.delete(relativePath);
    if (sharing?.size === 0) this.names.delete(key);
    this.gate.forget(relativePath);
    try {
      const record = this.options.journal.markDeletedLocally(this.options.pair.id, relativePath);
      if (record) this.options.onFileChanged(record);
    } catch (error) {
      // Called from the watcher's event: a refused write (a full disk) must not escape it. The
      // next scan finds the file gone again.
      this.options.onError(error);
    }
  }
}

/** A scanner inbox's case: everything of the folder but that one top-level entry is passed by. */
function onlyEntry(only: string | undefined, isIgnored: (relativePath: string) => boolean): (relativePath: string) => boolean {
  if (only === undefined) return isIgnored;
  return (relativePath) => isIgnored(relativePath) || relativePath.replace(/\\/g, '/').split('/')[0] !== only;
}

function nameClashReason(other: string): string {
  const shown = visibleName(other.normalize('NFC'));
  return `Another file, '${shown}', has the same name on the server, which does not tell apart upper and lower case or the two ways of writing an accented letter (as one character, or a letter and an accent as macOS writes it). This file was not uploaded, so that it does not replace the other one: rename one of the two.`;
}
