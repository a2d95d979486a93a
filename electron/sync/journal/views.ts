/** Journal rows → the views of the bridge contract (FileView, CaseView, PairView). Pure. */
import type { CaseView, FailureReason, FileError, FileView, PairState, PairView, StateCounts } from '../../../shared/bridge.js';
import { dicomSeriesKey, FILE_STATES, isSkipped, type ItemProgress } from '../../../shared/file-states.js';
import { isBridgeErrorCode, PLAIN_MESSAGES, type BridgeErrorCode } from '../../../shared/bridge-errors.js';
import { DELETED_LOCALLY_CODE, LOST_ON_SERVER_CODE, type FileRecord } from './file-record.js';
import type { ProgressTracker } from '../upload/progress.js';
import type { SyncPair } from '../home/settings.js';

export const ROOT_CASE = '/';

/**
 * Whether a file is listed: a file gone from the folder is listed only as history (synced), or
 * when the server lost it too (staff must hear of a scan that is nowhere any more).
 */
export function isListed(record: FileRecord): boolean {
  return !record.deletedLocally || record.state === 'synced' || record.errorCode === LOST_ON_SERVER_CODE;
}

export function emptyCounts(): StateCounts {
  return Object.fromEntries(FILE_STATES.map((state) => [state, 0])) as StateCounts;
}

export function fileError(record: FileRecord): FileError | null {
  if (!record.errorCode && !record.errorMessage) return null;
  const code: BridgeErrorCode =
    record.errorCode === DELETED_LOCALLY_CODE ? 'DELETED_LOCALLY' : record.errorCode && isBridgeErrorCode(record.errorCode) ? record.errorCode : 'INTERNAL';
  return { code, message: record.errorMessage ?? PLAIN_MESSAGES[code], detail: record.errorDetail ?? undefined };
}

export function toFileView(record: FileRecord, progress: ProgressTracker): FileView {
  const live = progress.get(record.id);
  const bytesDone = record.state === 'synced' ? record.size : live ? live.bytesDone : record.state === 'verifying' ? record.size : record.bytesDone;
  return {
    id: record.id,
    pairId: record.pairId,
    relativePath: record.relativePath,
    remotePath: record.remotePath,
    fileName: record.fileName,
    size: record.size,
    state: record.state,
    bytesDone: Math.min(bytesDone, record.size),
    rate: live ? Math.round(live.rate) : 0,
    attempts: record.attempts,
    nextAttemptAt: record.nextAttemptAt,
    error: record.state === 'synced' ? null : fileError(record),
    documentId: record.documentId,
    version: record.remoteVersion,
    updatedAt: record.updatedAt,
    syncedAt: record.syncedAt,
    lostAt: record.lostAt,
  };
}

/** The first folder level under the pair's folder: one scanner export, one case. */
export function caseOf(relativePath: string): string {
  const slash = relativePath.indexOf('/');
  return slash < 0 ? ROOT_CASE : relativePath.slice(0, slash);
}

export interface PairViewInput {
  pair: SyncPair;
  records: readonly FileRecord[];
  progress: ProgressTracker;
  online: boolean;
  /** Why the pair's folder is not watched (missing, unreadable), or null/absent while it is. */
  folderError?: string | null;
  /** Files seen but not yet journaled (the watch's stability gate), and those among them that cannot be opened. */
  settling?: number;
  unreadable?: readonly string[];
  /** This computer's disk is full: no file starts, and files found are not recorded yet. */
  diskFull?: boolean;
}

