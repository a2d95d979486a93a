/** Paging and sorting of a search when the request leaves them out (apart from schemas.ts, so code that needs only these does not load the schemas). */
export const SEARCH_DEFAULTS = { offset: 0, limit: 50, maxLimit: 1000, sortBy: 'lastModifiedAt', sortDirection: 'DESC' } as const;
