/**
 * Decides when a file has stopped changing and may be uploaded (DESIGN §4). chokidar's
 * awaitWriteFinish alone is not trusted: a file is ready when its size and mtime stayed the same for
 * a settle interval AND it can be opened for reading (Windows scanner software holds an exclusive
 * lock while it writes). Files in one folder settle as a group, because a DICOM series arrives as
 * hundreds of files and uploading the first half of a series is worse than waiting for all of it.
 * The wait has a bound: a sibling that has kept changing for FOLDER_WAIT_SETTLE_PERIODS settle
 * intervals (a log the scanner appends to, a file written for minutes) no longer holds back the
 * files beside it that are done. A series still arriving keeps holding: each new file is young.
 */
import { lstat, open, stat as statFile } from 'node:fs/promises';
import path from 'node:path';

export interface FileStat {
  size: number;
  mtimeMs: number;
}

export interface StabilityOptions {
  /** The sync folder; paths given to `observe` are relative to it, with posix separators. */
  root: string;
  onReady: (relativePath: string, stat: FileStat) => void;
  /** Called when a check fails for a reason other than a file changing or vanishing. */
  onError?: (error: unknown) => void;
  settleMs?: number;
  /** How often pending files are looked at; 0 leaves it to the caller to call `check()`. */
  checkEveryMs?: number;
  now?: () => number;
  /** Returns undefined when the file no longer exists. */
  stat?: (absolutePath: string) => Promise<FileStat | undefined>;
  canOpen?: (absolutePath: string) => Promise<boolean>;
}

export const DEFAULT_SETTLE_MS = 2000;
/** How many settle intervals a changing file may hold back its stable siblings (see above). */
export const FOLDER_WAIT_SETTLE_PERIODS = 5;

interface PendingFile {
  size: number;
  mtimeMs: number;
  /** When the file was last seen changing. */
  changedAt: number;
  /** When the gate began waiting for it. */
  firstSeenAt: number;
  /** When size and mtime were last taken from the disk (-Infinity: not yet). */
  statAt: number;
  /** Settled, but opening it for reading failed at the last look (locked, or no permission). */
  unopenable: boolean;
}

