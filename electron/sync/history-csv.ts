/** The sync history of every file as CSV, for the clinic's records (RFC 4180 quoting). */
import type { Journal } from './journal.js';
import type { SyncPair } from './settings.js';

const HEADER = ['time', 'folder', 'patient', 'file', 'server path', 'event', 'version', 'sha256', 'detail'];

export function historyCsv(journal: Pick<Journal, 'byPair' | 'history'>, pairs: readonly SyncPair[]): string {
  const rows: string[][] = [];
  for (const pair of pairs) {
    for (const file of journal.byPair(pair.id)) {
      for (const entry of journal.history(file.id)) {
        rows.push([
          new Date(entry.at).toISOString(),
          pair.folder,
          pair.patientName ?? pair.patientId,
          file.relativePath,
          `${file.remotePath === '/' ? '' : file.remotePath}/${file.fileName}`,
          entry.event,
          entry.version === null ? '' : String(entry.version),
          entry.sha256 ?? '',
          entry.detail ?? '',
        ]);
      }
    }
  }
  rows.sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0));
  return [HEADER, ...rows].map((row) => row.map(csvField).join(',')).join('\r\n') + '\r\n';
}

function csvField(value: string): string {
  // A leading = + - @ would be a formula in a spreadsheet: neutralise it.
  const safe = /^[=+\-@]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