export function buildPairView({ pair, records, progress, online, folderError = null, settling = 0, unreadable = [], diskFull = false }: PairViewInput): PairView {
  const counts = emptyCounts();
  const cases = new Map<string, CaseView>();
  let bytesDone = 0;
  let bytesTotal = 0;
  const failures = new Map<string, FailureReason & { at: number }>();
  let lastFailure: { at: number; error: FileError } | null = null;
  let retryReason: { at: number; error: FileError } | null = null;
  const items = new ItemTally();
  const caseItems = new Map<string, ItemTally>();
  let skipped = 0;
  const named = new Map<string, Array<{ at: number; name: string }>>();
  for (const record of records) {
    if (!isListed(record)) continue;
    const view = toFileView(record, progress);
    const key = caseOf(record.relativePath);
    const entry = cases.get(key) ?? { path: key, counts: emptyCounts(), bytesDone: 0, bytesTotal: 0, items: { done: 0, total: 0 }, skipped: 0 };
    cases.set(key, entry);
    if (isSkipped(record.state, record.errorCode)) {
      // Nothing to upload and nothing anyone can do: neither failed nor counted in the progress.
      skipped += 1;
      entry.skipped += 1;
      continue;
    }
    counts[record.state] += 1;
    bytesDone += view.bytesDone;
    bytesTotal += record.size;
    entry.counts[record.state] += 1;
    entry.bytesDone += view.bytesDone;
    entry.bytesTotal += record.size;
    items.add(record.relativePath, record.state === 'synced');
    if (!caseItems.has(key)) caseItems.set(key, new ItemTally());
    caseItems.get(key)!.add(record.relativePath, record.state === 'synced');
    if (view.error && record.state === 'failed') {
      if (!lastFailure || record.updatedAt > lastFailure.at) lastFailure = { at: record.updatedAt, error: view.error };
      const reason = failures.get(view.error.code);
      if (!reason) failures.set(view.error.code, { ...view.error, count: 1, fileNames: [], at: record.updatedAt });
      else {
        reason.count += 1;
        // Each reason is told in the words of its newest file.
        if (record.updatedAt > reason.at) Object.assign(reason, { message: view.error.message, detail: view.error.detail, at: record.updatedAt });
      }
      const names = named.get(view.error.code) ?? [];
      names.push({ at: record.updatedAt, name: record.relativePath });
      named.set(view.error.code, names);
    }
    if (view.error && record.state === 'waiting' && (!retryReason || record.updatedAt > retryReason.at)) retryReason = { at: record.updatedAt, error: view.error };
  }
  const folderProblem: FileError | null = folderError ? { code: 'FOLDER_MISSING', message: folderError } : null;
  const state = pairState(pair, counts, online);
  // Every file not settled either way waits for space: neither "syncing" nor "still being written".
  const heldForDiskFull = diskFull && !pair.paused ? settling + counts.queued + counts.creating + counts.uploading + counts.verifying + counts.waiting : 0;
  const rate = progress.pairRate(pair.id);
  const remaining = bytesTotal - bytesDone;
  return {
    id: pair.id,
    folder: pair.folder,
    patientId: pair.patientId,
    patientName: pair.patientName ?? null,
    remoteBasePath: pair.remoteBasePath,
    paused: pair.paused,
    state: heldForDiskFull > 0 ? 'attention' : state === 'idle' ? (folderProblem || unreadable.length > 0 ? 'attention' : settling > 0 ? 'syncing' : state) : state,
    counts,
    bytesDone,
    bytesTotal,
    rateBytesPerSecond: Math.round(rate),
    etaSeconds: rate > 0 && remaining > 0 ? Math.ceil(remaining / rate) : remaining <= 0 ? 0 : null,
    cases: [...cases.values()].map((entry) => ({ ...entry, items: caseItems.get(entry.path)?.progress() ?? { done: 0, total: 0 } })).sort((a, b) => a.path.localeCompare(b.path)),
    items: items.progress(),
    skipped,
    lastError: folderProblem ?? lastFailure?.error ?? null,
    failureReasons: [...failures.values()]
      .sort((a, b) => b.count - a.count || b.at - a.at)
      .map(({ at: _at, ...reason }) => ({ ...reason, fileNames: newestNames(named.get(reason.code) ?? []) })),
    retryReason: retryReason?.error ?? null,
    folderError: folderProblem,
    settling,
    unreadable: [...unreadable],
    heldForDiskFull,
  };
}

function pairState(pair: SyncPair, counts: StateCounts, online: boolean): PairState {
  if (pair.paused) return 'paused';
  const working = counts.queued + counts.creating + counts.uploading + counts.verifying + counts.waiting;
  if (!online && working > 0) return 'offline';
  if (working > 0) return 'syncing';
  if (counts.failed > 0) return 'attention';
  return 'idle';
}

/** How many failed files a notice names; the rest are in the folder's file list. */
const NAMED_FAILURES = 3;

function newestNames(entries: Array<{ at: number; name: string }>): string[] {
  return entries
    .sort((a, b) => b.at - a.at || a.name.localeCompare(b.name))
    .slice(0, NAMED_FAILURES)
    .map((entry) => entry.name);
}

/** Progress in items: each file, and each DICOM series (its folder's slices) as one. */
class ItemTally {
  private files = { done: 0, total: 0 };
  private readonly series = new Map<string, boolean>();

  add(relativePath: string, done: boolean): void {
    const series = dicomSeriesKey(relativePath);
    if (series === null) {
      this.files.total += 1;
      if (done) this.files.done += 1;
    } else this.series.set(series, (this.series.get(series) ?? true) && done);
  }

  progress(): ItemProgress {
    let done = this.files.done;
    for (const finished of this.series.values()) if (finished) done += 1;
    return { done, total: this.files.total + this.series.size };
  }
}
