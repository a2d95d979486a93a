import { useEffect, useState } from 'react';
import type { DocumentDto } from '../../../../shared/schemas.js';
import { useBridge } from '../../bridge/context.js';
import { toBridgeError, type BridgeError } from '../../bridge/errors.js';
import { walkSearch, type DocumentQuery } from '../../documents/walk.js';

export type WalkQuery = DocumentQuery;

export interface DocumentWalk {
  documents: DocumentDto[];
  total: number;
  done: boolean;
  error: BridgeError | null;
}

/** A small first page so rows appear at once; then big pages until the set is complete. */
const FIRST_PAGE_SIZE = 100;

const EMPTY: DocumentWalk = { documents: [], total: 0, done: false, error: null };

/** Walks every page of a search (SPEC §4.3 rule 2) and exposes what has arrived so far. `null` walks nothing. */
export function useDocumentWalk(patientId: string | null, query: WalkQuery | null, generation: number): DocumentWalk {
  const client = useBridge();
  const [walk, setWalk] = useState<DocumentWalk>(EMPTY);
  const key = query ? JSON.stringify(query) : null;
  useEffect(() => {
    if (!patientId || key === null) {
      setWalk(EMPTY);
      return;
    }
    const signal = { cancelled: false };
    let collected: DocumentDto[] = [];
    setWalk(EMPTY);
    walkSearch(
      (body) => client.searchDocuments(patientId, body),
      JSON.parse(key) as WalkQuery,
      (page, total) => {
        collected = collected.concat(page);
        setWalk({ documents: collected, total, done: false, error: null });
      },
      { firstPageSize: FIRST_PAGE_SIZE, signal },
    ).then(
      ({ total }) => {
        if (!signal.cancelled) setWalk({ documents: collected, total, done: true, error: null });
      },
      (failure: unknown) => {
        if (!signal.cancelled) setWalk({ documents: collected, total: collected.length, done: true, error: toBridgeError(failure) });
      },
    );
    return () => {
      signal.cancelled = true;
    };
  }, [client, patientId, key, generation]);
  return walk;
}
