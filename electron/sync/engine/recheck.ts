/**
 * Synced files checked against the server again, now and then (the engine runs it at start and
 * every few hours): a disk fault or a partial restore on the server can take away a scan that was
 * verified once, and the workstation may be the only place that still has it.
 *
 * Cheap for 50,000 synced files: the journal is walked in id order, 30 rows at a time, one search
 * by ids each (SPEC §4.3: at most 30 ids, and ids take precedence over every other filter); a file
 * the server still holds as it was is not written, published or touched in any way.
 */
import path from 'node:path';
import type { DocumentDto } from '../../../shared/schemas.js';
import { GONE_FROM_SERVER_MESSAGE, PLAIN_MESSAGES } from '../../../shared/bridge-errors.js';
import type { DocumentApi } from '../api/document-api.js';
import { LOST_ON_SERVER_CODE, type FileRecord } from '../journal/file-record.js';
import type { PipelineJournal, PipelinePair } from '../upload/pipeline.js';
import type { FileStat } from '../watch/stability.js';

/** How often synced files are checked again by default. */
export const RECHECK_MS = 4 * 60 * 60 * 1000;
/** SPEC §4.3's limit of ids in one search. */
export const RECHECK_BATCH = 30;

export { GONE_FROM_SERVER_MESSAGE };

export interface RecheckJournal extends PipelineJournal {
  syncedAfter(pairId: string, afterId: number, limit: number): FileRecord[];
  lostAfter(pairId: string, afterId: number, limit: number): FileRecord[];
  markDeletedLocally(pairId: string, relativePath: string): FileRecord | undefined;
}

export interface RecheckDeps {
  journal: RecheckJournal;
  api: DocumentApi;
  stat: (absolutePath: string) => Promise<FileStat | undefined>;
  now: () => number;
  /** True once the engine stops (or the pass should end early). */
  stopped: () => boolean;
}

export interface RecheckCounts {
  checked: number;
  /** Back in the queue: uploaded again from the folder. */
  requeued: number;
  /** Failed with a reason: gone from the server and from the folder, or the document deleted there. */
  failed: number;
  /** Failed as lost before, and now synced again: IT restored the server's stored file (the very bytes). */
  restored: number;
}

type Finding = 'kept' | 'lost' | 'older' | 'gone';

/**
 * What the server's answer says about a synced row: `lost` (the document is there without content:
 * its stored file was lost), `older` (an older version is current again: a restore from before this
 * file's upload), `gone` (no such document: deleted, or restored from before it existed) or `kept`.
 * Another, newer version (another workstation's upload) is no loss.
 */
export function judge(record: FileRecord, remote: DocumentDto | undefined): Finding {
  if (!remote) return 'gone';
  if (!remote.hasContent) return 'lost';
  const expected = record.remoteSha256 ?? record.sha256;
  if (remote.sha256 === expected && remote.fileSize === record.size) return 'kept';
  if (record.remoteVersion !== null && (remote.version ?? 0) < record.remoteVersion) return 'older';
  return 'kept';
}

/** Checks every synced file of one pair; throws what a search throws (the engine decides what it means). */
export async function recheckPair(pair: PipelinePair, deps: RecheckDeps): Promise<RecheckCounts> {
  const counts: RecheckCounts = { checked: 0, requeued: 0, failed: 0, restored: 0 };
  for (let afterId = 0; !deps.stopped(); ) {
    const rows = deps.journal.syncedAfter(pair.id, afterId, RECHECK_BATCH);
    if (rows.length === 0) break;
    afterId = rows[rows.length - 1]!.id;
    const ids = rows.map((row) => row.documentId!);
    const page = await deps.api.search(pair.patientId, { id: ids, hasContent: true, offset: 0, limit: RECHECK_BATCH });
    const byId = new Map(page.documents.map((document) => [document.id.toLowerCase(), document]));
    for (const row of rows) {
      counts.checked += 1;
      const remote = byId.get(row.documentId!.toLowerCase());
      const finding = judge(row, remote);
      if (finding === 'kept') continue;
      const outcome = await settle(pair, row, finding, remote, deps);
      if (outcome) counts[outcome] += 1;
    }
  }
  await recoverRestored(pair, deps, counts);
  return counts;
}