export async function statIfPresent(absolutePath: string): Promise<FileStat | undefined> {
  try {
    const stats = await statFile(absolutePath);
    return { size: stats.size, mtimeMs: stats.mtimeMs };
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/**
 * Device and inode as one string, undefined when the file is gone: tells whether two spellings of
 * a name (case, Unicode normalization) open one file or two. Bigint: NTFS file ids exceed 2^53.
 */
export async function fileIdentity(absolutePath: string): Promise<string | undefined> {
  try {
    const stats = await lstat(absolutePath, { bigint: true });
    return `${stats.dev}:${stats.ino}`;
  } catch {
    return undefined;
  }
}

/** Opening for reading fails while another program holds an exclusive lock on the file. */
export async function canOpenForReading(absolutePath: string): Promise<boolean> {
  try {
    const handle = await open(absolutePath, 'r');
    await handle.close();
    return true;
  } catch {
    return false;
  }
}

export class StabilityGate {
  private readonly pending = new Map<string, PendingFile>();
  private readonly settleMs: number;
  private readonly checkEveryMs: number;
  private readonly now: () => number;
  private readonly stat: (absolutePath: string) => Promise<FileStat | undefined>;
  private readonly canOpen: (absolutePath: string) => Promise<boolean>;
  private timer: NodeJS.Timeout | undefined;
  /** The timer set runs the check at the next turn, not after the interval. */
  private timerSoon = false;
  private running: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: StabilityOptions) {
    this.settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
    this.checkEveryMs = options.checkEveryMs ?? Math.max(100, Math.min(500, Math.floor(this.settleMs / 2)));
    this.now = options.now ?? Date.now;
    this.stat = options.stat ?? statIfPresent;
    this.canOpen = options.canOpen ?? canOpenForReading;
  }

  /** How many files are waiting to settle. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /**
   * Files that stopped changing but cannot be opened for reading (scanner software holding them,
   * or permissions this account lacks): they are not uploaded until they can be, and the user
   * should know why they wait.
   */
  unreadable(): string[] {
    const found: string[] = [];
    for (const [relativePath, entry] of this.pending) if (entry.unopenable && this.isSettled(entry)) found.push(relativePath);
    return found.sort();
  }

  /** A hint that the file changed (a watch event or a scan); it settles again from now. */
  observe(relativePath: string, stat?: FileStat): void {
    if (this.closed) return;
    const known = this.pending.get(relativePath);
    const now = this.now();
    this.pending.set(relativePath, {
      size: stat?.size ?? known?.size ?? -1,
      mtimeMs: stat?.mtimeMs ?? known?.mtimeMs ?? -1,
      changedAt: !known && stat ? this.lastChange(stat, now) : now,
      firstSeenAt: known?.firstSeenAt ?? now,
      statAt: stat ? now : -Infinity,
      unopenable: known?.unopenable ?? false,
    });
    this.schedule(!known && stat !== undefined && this.isSettled(this.pending.get(relativePath)!));
  }

  /**
   * When a file first seen last changed, as far as the gate can tell: a file whose mtime is older
   * than the settle time has been unchanged for longer than that already (a scan at start-up
   * finds the day's files) and is stable once it can be opened, without waiting a settle time
   * more. Any other file counts as changed now.
   */
  private lastChange(stat: FileStat, now: number): number {
    return now - stat.mtimeMs >= this.settleMs ? now - this.settleMs : now;
  }

  /** The file went away; it is no longer waited for. */
  forget(relativePath: string): void {
    this.pending.delete(relativePath);
  }

  /** Looks at every pending file once and releases those that are ready. */
  check(): Promise<void> {
    this.running ??= this.checkPending().finally(() => {
      this.running = undefined;
      this.schedule();
    });
    return this.running;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
  }

  /** A check after the interval, or `soon` (a file that is settled already): at the next turn of the event loop. */
  private schedule(soon = false): void {
    if (this.closed || this.checkEveryMs <= 0 || this.pending.size === 0) return;
    if (this.timer && !(soon && !this.timerSoon)) return;
    clearTimeout(this.timer);
    this.timerSoon = soon;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.check().catch((error: unknown) => this.options.onError?.(error));
      },
      soon ? 0 : this.checkEveryMs,
    );
  }

  private async checkPending(): Promise<void> {
    // A file is stat'ed when its settle time has passed, or when its last stat is most of a settle
    // interval old, not on every round: a change in between is still seen (the stat is compared
    // with the size and mtime recorded before), only a little later. A scan hands over thousands
    // of files at once, and stat'ing all of them every round cost more than the scan itself.
    const due: Array<[string, PendingFile]> = [];
    const now = this.now();
    const restatAfter = this.settleMs * 0.75;
    for (const member of this.pending) {
      const entry = member[1];
      if (entry.size < 0 || now - entry.statAt >= restatAfter || this.isSettled(entry)) due.push(member);
    }
    await eachLimited(due, IO_PARALLEL, ([relativePath, entry]) => this.refresh(relativePath, entry));
    for (const [, members] of this.groupByFolder()) {
      if (!members.every(([, entry]) => this.holdsNoSibling(entry))) continue;
      const openable: Array<[string, PendingFile]> = [];
      await eachLimited(members, IO_PARALLEL, async (member) => {
        const canOpen = await this.canOpen(this.absolute(member[0]));
        member[1].unopenable = !canOpen;
        if (canOpen) openable.push(member);
      });
      // Opening took time: a sibling may have started changing meanwhile.
      const folder = path.posix.dirname(members[0]![0]);
      if (!this.folderSettled(folder)) continue;
      for (const [relativePath, entry] of openable) this.release(relativePath, entry);
    }
  }

  private async refresh(relativePath: string, entry: PendingFile): Promise<void> {
    let current: FileStat | undefined;
    try {
      current = await this.stat(this.absolute(relativePath));
    } catch (error) {
      // Not readable right now (e.g. a locked folder): treat as still changing and look again.
      entry.changedAt = this.now();
      this.options.onError?.(error);
      return;
    }
    if (this.pending.get(relativePath) !== entry) return;
    entry.statAt = this.now();
    if (!current) {
      this.pending.delete(relativePath);
      return;
    }
    if (current.size !== entry.size || current.mtimeMs !== entry.mtimeMs) {
      // Never stat'ed before (observed without a stat): first seen now.
      entry.changedAt = entry.size < 0 ? this.lastChange(current, this.now()) : this.now();
      entry.size = current.size;
      entry.mtimeMs = current.mtimeMs;
    }
  }

  private groupByFolder(): Map<string, Array<[string, PendingFile]>> {
    const groups = new Map<string, Array<[string, PendingFile]>>();
    for (const member of this.pending) {
      const folder = path.posix.dirname(member[0]);
      const group = groups.get(folder);
      if (group) group.push(member);
      else groups.set(folder, [member]);
    }
    return groups;
  }

  private folderSettled(folder: string): boolean {
    for (const [relativePath, entry] of this.pending) {
      if (path.posix.dirname(relativePath) === folder && !this.holdsNoSibling(entry)) return false;
    }
    return true;
  }

  /** Settled, or changing for so long that its siblings are not kept waiting for it any more. */
  private holdsNoSibling(entry: PendingFile): boolean {
    return this.isSettled(entry) || this.now() - entry.firstSeenAt >= this.settleMs * FOLDER_WAIT_SETTLE_PERIODS;
  }

  private isSettled(entry: PendingFile): boolean {
    return entry.size >= 0 && this.now() - entry.changedAt >= this.settleMs;
  }

  private release(relativePath: string, entry: PendingFile): void {
    if (this.pending.get(relativePath) !== entry || !this.isSettled(entry)) return;
    this.pending.delete(relativePath);
    this.options.onReady(relativePath, { size: entry.size, mtimeMs: entry.mtimeMs });
  }

  private absolute(relativePath: string): string {
    return path.join(this.options.root, ...relativePath.split('/'));
  }
}

/** How many stats or opens the gate has in flight at once. */
const IO_PARALLEL = 16;

/** Runs `work` for every item, at most `limit` at a time, in order of start. */
async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
