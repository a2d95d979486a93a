/**
 * Making the record honest after `verify` found stored files missing or damaged (admin `verify
 * --mark-lost`): each such version is marked lost, and a document whose current content it was
 * goes back to having none — no `hasContent`, no download or thumbnail link — keeping its id,
 * name, path and earlier versions, so that the workstation that still has the scan uploads it
 * again as the next version (and an integrator hears `document.lost`).
 *
 * One transaction per document, each a compare-and-set on the version and storage key, so it runs
 * beside a server taking uploads: a version uploaded meanwhile is never touched. Running it again
 * changes nothing.
 */
import { randomUUID } from 'node:crypto';
import type { Store } from '../db/types.js';
import type { DocumentService } from './documents.js';
import { outboxEvent } from './events.js';

export interface LostFile {
  documentId: string;
  version: number;
  key: string;
  problem: string;
}

export interface MarkLostReport {
  /** Versions marked lost now. */
  versions: number;
  /** Of those, documents whose current content it was: they wait for a new upload now. */
  documents: number;
}

/**
 * Refuses to mark most of the store lost at once: a content folder that is not there, empty, or
 * missing most of its files is far more often a disk not mounted (or the wrong data directory)
 * than that many scans lost. Returns the reason in one line, or null when it looks like real loss.
 */
export function looksUnmounted(input: { versions: number; problems: number; folderHasFiles: boolean; folder: string }): string | null {
  if (input.problems === 0) return null;
  if (!input.folderHasFiles) {
    return `the content folder ${input.folder} is missing or empty: is its disk mounted, and is PATIENT_DOCS_DATA_DIR the server's? Nothing was marked lost; if every file really is gone, run again with --force`;
  }
  if (input.problems >= 2 && input.problems * 2 > input.versions) {
    return `${input.problems} of ${input.versions} stored files are missing or damaged, more than half: is the content folder ${input.folder} the whole one (a disk not mounted, a restore not finished)? Nothing was marked lost; if they really are lost, run again with --force`;
  }
  return null;
}

export async function markContentLost(store: Store, documents: DocumentService, lost: readonly LostFile[], now: () => Date = () => new Date()): Promise<MarkLostReport> {
  const report: MarkLostReport = { versions: 0, documents: 0 };
  const operationId = randomUUID();
  for (const file of lost) {
    const at = now().toISOString();
    const document = await store.content.find(file.documentId);
    const events =
      document && document.hasContent && document.version === file.version && document.contentKey === file.key
        ? [
            outboxEvent('document.lost', {
              patientId: document.patientId,
              organizationId: document.organizationId,
              operationId,
              occurredAt: at,
              data: {
                document: documents.toEventData({ ...document, hasContent: false, fileSize: null, sha256: null, contentKey: null, contentType: null, thumbnailKey: null }),
                version: file.version,
                fileSize: document.fileSize,
                sha256: document.sha256,
                reason: file.problem,
              },
            }),
          ]
        : [];
    const changed = await store.content.markLost({ documentId: file.documentId, version: file.version, contentKey: file.key, at, reason: file.problem }, events);
    if (changed.version) report.versions += 1;
    if (changed.current) report.documents += 1;
  }
  return report;
}
