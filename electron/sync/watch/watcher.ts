/**
 * Watches a pair's folder. The scan is the truth and watch events are hints: a full walk at start
 * and every few minutes catches whatever the OS did not report (network shares, overflowing event
 * queues, changes while the app was closed); chokidar makes new files show up within a moment.
 * Idle watching costs nothing: no polling, and stability.ts (not awaitWriteFinish) decides when a
 * file is done.
 *
 * chokidar watches directories only. Left to itself it also opens a watch per file (an inotify
 * watch, an FSWatcher and a retained fs.Stats each: ~130 MB of heap and 50,000 inotify watches for
 * 50,000 files), although a directory's watch already reports every change to the files in it. So
 * files are ignored by chokidar, and the directory watches' raw events (a name in a watched
 * directory) are the hints: the name is stat'ed and reported like any other observation.
 *
 * A directory watch exists only once chokidar has listed the new folder and opened it: files
 * written into a folder that has just appeared (a scanner's new case folder, hundreds of files
 * within a second) can land before it and send no event. So a folder that appears is listed at
 * once, again when the first event of its own watch proves the watch live, and again after the
 * settle time (and after every later look that still found a file no event told of).
 */
import { lstat, opendir, stat } from 'node:fs/promises';
import path from 'node:path';
import { watch } from 'chokidar';
import type { FSWatcher } from 'chokidar';
import { serverNameKey, toRelativePath } from '../upload/mapping.js';
import { DEFAULT_SETTLE_MS, fileIdentity, statIfPresent } from './stability.js';
import type { FileStat } from './stability.js';

export interface FolderWatcherOptions {
  folder: string;
  isIgnored: (relativePath: string) => boolean;
  /** A file appeared or changed (relative path with posix separators, spelled as on disk). */
  onCandidate: (relativePath: string, stat: FileStat) => void;
  /**
   * A symbolic link (to a file or a folder). Links are not followed — a link to a large tree or a
   * loop must not be uploaded by accident — but told, so that the user learns why nothing went up.
   */
  onLink?: (relativePath: string, stat: FileStat) => void;
  /** A file known to be there is gone. */
  onRemoved: (relativePath: string) => void;
  onError?: (error: unknown) => void;
  /**
   * The folder itself is gone or unreadable (deleted, renamed, a share unmounted). Its files are not
   * reported removed, since they may be back with the share; the watch is dead and is to be closed.
   */
  onFolderGone?: (error: unknown) => void;
  /**
   * How often the folder itself is looked at (one stat): a folder renamed away, or a share unmounted
   * under its mount point, sends no event the watch can tell from others.
   */
  folderCheckMs?: number;
  /**
   * The stability gate's settle time: a folder that appears is listed once more after it (files
   * written into it before its watch was in place send no event; see above).
   */
  settleMs?: number;
  /** Why the folder may not be watched any more (it now leads to the sync home, say): then it is gone. */
  refusal?: () => string | undefined;
  /** Minutes between full rescans; 0 turns them off. */
  rescanMinutes?: number;
  /**
   * Files already known (e.g. from the journal), as last seen: the first scan then reports only
   * what changed or disappeared while nobody was watching.
   */
  known?: Iterable<readonly [string, FileStat]>;
}

export interface FolderWatcher {
  /** Walks the whole folder now and reports every difference to what is known. */
  rescan(): Promise<void>;
  close(): Promise<void>;
}

export const DEFAULT_RESCAN_MINUTES = 10;

/** What the walk or a hint found under a name: a file, or a symbolic link (never followed). */
type Observed = FileStat & { link?: true };

function linkStat(stats: { size: number; mtimeMs: number }): Observed {
  return { size: stats.size, mtimeMs: stats.mtimeMs, link: true };
}
export const DEFAULT_FOLDER_CHECK_MS = 5000;
/** How many entries a walk stats at once. */
const WALK_PARALLEL = 16;

/** A folder that appeared while watching, looked at again until its watch has surely caught up. */
interface NewFolder {
  /** The next look, the settle time after the last. */
  timer: NodeJS.Timeout | undefined;
  /** An event of the folder's own watch arrived: from then on, the watch tells what is written. */
  live: boolean;
  /** The look under way; a look asked for meanwhile runs once after it (see look). */
  looking: Promise<number> | undefined;
  again: Look | undefined;
}

