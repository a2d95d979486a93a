import { useEffect, useRef, useState } from 'react';
import { isSkipped } from '../../../shared/file-states.js';
import type { FileState, FileView, PairView } from '../../../shared/bridge.js';
import { useBridgeEvent, useBridgeQuery } from '../bridge/context.js';
import { isNoLongerOnServer } from '../documents/failure-hints.js';
import { formatCount, formatFileCount } from '../format.js';

/** How long the files must be quiet before what happened is said, and the longest a burst is held back. */
const QUIET_MS = 1500;
const MAX_WAIT_MS = 6000;

interface Tally {
  synced: number;
  failed: number;
  /** Synced scans the re-check found gone from the server (not an upload that failed). */
  gone: number;
  /** Scans the re-check found missing on the server, synced again from the folder. */
  uploadedAgain: number;
  /** A folder problem that appeared (scan folder gone, disk full): said once, when it starts. */
  problem: string | null;
}

/**
 * What a screen reader hears about the sync while staff work on any screen: when files become synced
 * or failed, and when a folder gets into trouble — summed up per folder after the burst settles
 * ("Chair 1 to Jane Roe: 12 files synced and verified, 1 file could not be uploaded"), never one
 * announcement per file or per progress step. A polite live region: it waits for the reader to finish.
 */
export function SyncAnnouncer() {
  const pairs = useBridgeQuery((client) => client.listPairs(), []);
  const known = useRef(new Map<number, FileState>());
  const folderProblems = useRef(new Map<string, string | null>());
  const tallies = useRef(new Map<string, Tally>());
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const firstPending = useRef<number | null>(null);
  const [message, setMessage] = useState('');
  const pairsRef = useRef<PairView[]>([]);
  pairsRef.current = pairs.data ?? pairsRef.current;

  useEffect(
    () => () => {
      if (timer.current) clearTimeout(timer.current);
    },
    [],
  );

  const tally = (pairId: string): Tally => {
    let entry = tallies.current.get(pairId);
    if (!entry) tallies.current.set(pairId, (entry = { synced: 0, failed: 0, gone: 0, uploadedAgain: 0, problem: null }));
    return entry;
  };

  const flush = () => {
    timer.current = null;
    firstPending.current = null;
    const parts: string[] = [];
    for (const [pairId, entry] of tallies.current) {
      const said: string[] = [];
      if (entry.problem) said.push(entry.problem);
      if (entry.synced > 0) said.push(`${formatFileCount(entry.synced)} synced and verified`);
      if (entry.uploadedAgain > 0) said.push(entry.uploadedAgain === 1 ? '1 scan found missing on the server was uploaded again' : `${formatCount(entry.uploadedAgain)} scans found missing on the server were uploaded again`);
      if (entry.failed > 0) said.push(`${formatFileCount(entry.failed)} could not be uploaded`);
      if (entry.gone > 0) said.push(entry.gone === 1 ? '1 scan is no longer on the server' : `${formatCount(entry.gone)} scans are no longer on the server`);
      if (said.length > 0) parts.push(`${pairName(pairsRef.current.find((pair) => pair.id === pairId))}: ${said.join(', ').replace(/\.$/, '')}.`);
    }
    tallies.current.clear();
    if (parts.length === 0) return;
    const next = parts.join(' ');
    // The same words twice in a row are not read again by every screen reader: clear first.
    setMessage('');
    setTimeout(() => setMessage(next), 50);
  };

  const schedule = () => {
    const now = Date.now();
    firstPending.current ??= now;
    if (timer.current) clearTimeout(timer.current);
    timer.current = setTimeout(flush, Math.max(0, Math.min(QUIET_MS, firstPending.current + MAX_WAIT_MS - now)));
  };

  useBridgeEvent((event) => {
    if (event.type === 'pairs') {
      pairs.setData(event.pairs);
      for (const pair of event.pairs) {
        const problem = pair.folderError?.message ?? null;
        const before = folderProblems.current.get(pair.id);
        folderProblems.current.set(pair.id, problem);
        // A problem present when the app opened is on the screen already; one that starts now is said.
        if (problem && before !== undefined && before !== problem) {
          tally(pair.id).problem = problem;
          schedule();
        }
      }
      return;
    }
    if (event.type !== 'files') return;
    let changed = false;
    for (const file of event.files) {
      const before = known.current.get(file.id);
      known.current.set(file.id, file.state);
      if (before === file.state || (file.state !== 'synced' && file.state !== 'failed')) continue;
      // An empty file set aside is not news: nothing failed, nothing to do.
      if (isSkipped(file.state, file.error?.code)) continue;
      tally(event.pairId)[tallyOf(file)] += 1;
      changed = true;
    }
    if (changed) schedule();
  });

  // Seed what is known at start, so a folder's existing problem is not announced as new.
  useEffect(() => {
    for (const pair of pairs.data ?? []) if (!folderProblems.current.has(pair.id)) folderProblems.current.set(pair.id, pair.folderError?.message ?? null);
  }, [pairs.data]);

  return (
    <div className="visually-hidden" role="status" aria-live="polite" aria-atomic="true" data-testid="sync-announcements">
      {message}
    </div>
  );
}

/** Which count a file that became synced or failed adds to (it is one of the two). */
function tallyOf(file: FileView): 'synced' | 'failed' | 'gone' | 'uploadedAgain' {
  if (file.state === 'failed') return file.error && isNoLongerOnServer(file.error) ? 'gone' : 'failed';
  // Went up again because the re-check found it missing there: said so, not as a new upload.
  return file.lostAt !== null ? 'uploadedAgain' : 'synced';
}

function pairName(pair: PairView | undefined): string {
  if (!pair) return 'A synced folder';
  const folder = pair.folder.replace(/[\\/]+$/, '');
  return `${folder.slice(Math.max(folder.lastIndexOf('/'), folder.lastIndexOf('\\')) + 1) || folder} to ${pair.patientName ?? 'the patient'}`;
}
