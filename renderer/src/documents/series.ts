import { compareNatural, DICOM_TYPE } from '../../../shared/dicom.js';
import type { DocumentDto } from '../../../shared/schemas.js';

/** A DICOM series (a folder's slices) listed as one entry; opening it shows its folder, slice by slice. */
export interface SeriesEntry {
  kind: 'series';
  id: string;
  path: string;
  slices: number;
  fileSize: number;
  lastModifiedAt: string;
  scannedAt: string | null;
  allUploaded: boolean;
}

export type ListEntry = DocumentDto | SeriesEntry;

export function isSeries(entry: ListEntry): entry is SeriesEntry {
  return 'kind' in entry && entry.kind === 'series';
}

/** Fewer slices than this in one folder are listed one by one. */
const SERIES_MIN_SLICES = 2;

/**
 * The list as staff read it: the DICOM slices of each folder below the one shown become one
 * series entry (where its first slice was); the slices of the folder shown are listed in the order
 * a person counts (IM2 before IM10), in the places the slices had.
 */
export function withSeries(documents: readonly DocumentDto[], folder: string): ListEntry[] {
  const byPath = new Map<string, DocumentDto[]>();
  for (const document of documents) {
    if (document.fileType !== DICOM_TYPE) continue;
    const members = byPath.get(document.path) ?? [];
    members.push(document);
    byPath.set(document.path, members);
  }
  const own = (byPath.get(folder) ?? []).slice().sort((a, b) => compareNatural(a.fileName, b.fileName));
  let nextOwn = 0;
  const placed = new Set<string>();
  const entries: ListEntry[] = [];
  for (const document of documents) {
    if (document.fileType !== DICOM_TYPE) {
      entries.push(document);
      continue;
    }
    if (document.path === folder) {
      entries.push(own[nextOwn++]!);
      continue;
    }
    const members = byPath.get(document.path)!;
    if (members.length < SERIES_MIN_SLICES) {
      entries.push(document);
      continue;
    }
    if (placed.has(document.path)) continue;
    placed.add(document.path);
    entries.push(seriesOf(document.path, members));
  }
  return entries;
}

function seriesOf(path: string, members: readonly DocumentDto[]): SeriesEntry {
  const latest = (values: Array<string | null | undefined>) => values.reduce<string | null>((newest, value) => (value && (!newest || value > newest) ? value : newest), null);
  return {
    kind: 'series',
    id: `series:${path}`,
    path,
    slices: members.length,
    fileSize: members.reduce((sum, member) => sum + (member.fileSize ?? 0), 0),
    lastModifiedAt: latest(members.map((member) => member.lastModifiedAt)) ?? members[0]!.lastModifiedAt,
    scannedAt: latest(members.map((member) => member.scannedAt)),
    allUploaded: members.every((member) => member.hasContent),
  };
}
