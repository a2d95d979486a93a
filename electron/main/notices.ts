/**
 * What deserves a desktop notification, decided from two successive pair snapshots: a file that
 * newly failed, and a case that just finished. Plain data in, plain data out (no electron), so the
 * rules are testable and the main process only displays.
 */
import type { PairView, StateCounts } from '../../shared/bridge.js';
import { isNoLongerOnServer } from '../../shared/failure-hints.js';

export interface Notice {
  title: string;
  body: string;
  urgent: boolean;
}

function fileCount(counts: StateCounts): number {
  return Object.values(counts).reduce((sum, count) => sum + count, 0);
}

/** Failed files of a pair that were synced and are gone from the server now (the re-check's findings). */
function goneCount(pair: PairView): number {
  return pair.failureReasons.filter(isNoLongerOnServer).reduce((sum, reason) => sum + reason.count, 0);
}

export function noticesBetween(previous: readonly PairView[], next: readonly PairView[]): Notice[] {
  const notices: Notice[] = [];
  const before = new Map(previous.map((pair) => [pair.id, pair]));
  for (const pair of next) {
    const earlier = before.get(pair.id);
    if (!earlier) continue;
    const patient = pair.patientName ?? 'the patient';
    if (pair.counts.failed > earlier.counts.failed) {
      const added = pair.counts.failed - earlier.counts.failed;
      // Synced scans the re-check found gone from the server were uploaded once: not "could not be uploaded".
      const gone = goneCount(pair) - goneCount(earlier);
      const title =
        gone <= 0
          ? added === 1
            ? 'A file could not be uploaded'
            : `${added} files could not be uploaded`
          : gone === added
            ? added === 1
              ? 'A scan is no longer on the server'
              : `${added} scans are no longer on the server`
            : `${added} files need attention`;
      notices.push({
        title,
        body: `${pair.lastError?.message ?? 'Open Patient Docs to see why.'} (${patient})`,
        urgent: true,
      });
    }
    const earlierCases = new Map(earlier.cases.map((entry) => [entry.path, entry]));
    for (const entry of pair.cases) {
      const total = fileCount(entry.counts);
      const finished = total > 0 && entry.counts.synced === total;
      const previousCase = earlierCases.get(entry.path);
      const wasFinished = previousCase !== undefined && fileCount(previousCase.counts) > 0 && previousCase.counts.synced === fileCount(previousCase.counts);
      if (finished && previousCase && !wasFinished) {
        notices.push({ title: 'Case synced', body: `${entry.path === '/' ? 'Files' : entry.path}: ${total} ${total === 1 ? 'file' : 'files'} verified for ${patient}.`, urgent: false });
      }
    }
  }
  return notices;
}

/** One line for the tray tooltip and menu. */
export function traySummary(pairs: readonly PairView[], online: boolean): string {
  if (!online) return 'Offline — will retry';
  const failed = pairs.reduce((sum, pair) => sum + pair.counts.failed, 0);
  if (failed > 0) return failed === 1 ? '1 file needs attention' : `${failed} files need attention`;
  const unreadable = pairs.reduce((sum, pair) => sum + (pair.paused ? 0 : pair.unreadable.length), 0);
  if (unreadable > 0) return unreadable === 1 ? '1 file cannot be opened' : `${unreadable} files cannot be opened`;
  const moving = pairs.reduce((sum, pair) => sum + pair.counts.queued + pair.counts.creating + pair.counts.uploading + pair.counts.verifying + pair.counts.waiting, 0);
  if (moving > 0) return `Syncing ${moving} ${moving === 1 ? 'file' : 'files'}…`;
  // Not up to date while a scan is still being written: it is seen, not yet uploaded.
  const writing = pairs.reduce((sum, pair) => sum + (pair.paused ? 0 : pair.settling), 0);
  if (writing > 0) return `Waiting for ${writing} ${writing === 1 ? 'file' : 'files'} to finish writing…`;
  if (pairs.length > 0 && pairs.every((pair) => pair.paused)) return 'Paused';
  return pairs.length === 0 ? 'No folders synced yet' : 'Up to date';
}
