/**
 * Reads a whole result set page by page, exactly as SPEC §4.3 rule 2 says: the same sortBy and
 * sortDirection on every page, offset advanced by the number of documents returned, stop when
 * the offset reaches total or a page comes back empty.
 */
import type { DocumentDto, SearchBody, SearchResponse, SortField } from '../../../shared/schemas.js';

/**
 * The search filters the UI sends. shared/schemas.ts builds sortBy from a mapped array, which
 * typebox's Static turns into `undefined`; this type states the real wire shape and toSearchBody
 * is the one place that bridges the two.
 */
export type DocumentQuery = Omit<SearchBody, 'offset' | 'limit' | 'sortBy' | 'sortDirection'> & { sortBy?: SortField; sortDirection?: 'ASC' | 'DESC' };

export function toSearchBody(query: DocumentQuery & { offset?: number; limit?: number }): SearchBody {
  return query as unknown as SearchBody;
}

export type SearchPage = (body: SearchBody) => Promise<SearchResponse>;

export interface WalkProgress {
  documents: DocumentDto[];
  total: number;
  done: boolean;
}

export const WALK_PAGE_SIZE = 1000;

export async function walkSearch(
  search: SearchPage,
  query: DocumentQuery,
  onPage: (page: DocumentDto[], total: number) => void,
  options: { pageSize?: number; firstPageSize?: number; signal?: { cancelled: boolean } } = {},
): Promise<{ total: number; count: number }> {
  const pageSize = options.pageSize ?? WALK_PAGE_SIZE;
  let offset = 0;
  let total = Number.POSITIVE_INFINITY;
  let limit = options.firstPageSize ?? pageSize;
  while (offset < total) {
    const response = await search(toSearchBody({ ...query, offset, limit }));
    if (options.signal?.cancelled) break;
    total = response.total;
    if (response.documents.length === 0) break;
    offset += response.documents.length;
    onPage(response.documents, total);
    limit = pageSize;
  }
  return { total: Number.isFinite(total) ? total : 0, count: offset };
}