/** A whole look stats every file; a look for new names only those not known yet (see walk). */
type Look = 'whole' | 'new names';

/** Starts watching; resolves once the watch is live and the first scan has been reported. */
export async function watchFolder(options: FolderWatcherOptions): Promise<FolderWatcher> {
  const folderWatch = new FolderWatch(options);
  await folderWatch.start();
  return folderWatch;
}

class FolderWatch implements FolderWatcher {
  private known: Map<string, FileStat>;
  private watcher: FSWatcher | undefined;
  private interval: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private closed = false;
  /** Paths named by directory events since the last look (a file being written fires many). */
  private hinted = new Set<string>();
  private hintTimer: NodeJS.Timeout | undefined;
  /** The folder as first opened (device and inode): the same path holding another folder is a new folder. */
  private identity: { dev: number; ino: number } | undefined;
  private folderTimer: NodeJS.Timeout | undefined;
  private gone = false;
  /** Folders known to be there (relative; '' is the folder itself): an event from any other is from a new one. */
  private folders = new Set<string>(['']);
  /** Folders that appeared while watching and are still looked at (see onNewFolder). */
  private newFolders = new Map<string, NewFolder>();

  constructor(private readonly options: FolderWatcherOptions) {
    this.known = new Map(options.known ?? []);
  }

  async start(): Promise<void> {
    const folderStats = await stat(this.options.folder);
    this.identity = { dev: folderStats.dev, ino: folderStats.ino };
    const watcher = watch(this.options.folder, {
      ignoreInitial: true,
      usePolling: false,
      awaitWriteFinish: false,
      followSymlinks: false,
      // Files are not watched one by one (see above); a path without stats yet is decided later.
      ignored: (absolutePath: string, stats?: { isFile(): boolean }) => stats?.isFile() === true || this.ignores(absolutePath),
    });
    this.watcher = watcher;
    watcher.on('raw', (_event: string, name: unknown, details: unknown) => this.onRaw(name, (details as { watchedPath?: string } | undefined)?.watchedPath));
    watcher.on('addDir', (absolutePath: string) => this.onAddedFolder(absolutePath));
    watcher.on('unlinkDir', (absolutePath: string) => this.onUnlinkedFolder(absolutePath));
    watcher.on('error', (error: unknown) => this.options.onError?.(error));
    // Watch first, then scan: a file written during the scan is seen by one or the other.
    await new Promise<void>((resolve) => watcher.once('ready', resolve));
    await this.rescan();
    const minutes = this.options.rescanMinutes ?? DEFAULT_RESCAN_MINUTES;
    if (minutes > 0 && !this.closed) {
      this.interval = setInterval(() => this.guard(this.rescan()), minutes * 60_000);
    }
    if (!this.closed) this.folderTimer = setInterval(() => this.guard(this.folderIsHere().then(() => undefined)), this.options.folderCheckMs ?? DEFAULT_FOLDER_CHECK_MS);
  }

  /**
   * True while the folder watched is still at its path; otherwise tells onFolderGone (once) and
   * answers false, so that nothing is reported removed: its files went with the folder.
   */
  private async folderIsHere(): Promise<boolean> {
    if (this.gone) return false;
    const refusal = this.options.refusal?.();
    if (refusal !== undefined) {
      this.folderUnreadable(new Error(refusal));
      return false;
    }
    let error: unknown;
    try {
      const now = await stat(this.options.folder);
      if (now.isDirectory() && now.dev === this.identity?.dev && now.ino === this.identity.ino) return true;
      error = new Error(`'${this.options.folder}' is no longer the folder that was watched`);
    } catch (statError) {
      error = statError;
    }
    this.folderUnreadable(error);
    return false;
  }

  private folderUnreadable(error: unknown): void {
    if (this.gone || this.closed) return;
    this.gone = true;
    this.options.onFolderGone?.(error);
  }

