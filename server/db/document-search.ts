/**
 * What both stores' document search read the same way (sqlite/document-repository.ts,
 * postgres/document-repository.ts): which column a sort field orders by, and which filters a
 * query narrows the search with. The WHERE clauses and their parameters differ by dialect and stay
 * with each store.
 */
import type { SortField } from '../../shared/schemas.js';
import type { DocumentQuery } from './types.js';

/** A document's scan date: when the file was made, or for one no client dated, its last upload (docs/api.md "Scan times"). */
export const SCAN_DATE = 'COALESCE(scanned_at, last_modified_at)';

export const SORT_COLUMNS: Record<SortField, string> = {
  lastModifiedAt: 'last_modified_at',
  fileName: 'name_key',
  fileSize: 'file_size',
  fileType: 'file_type',
  path: 'path_key',
  scannedAt: SCAN_DATE,
};

/** A non-empty id list replaces every other filter (SPEC §4.3). */
export function searchesByIds(query: DocumentQuery): query is DocumentQuery & { ids: string[] } {
  return query.ids !== undefined && query.ids.length > 0;
}

/** A folder filter narrows the search ('/' is the whole patient, as no path is). */
export function filtersFolder(query: DocumentQuery): query is DocumentQuery & { pathKey: string } {
  return query.pathKey !== undefined && query.pathKey !== '/';
}

/** A scan date range narrows the search. */
function filtersScanDate(query: DocumentQuery): boolean {
  return query.scannedFrom !== undefined || query.scannedTo !== undefined;
}

/** The search is of a whole patient's documents, at most by content state: its total is the count the triggers keep. */
export function searchesWholePatient(query: DocumentQuery): boolean {
  return !searchesByIds(query) && !filtersFolder(query) && !query.nameContains && query.fileType === undefined && !filtersScanDate(query);
}
