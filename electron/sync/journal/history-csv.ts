/** The sync history of every file as CSV, for the clinic's records (RFC 4180 quoting). */
import type { Journal } from './journal.js';
import type { RemovedPair, SyncPair } from '../home/settings.js';

/** Times are ISO 8601 in UTC. The last column is the file's: when the re-check last found its scan missing on the server. */
const HEADER = ['time', 'folder', 'patient', 'file', 'server path', 'event', 'version', 'sha256', 'detail', 'found missing on the server at'];

const UNKNOWN_FOLDER = 'a folder no longer synced';

export interface PairLabel {
  folder: string;
  patient: string;
  /** The folder is no longer synced ("Stop syncing"); its rows stay in the journal for the record. */
  removed: boolean;
}

/**
 * How a pair's rows are labelled: by the pair while it is synced, by what was recorded when it
 * stopped, and for a pair stopped before that was recorded, as an unknown folder.
 */
export function pairLabels(pairIds: readonly string[], pairs: readonly SyncPair[], removedPairs: readonly RemovedPair[] = []): Map<string, PairLabel> {
  const current = new Map(pairs.map((pair) => [pair.id, pair]));
  const removed = new Map(removedPairs.map((pair) => [pair.id, pair]));
  return new Map(
    pairIds.map((pairId) => {
      const pair = current.get(pairId) ?? removed.get(pairId);
      const label: PairLabel = pair
        ? { folder: pair.folder, patient: pair.patientName ?? pair.patientId, removed: !current.has(pairId) }
        : { folder: UNKNOWN_FOLDER, patient: '', removed: true };
      return [pairId, label];
    }),
  );
}

/** A scanner inbox case given to a patient (inbox/case-store.ts), as one line of the record. */
export interface AssignmentCsvRow {
  at: number;
  folder: string;
  patient: string;
  caseName: string;
  how: 'automatic' | 'confirmed';
  by: string;
  evidence: readonly string[];
  previousPatientId: string | null;
}

export function historyCsv(journal: Pick<Journal, 'byPair' | 'history' | 'pairIds'>, pairs: readonly SyncPair[], removedPairs: readonly RemovedPair[] = [], assignments: readonly AssignmentCsvRow[] = []): string {
  const rows: string[][] = [];
  for (const assignment of assignments) {
    const detail = [`${assignment.how} by ${assignment.by}`, ...(assignment.previousPatientId ? [`replacing patient ${assignment.previousPatientId}`] : []), ...assignment.evidence].join('; ');
    rows.push([new Date(assignment.at).toISOString(), assignment.folder, assignment.patient, assignment.caseName, '', 'case assigned', '', '', detail, '']);
  }
  for (const [pairId, label] of pairLabels(journal.pairIds(), pairs, removedPairs)) {
    for (const file of journal.byPair(pairId)) {
      // Empty when it never was, or a newer scan from the folder replaced the one found missing.
      const lostAt = file.lostAt === null ? '' : new Date(file.lostAt).toISOString();
      for (const entry of journal.history(file.id)) {
        rows.push([
          new Date(entry.at).toISOString(),
          label.removed && namesRealFolder(label) ? `${label.folder} (no longer synced)` : label.folder,
          label.patient,
          file.relativePath,
          `${file.remotePath === '/' ? '' : file.remotePath}/${file.fileName}`,
          entry.event,
          entry.version === null ? '' : String(entry.version),
          entry.sha256 ?? '',
          entry.detail ?? '',
          lostAt,
        ]);
      }
    }
  }
  rows.sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0));
  return [HEADER, ...rows].map((row) => row.map(csvField).join(',')).join('\r\n') + '\r\n';
}

/** A label naming a real folder (not the stand-in for a folder stopped before folders were recorded). */
function namesRealFolder(label: PairLabel): boolean {
  return label.folder !== UNKNOWN_FOLDER;
}

function csvField(value: string): string {
  // A leading = + - @ would be a formula in a spreadsheet: neutralise it.
  const safe = /^[=+\-@]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
