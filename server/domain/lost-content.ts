/**
 * Making the record honest after `verify` found stored files missing or damaged (admin `verify
 * --mark-lost`): each such version is marked lost, and a document whose current content it was
 * goes back to having none — no `hasContent`, no download or thumbnail link — keeping its id,
 * name, path and earlier versions, so that the workstation that still has the scan uploads it
 * again as the next version (and an integrator hears `document.lost`).
 *
 * One transaction per document, each a compare-and-set on the version and storage key, so it runs
 * beside a server taking uploads: a version uploaded meanwhile is never touched. Running it again
 * changes nothing. Each version marked gets its audit entry (`mark-lost`, `mark-restored`) in the
 * same transaction: a data-protection officer sees who declared a patient's file lost or back, and when.
 */
import { randomUUID } from 'node:crypto';
import type { RestorableFile, Store } from '../db/types.js';
import type { DocumentService } from './document-service.js';
import { outboxEvent } from './events.js';

export interface LostFile {
  documentId: string;
  version: number;
  key: string;
  problem: string;
  /** The file is not there at all (else it is there with other bytes). */
  missing?: boolean;
}

/** One run of a mark (`verify --mark-lost` or `--mark-restored`). */
export interface MarkRun {
  /** Shared by the run's audit entries (their requestId) and events (their operationId); a new UUID when left out. */
  id?: string;
  /** Who marked, as the audit entries' detail names them: `by` and, when known, the operating-system account. */
  operator?: { by: string; osUser?: string };
  now?: () => Date;
}

const ADMIN_CLI = { by: 'admin CLI' };

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

export async function markContentLost(store: Store, documents: DocumentService, lost: readonly LostFile[], run: MarkRun = {}): Promise<MarkLostReport> {
  const report: MarkLostReport = { versions: 0, documents: 0 };
  const operationId = run.id ?? randomUUID();
  const now = run.now ?? (() => new Date());
  for (const file of lost) {
    const at = now().toISOString();
    const document = await store.content.find(file.documentId);
    const recorded = await store.content.version(file.documentId, file.version);
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
    const audit = {
      at,
      requestId: operationId,
      detail: {
        ...(run.operator ?? ADMIN_CLI),
        fileSize: recorded?.fileSize ?? null,
        sha256: recorded?.sha256 ?? null,
        found: file.missing === true ? 'missing' : 'other bytes',
        reason: file.problem,
      },
    };
    const changed = await store.content.markLost({ documentId: file.documentId, version: file.version, contentKey: file.key, at, reason: file.problem }, events, audit);
    if (changed.version) report.versions += 1;
    if (changed.current) report.documents += 1;
  }
  return report;
}

export interface MarkRestoredReport {
  /** Versions no longer marked lost now. */
  versions: number;
  /** Of those, documents that have this content again (it was still their version, nothing uploaded since). */
  documents: number;
  /**
   * Each file and what became of it: `current`, its document has this content again; `earlier`, an
   * intact earlier version again (the document has a newer one, or was deleted); `unchanged`, no
   * longer marked lost before this run (another run, meanwhile).
   */
  files: Array<RestorableFile & { outcome: 'current' | 'earlier' | 'unchanged' }>;
}

/**
 * The way back (admin `verify --mark-restored`): a version marked lost whose stored file is there
 * again with its recorded size and sha256 (IT restored the content folder from a backup) is no
 * longer marked lost. When it is still the document's version and nothing was uploaded since, the
 * document has that content again — `hasContent`, download and thumbnail links, found by
 * `hasContent` searches — and integrators hear `document.restored`; when a newer version was
 * uploaded meanwhile, it is an intact earlier version again and the document is not changed.
 *
 * Like markContentLost: one compare-and-set transaction per document, beside a running server;
 * running it again changes nothing.
 */
export async function markContentRestored(store: Store, documents: DocumentService, restorable: readonly RestorableFile[], run: MarkRun = {}): Promise<MarkRestoredReport> {
  const report: MarkRestoredReport = { versions: 0, documents: 0, files: [] };
  const operationId = run.id ?? randomUUID();
  const now = run.now ?? (() => new Date());
  for (const file of restorable) {
    const at = now().toISOString();
    const document = await store.content.find(file.documentId);
    const stored = document ? await store.content.version(document.id, file.version) : undefined;
    const events =
      document && stored && !document.hasContent && document.version === file.version && document.contentKey === null && stored.contentKey === file.key && stored.sha256 === file.sha256
        ? [
            outboxEvent('document.restored', {
              patientId: document.patientId,
              organizationId: document.organizationId,
              operationId,
              occurredAt: at,
              data: {
                document: documents.toEventData({ ...document, hasContent: true, fileSize: stored.fileSize, sha256: stored.sha256, contentKey: stored.contentKey, contentType: stored.contentType, fileType: stored.fileType }),
                version: file.version,
                fileSize: stored.fileSize,
                sha256: stored.sha256,
              },
            }),
          ]
        : [];
    const audit = { at, requestId: operationId, detail: { ...(run.operator ?? ADMIN_CLI), fileSize: file.fileSize, sha256: file.sha256 } };
    const changed = await store.content.markRestored({ documentId: file.documentId, version: file.version, contentKey: file.key, sha256: file.sha256 }, events, audit);
    if (changed.version) report.versions += 1;
    if (changed.current) report.documents += 1;
    report.files.push({ ...file, outcome: changed.current ? 'current' : changed.version ? 'earlier' : 'unchanged' });
  }
  return report;
}