/**
 * Scans failed as lost on the server and gone from the folder (nothing here to upload): when IT has
 * put the server's stored file back (`verify --mark-restored` after a restore from a backup), the
 * search shows the document with these very bytes again, and the file is synced again — the same
 * proof a finished upload gets. Anything else (still lost, another version, deleted) leaves it failed.
 */
async function recoverRestored(pair: PipelinePair, deps: RecheckDeps, counts: RecheckCounts): Promise<void> {
  for (let afterId = 0; !deps.stopped(); ) {
    const rows = deps.journal.lostAfter(pair.id, afterId, RECHECK_BATCH);
    if (rows.length === 0) return;
    afterId = rows[rows.length - 1]!.id;
    const page = await deps.api.search(pair.patientId, { id: rows.map((row) => row.documentId!), hasContent: true, offset: 0, limit: RECHECK_BATCH });
    const byId = new Map(page.documents.map((document) => [document.id.toLowerCase(), document]));
    for (const row of rows) {
      counts.checked += 1;
      const remote = byId.get(row.documentId!.toLowerCase());
      if (!remote?.hasContent || remote.sha256 !== (row.remoteSha256 ?? row.sha256) || remote.fileSize !== row.size) continue;
      // Changed meanwhile (copied back into the folder: queued by the watcher): the pipeline has it.
      const current = deps.journal.get(row.id);
      if (!current || current.state !== 'failed' || current.updatedAt !== row.updatedAt) continue;
      deps.journal.transition(row.id, 'synced', { remoteVersion: remote.version, remoteSha256: remote.sha256, lostAt: null }, { event: 'verified', detail: `the server has this scan again (document ${row.documentId}, version ${remote.version}): its stored file was restored` });
      counts.restored += 1;
    }
  }
}

async function settle(pair: PipelinePair, row: FileRecord, finding: Exclude<Finding, 'kept'>, remote: DocumentDto | undefined, deps: RecheckDeps): Promise<'requeued' | 'failed' | null> {
  const local = await deps.stat(path.join(pair.folder, ...row.relativePath.split('/')));
  // Changed meanwhile (the watcher queued it, say): the pipeline has it, nothing to decide here.
  const current = deps.journal.get(row.id);
  if (!current || current.state !== 'synced' || current.updatedAt !== row.updatedAt) return null;
  const documentId = row.documentId!;
  if (!local) {
    // Gone from the folder (the watch may not have seen it yet): a Retry has nothing to upload, and
    // the file coming back queues it again (journal observe).
    if (!current.deletedLocally) deps.journal.markDeletedLocally(current.pairId, current.relativePath);
    const what = finding === 'gone' ? `document ${documentId} is no longer on the server` : `document ${documentId} on the server no longer has this scan's content`;
    deps.journal.transition(row.id, 'failed', { errorCode: LOST_ON_SERVER_CODE, errorMessage: PLAIN_MESSAGES.LOST_ON_SERVER, errorDetail: `${what}, and the file is gone from the folder`, lostAt: deps.now() });
    return 'failed';
  }
  if (finding === 'gone') {
    // Deleted on the server on purpose (a misfiled scan) or lost in a restore: staff decide, it is not resurrected behind their back.
    deps.journal.transition(row.id, 'failed', { errorCode: 'NOT_FOUND', errorMessage: GONE_FROM_SERVER_MESSAGE, errorDetail: `document ${documentId} is not on the server any more`, lostAt: deps.now() });
    return 'failed';
  }
  const detail =
    finding === 'lost'
      ? `the server lost this scan's stored file (document ${documentId} has no content any more); uploading it again from the folder`
      : `the server holds an older version (${remote!.version}) than this scan's (${row.remoteVersion}), after a restore; uploading it again from the folder`;
  // `older`: the version the server holds now is the one a new version replaces (its If-Match).
  const known = finding === 'older' ? { remoteSha256: remote!.sha256, remoteVersion: remote!.version } : {};
  deps.journal.transition(row.id, 'queued', { nextAttemptAt: deps.now(), lostAt: deps.now(), ...known }, { event: 'queued', detail });
  return 'requeued';
}