  rescan(): Promise<void> {
    this.scanning ??= this.scan().finally(() => {
      this.scanning = undefined;
    });
    return this.scanning;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.interval);
    clearInterval(this.folderTimer);
    clearTimeout(this.hintTimer);
    this.hinted.clear();
    for (const newFolder of this.newFolders.values()) clearTimeout(newFolder.timer);
    this.newFolders.clear();
    await this.watcher?.close();
    await this.scanning;
  }

  private async scan(): Promise<void> {
    const seen = new Map<string, Observed>();
    // Not one file is known gone while the folder itself is (an unmounted share, a renamed folder).
    if (!(await this.folderIsHere())) return;
    const folders = new Set<string>(['']);
    await this.walk(this.options.folder, '', seen, folders);
    if (this.closed || !(await this.folderIsHere())) return;
    this.folders = new Set([...folders, ...this.newFolders.keys()]);
    for (const [relativePath, stat] of seen) this.report(relativePath, stat);
    const seenNames = new Map<string, string[]>();
    for (const relativePath of seen.keys()) {
      const key = serverNameKey(relativePath);
      seenNames.set(key, [...(seenNames.get(key) ?? []), relativePath]);
    }
    for (const relativePath of [...this.known.keys()]) {
      if (seen.has(relativePath)) continue;
      // The watcher may have reported a file the walk passed before it was written.
      const stat = await statIfPresent(this.absolute(relativePath));
      if (!stat || (await this.isAliasOfSeen(relativePath, seenNames.get(serverNameKey(relativePath)) ?? []))) this.forget(relativePath);
    }
  }

  /**
   * A name the walk did not list can still open a file where the file system ignores case or
   * normalization (Windows, macOS): `scan.stl` after a rename to `SCAN.STL`, or a journal key
   * written in NFC before keys were kept as on disk. When it opens the very file the walk listed
   * under another spelling, that spelling is the file's name now and the old one is gone.
   */
  private async isAliasOfSeen(relativePath: string, sameServerName: readonly string[]): Promise<boolean> {
    if (sameServerName.length === 0) return false;
    const identity = await fileIdentity(this.absolute(relativePath));
    if (identity === undefined) return false;
    for (const other of sameServerName) {
      if ((await fileIdentity(this.absolute(other))) === identity) return true;
    }
    return false;
  }

  private absolute(relativePath: string): string {
    return path.join(this.options.folder, ...relativePath.split('/'));
  }

  /**
   * Lists a folder and its sub-folders: files and links into `seen`, sub-folders into `folders`.
   * Several entries are stat'ed at once: one after the other, a few hundred new files took a second
   * on a busy machine. With `onlyNew`, files already known are not stat'ed again (a new folder's
   * later looks are after names no event told of; the watch tells of changes to the others).
   */
  private async walk(absoluteFolder: string, relativeFolder: string, seen: Map<string, Observed>, folders: Set<string>, { onlyNew = false } = {}): Promise<void> {
    let folder;
    try {
      folder = await opendir(absoluteFolder);
    } catch (error) {
      // The sync folder itself unreadable (permissions taken away): nothing in it was looked at,
      // so the pair must not pass for synced.
      if (relativeFolder === '') {
        this.folderUnreadable(error);
        return;
      }
      // A sub-folder removed mid-scan is normal; anything else (permissions) is worth telling.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.options.onError?.(error);
      return;
    }
    const subfolders: Array<[string, string]> = [];
    const looking: Array<Promise<readonly [string, Observed | undefined]>> = [];
    const collect = async () => {
      for (const [relativePath, stat] of await Promise.all(looking.splice(0))) if (stat) seen.set(relativePath, stat);
    };
    for await (const entry of folder) {
      // As on disk, not normalized: the file is opened by this name (see toRelativePath).
      const relativePath = relativeFolder === '' ? entry.name : `${relativeFolder}/${entry.name}`;
      if (this.options.isIgnored(relativePath)) continue;
      const absolutePath = path.join(absoluteFolder, entry.name);
      if (entry.isDirectory()) {
        folders.add(relativePath);
        subfolders.push([absolutePath, relativePath]);
      } else if (onlyNew && this.known.has(relativePath)) {
        continue;
      } else if (entry.isFile()) {
        looking.push(statIfPresent(absolutePath).then((stat) => [relativePath, stat] as const));
      } else if (entry.isSymbolicLink()) {
        looking.push(lstat(absolutePath).then((stat) => [relativePath, linkStat(stat)] as const, () => [relativePath, undefined] as const));
      }
      if (looking.length >= WALK_PARALLEL) await collect();
    }
    await collect();
    for (const [absolutePath, relativePath] of subfolders) await this.walk(absolutePath, relativePath, seen, folders, { onlyNew });
  }

  /** A directory watch named an entry: look at it soon (once, however many events it fired). */
  private onRaw(name: unknown, watchedPath: string | undefined): void {
    if (this.closed || watchedPath === undefined) return;
    this.onEventFrom(watchedPath);
    if (typeof name !== 'string' || name === '') {
      // The platform did not say which entry: the scan finds out.
      this.guard(this.rescan());
      return;
    }
    this.hint(path.resolve(watchedPath, name));
  }

  private hint(absolutePath: string): void {
    this.hinted.add(absolutePath);
    this.hintTimer ??= setTimeout(() => {
      this.hintTimer = undefined;
      this.guard(this.checkHints());
    }, 10);
  }

  // Stats are taken now rather than taken from the event: an event may describe a moment long
  // gone (a truncation before the write), and a stale size would be reported as the latest.
  private async checkHints(): Promise<void> {
    const paths = [...this.hinted];
    this.hinted.clear();
    // A name gone with its whole folder is not a file deleted (see folderIsHere).
    if (!(await this.folderIsHere())) return;
    for (const absolutePath of paths) {
      if (this.closed) return;
      // One name that cannot be looked at (EACCES, ENAMETOOLONG, ELOOP) is told, and the other
      // names of the batch are still looked at; the next scan looks at it again.
      await this.checkHint(absolutePath).catch((error: unknown) => this.options.onError?.(error));
    }
  }

  private async checkHint(absolutePath: string): Promise<void> {
    const relativePath = this.inside(absolutePath);
    if (relativePath === null || this.options.isIgnored(relativePath)) return;
    let stats;
    try {
      stats = await lstat(absolutePath);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
      // Gone: a file that was known is reported removed, and so is every file of a folder that was.
      this.forgetTree(relativePath);
      return;
    }
    if (stats.isFile()) this.report(relativePath, { size: stats.size, mtimeMs: stats.mtimeMs });
    else if (stats.isSymbolicLink()) this.report(relativePath, linkStat(stats));
    // Named in its parent before chokidar has even listed it: looked at from now on.
    else if (stats.isDirectory() && !this.folders.has(relativePath)) this.onNewFolder(relativePath);
  }

  /** A folder appeared (created, or moved in whole): its files are not announced one by one. */
  private onAddedFolder(absolutePath: string): void {
    if (this.closed) return;
    const relativeFolder = this.inside(absolutePath);
    if (relativeFolder !== null) this.onNewFolder(relativeFolder);
  }

  /**
   * An event came from a folder's own watch. The first from a folder that appeared proves its
   * watch live: what was written before it is on disk now, so one more look finds all of it.
   * One from a folder not known at all is from a new folder whose appearance went unseen.
   */
  private onEventFrom(watchedPath: string): void {
    const relativeFolder = path.resolve(watchedPath) === path.resolve(this.options.folder) ? '' : this.inside(watchedPath);
    if (relativeFolder === null || this.options.isIgnored(relativeFolder)) return;
    const newFolder = this.newFolders.get(relativeFolder);
    if (newFolder?.live === false) {
      newFolder.live = true;
      this.guard(this.look(relativeFolder, newFolder, 'new names').then(() => undefined));
    } else if (!this.folders.has(relativeFolder)) {
      this.onNewFolder(relativeFolder, { live: true });
    }
  }

  /**
   * A folder appeared: it and its sub-folders are listed at once, and again after the settle time.
   * Files written before its watch was in place are found by these looks, not by events.
   */
  private onNewFolder(relativeFolder: string, { live = false } = {}): void {
    if (this.closed) return;
    this.folders.add(relativeFolder);
    let newFolder = this.newFolders.get(relativeFolder);
    if (newFolder) clearTimeout(newFolder.timer);
    else this.newFolders.set(relativeFolder, (newFolder = { timer: undefined, live: false, looking: undefined, again: undefined }));
    newFolder.live ||= live;
    this.guard(this.look(relativeFolder, newFolder, 'whole').then(() => undefined));
    this.lookAgainLater(relativeFolder, newFolder);
  }

  /** After the settle time, looks again; once a look finds nothing that no event told of, stops. */
  private lookAgainLater(relativeFolder: string, newFolder: NewFolder): void {
    newFolder.timer = setTimeout(() => {
      newFolder.timer = undefined;
      this.guard(
        this.look(relativeFolder, newFolder, 'new names').then((found) => {
          if (this.closed || this.newFolders.get(relativeFolder) !== newFolder) return;
          if (found > 0) this.lookAgainLater(relativeFolder, newFolder);
          else this.newFolders.delete(relativeFolder);
        }),
      );
    }, this.options.settleMs ?? DEFAULT_SETTLE_MS);
  }

  /**
   * One look at a new folder at a time (the parent's event and chokidar's addDir ask at the same
   * moment): one asked for during a look runs once right after it, for what was written meanwhile.
   */
  private look(relativeFolder: string, newFolder: NewFolder, kind: Look): Promise<number> {
    if (newFolder.looking) {
      newFolder.again = newFolder.again === 'whole' ? 'whole' : kind;
      return newFolder.looking;
    }
    const looking = (async () => {
      let found = 0;
      for (let next: Look | undefined = kind; next !== undefined && !this.closed; ) {
        newFolder.again = undefined;
        found += await this.lookAt(relativeFolder, next);
        next = newFolder.again;
      }
      return found;
    })();
    newFolder.looking = looking.finally(() => {
      newFolder.looking = undefined;
    });
    return newFolder.looking;
  }

  /** Lists a folder and its sub-folders and reports what changed; answers how many files were not known at all. */
  private async lookAt(relativeFolder: string, kind: Look): Promise<number> {
    if (this.closed) return 0;
    // Gone already (an event of a folder being deleted came after its removal was handled).
    const here = await lstat(this.absolute(relativeFolder)).then((stats) => stats.isDirectory(), () => false);
    if (!here) {
      this.folders.delete(relativeFolder);
      return 0;
    }
    const seen = new Map<string, Observed>();
    const folders = new Set<string>();
    await this.walk(this.absolute(relativeFolder), relativeFolder, seen, folders, { onlyNew: kind === 'new names' });
    if (this.closed) return 0;
    for (const folder of folders) this.folders.add(folder);
    let found = 0;
    for (const [relativePath, stat] of seen) {
      const unknown = !this.known.has(relativePath);
      if (this.report(relativePath, stat) && unknown) found++;
    }
    return found;
  }

  /** A folder was removed: looked at with the other hints, once it is sure the sync folder is still there. */
  private onUnlinkedFolder(absolutePath: string): void {
    if (this.closed) return;
    if (path.resolve(absolutePath) === path.resolve(this.options.folder)) {
      this.guard(this.folderIsHere().then(() => undefined));
      return;
    }
    this.hint(path.resolve(absolutePath));
  }

  private forgetTree(relativePath: string): void {
    this.forget(relativePath);
    const prefix = `${relativePath}/`;
    if (this.folders.delete(relativePath)) {
      for (const folder of [...this.folders]) if (folder.startsWith(prefix)) this.folders.delete(folder);
    }
    for (const knownPath of [...this.known.keys()]) {
      if (knownPath.startsWith(prefix)) this.forget(knownPath);
    }
  }

  /** Reports a file only when it is new or differs from what was last reported; answers whether it did. */
  private report(relativePath: string, stat: Observed): boolean {
    if (this.closed) return false;
    const known = this.known.get(relativePath);
    if (known && known.size === stat.size && known.mtimeMs === stat.mtimeMs) return false;
    this.known.set(relativePath, stat);
    if (stat.link) this.options.onLink?.(relativePath, { size: stat.size, mtimeMs: stat.mtimeMs });
    else this.options.onCandidate(relativePath, stat);
    return true;
  }

  private forget(relativePath: string): void {
    if (this.closed || !this.known.delete(relativePath)) return;
    this.options.onRemoved(relativePath);
  }

  private ignores(absolutePath: string): boolean {
    if (path.resolve(absolutePath) === path.resolve(this.options.folder)) return false;
    try {
      return this.options.isIgnored(toRelativePath(this.options.folder, absolutePath));
    } catch {
      return false;
    }
  }

  /** The path relative to the folder, or null for the folder itself or anything outside it. */
  private inside(absolutePath: string): string | null {
    try {
      return toRelativePath(this.options.folder, absolutePath);
    } catch {
      return null;
    }
  }

  private guard(work: Promise<void>): void {
    work.catch((error: unknown) => this.options.onError?.(error));
  }
}
