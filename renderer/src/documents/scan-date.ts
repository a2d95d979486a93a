/**
 * When a file was scanned, as staff mean it: the time the scanner PC gave the file (the document's
 * scannedAt), or, for a document no workstation dated, its upload time, said to be so. The server
 * filters and sorts by the same fallback (docs/api.md "Scan times").
 */
import type { DocumentDto } from '../../../shared/schemas.js';

export interface ScanDate {
  at: string;
  /** True when the document has no scan time and `at` is its upload. */
  uploaded: boolean;
}

export function scanDateOf(document: Pick<DocumentDto, 'scannedAt' | 'lastModifiedAt'>): ScanDate {
  return document.scannedAt ? { at: document.scannedAt, uploaded: false } : { at: document.lastModifiedAt, uploaded: true };
}

/** The date filters of the Files view: a day or a week of this computer's calendar. */
export type ScanDay = { kind: 'any' } | { kind: 'today' } | { kind: 'yesterday' } | { kind: 'week' } | { kind: 'day'; day: string };

/**
 * The range a filter names, as the search takes it (from inclusive, to exclusive, UTC): the local
 * day's midnight to the next one, so "yesterday" is yesterday where the clinic is.
 */
export function scanRangeOf(filter: ScanDay, now: Date = new Date()): { scannedFrom: string; scannedTo: string } | null {
  const midnight = (date: Date, days = 0) => new Date(date.getFullYear(), date.getMonth(), date.getDate() + days);
  switch (filter.kind) {
    case 'any':
      return null;
    case 'today':
      return range(midnight(now), midnight(now, 1));
    case 'yesterday':
      return range(midnight(now, -1), midnight(now));
    case 'week':
      return range(midnight(now, -6), midnight(now, 1));
    case 'day': {
      const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(filter.day);
      if (!match) return null;
      const start = new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
      return range(start, midnight(start, 1));
    }
  }
}

function range(from: Date, to: Date): { scannedFrom: string; scannedTo: string } {
  return { scannedFrom: from.toISOString(), scannedTo: to.toISOString() };
}
