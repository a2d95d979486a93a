/**
 * One file's way to the server (DESIGN §4): create → upload → verify, each step persisted in the
 * journal before it is acted on. A run starts from whatever the journal row says (a fresh file, a
 * retry, or a step a crash interrupted) and ends in a resting state: synced, waiting, queued
 * (changed on disk) or failed. Nothing is deleted remotely, ever.
 */
import { lstat, open } from 'node:fs/promises';
import path from 'node:path';
import type { DocumentDto, SearchBody } from '../../../shared/schemas.js';
import { DICOM_HEAD_BYTES, typeFromNameAndHead } from '../../../shared/dicom.js';
import { fileTypeFromName, foldKey } from '../../../shared/names.js';
import { ApiProblemError } from '../api/api-errors.js';
import { retryDelayMs, type BackoffPolicy } from '../api/backoff.js';
import type { DocumentApi } from '../api/document-api.js';
import { classifyFailure, EmptyFileError, LinkNotFollowedError, NameTakenError, VerificationError } from './failure.js';
import type { FilePatch, FileRecord, HistoryNote } from '../journal/file-record.js';
import { DELETED_LOCALLY_CODE } from '../journal/file-record.js';
import { DEFAULT_SETTLE_MS, type FileStat } from '../watch/stability.js';
import type { FileState } from '../journal/states.js';
import { SentBytesHash } from './hash.js';
import { fileStamp, FileTooLargeError, sameStamp, stampIsQuiet, stampsAreLocal, type FileStamp } from './upload-check.js';

/** The journal as the pipeline uses it. */
export interface PipelineJournal {
  get(id: number): FileRecord | undefined;
  transition(id: number, state: FileState, patch?: FilePatch, note?: HistoryNote): FileRecord;
}

export interface PipelinePair {
  id: string;
  folder: string;
  patientId: string;
}

export interface PipelineDeps {
  journal: PipelineJournal;
  api: DocumentApi;
  backoff: BackoffPolicy;
  now: () => number;
  stat: (absolutePath: string) => Promise<FileStat | undefined>;
  hash: (absolutePath: string, signal?: AbortSignal) => Promise<string>;
  /** The file's stamp (size, times, file id), undefined when it is gone; fileStamp by default. */
  stamp?: (absolutePath: string) => Promise<FileStamp | undefined>;
  random?: () => number;
  /** How long a file must stay unchanged before it is uploaded (the watcher's settle time). */
  settleMs?: number;
  onProgress?: (fileId: number, bytesDone: number) => void;
}

export type PipelineOutcome =
  | { result: 'synced'; record: FileRecord }
  | { result: 'waiting'; record: FileRecord; offline: boolean; unavailable: boolean }
  | { result: 'queued'; record: FileRecord }
  | { result: 'failed'; record: FileRecord }
  | { result: 'stopped'; record: FileRecord };

export const DELETED_LOCALLY_MESSAGE = 'The file was deleted from the folder before it was uploaded. Nothing was deleted on the server.';

/** Runs one file from its journal state to a resting state; never throws for a failure of the file. */
export async function syncFile(fileId: number, pair: PipelinePair, deps: PipelineDeps, signal?: AbortSignal): Promise<PipelineOutcome> {
  const run = new FileRun(fileId, pair, deps, signal);
  try {
    return await run.execute();
  } catch (error) {
    return run.settleFailure(error);
  }
}

class FileRun {
  private readonly absolutePath: string;
  /** The remote document as last seen in this run. */
  private remote: DocumentDto | null = null;
  private storageUrl: string | null = null;
  private createdNow = false;
  private createdId: string | null = null;
  /** The row as this run last wrote it (every write returns it): the hot path reads it no more. */
  private current: FileRecord;

  constructor(
    private readonly fileId: number,
    private readonly pair: PipelinePair,
    private readonly deps: PipelineDeps,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.current = this.record();
    this.absolutePath = path.join(pair.folder, ...this.current.relativePath.split('/'));
  }

  async execute(): Promise<PipelineOutcome> {
    // A link found by the watch failed at once; a retry of that row must not upload its target.
    if (await isLink(this.absolutePath)) throw new LinkNotFollowedError(this.current.relativePath);
    const local = await this.deps.stat(this.absolutePath);
    if (!local) return this.missing();
    let record = this.current;
    if (local.size !== record.size || local.mtimeMs !== record.mtimeMs) {
      // Changed since the row was written (e.g. re-exported while the engine was stopped mid-upload):
      // nothing begun for the old bytes may be continued with the new ones.
      await this.abandonUpload(record);
      return this.requeue({ size: local.size, mtimeMs: local.mtimeMs }, 'changed on disk');
    }
    // Nothing is created or replaced for it: an empty version over a scan would hide the scan.
    if (local.size === 0) throw new EmptyFileError('the file has 0 bytes');
    // Before anything is created: a 413 after the create would leave an empty document behind.
    await this.checkUploadLimit(local.size);
    if (!record.documentId) record = await this.create(record, local);
    if (!this.createdNow) {
      let remote = await this.fetchRemote(record.documentId!);
      if (!remote) {
        // Deleted on the server by someone else: the local file is still here, so it goes up again
        // as a new document, in this run (the old id is forgotten first, so a crash cannot revive it).
        this.requeue({ documentId: null, remoteSha256: null, remoteVersion: null }, 'the document is no longer on the server');
        record = await this.create(this.current, local);
        remote = this.createdNow ? null : this.remote;
      }
      if (remote) {
        this.remote = remote;
        this.storageUrl = remote.storageUrl;
      }
      if (remote?.hasContent && remote.sha256) {
        const localSha = await this.deps.hash(this.absolutePath, this.signal);
        if (localSha === remote.sha256) {
          record = this.move('verifying', { sha256: localSha, size: local.size, mtimeMs: local.mtimeMs, remoteSha256: remote.sha256, remoteVersion: remote.version });
          return this.verify(record, local);
        }
        // A new version only replaces content this file put there (the If-Match the journal kept);
        // anything else is another scan, e.g. another workstation's upload that won the race for
        // a placeholder both had adopted.
        if (remote.sha256 !== record.remoteSha256) {
          throw new NameTakenError(`document ${remote.id} holds content (sha256 ${remote.sha256}) this file did not upload`);
        }
      }
    }
    return this.upload(local);
  }

  /** Refuses a file over the server's upload limit (asked again before refusing: IT may have raised it). */
  private async checkUploadLimit(size: number): Promise<void> {
    const api = this.deps.api;
    if (!api.uploadLimit) return;
    // Unknown (a server that does not say, or no answer) is no reason to hold the file: its 413 still counts.
    const known = await api.uploadLimit().catch(() => null);
    if (known === null || size <= known) return;
    const limit = await api.uploadLimit(true).catch(() => null);
    if (limit !== null && size > limit) throw new FileTooLargeError(size, limit);
  }

  private async create(record: FileRecord, local: FileStat): Promise<FileRecord> {
    this.move('creating', { size: local.size, mtimeMs: local.mtimeMs });
    try {
      const created = await this.deps.api.createDocument(this.pair.patientId, record.fileName, record.remotePath, scanTimeOf(local));
      this.createdNow = true;
      this.storageUrl = created.storageUrl;
      // Written together with the move to `uploading` (one transaction fewer per file): a crash
      // before that write re-creates, gets 409 and adopts this very document.
      this.createdId = created.id;
      return { ...this.current, documentId: created.id, remoteSha256: null, remoteVersion: 0 };
    } catch (error) {
      if (!(error instanceof ApiProblemError) || error.status !== 409) throw error;
      // Already there: a crash after the server created it, another workstation, or a local file
      // whose name differs only in case. Adopt it only when it matches (checkAdoptable).
      const existing = await this.findExisting(record);
      if (!existing) throw error;
      await this.checkAdoptable(existing, local);
      this.remote = existing;
      this.storageUrl = existing.storageUrl;
      this.createdNow = false;
      return this.move('creating', { documentId: existing.id, remoteSha256: existing.sha256, remoteVersion: existing.version }, { event: 'adopted', detail: `document ${existing.id}` });
    }
  }

  private async upload(local: FileStat): Promise<PipelineOutcome> {
    const ifMatch = this.remote?.hasContent ? this.remote.sha256 : null;
    const record = this.move('uploading', {
      size: local.size,
      mtimeMs: local.mtimeMs,
      remoteSha256: ifMatch,
      bytesDone: 0,
      ...(this.createdId ? { documentId: this.createdId, remoteVersion: 0 } : {}),
    });
    // Taken before the first byte is read: the bytes are hashed as they are sent, and an unchanged
    // stamp afterwards says they are the bytes on disk, without reading the file a second time.
    const stampOf = this.deps.stamp ?? fileStamp;
    const before = await stampOf(this.absolutePath);
    if (before && (before.size !== local.size || before.mtimeMs !== local.mtimeMs)) {
      await this.abandonUpload(record);
      return this.requeue({ size: before.size, mtimeMs: before.mtimeMs, uploadUrl: null }, 'changed on disk');
    }
    const sent = new SentBytesHash(local.size);
    const uploaded = await this.deps.api.upload({
      patientId: this.pair.patientId,
      storageUrl: this.storageUrl!,
      documentId: record.documentId!,
      filePath: this.absolutePath,
      fileName: record.fileName,
      fileType: await fileTypeOf(record.fileName, this.absolutePath),
      size: local.size,
      mtimeMs: local.mtimeMs,
      stamp: before,
      hash: sent,
      ifMatch,
      scannedAt: scanTimeOf(local),
      signal: this.signal,
      resumeUrl: record.uploadUrl,
      onResumeUrl: (url) => {
        this.move('uploading', { uploadUrl: url });
      },
      onProgress: (bytes) => this.deps.onProgress?.(this.fileId, bytes),
    });
    const server = uploaded ?? (await this.fetchRemote(record.documentId!));
    const after = await stampOf(this.absolutePath);
    const serverSha = server?.sha256 ?? null;
    const remote = { remoteSha256: serverSha, remoteVersion: server?.version ?? null };
    if (!after) {
      // Deleted from the folder once all its bytes were sent (an open file reads on after its
      // name is gone): the server holds the whole scan, so it is verified, not reported lost.
      return this.verify(this.move('verifying', { sha256: serverSha, bytesDone: local.size, ...remote }), local);
    }
    if (after.size !== local.size || after.mtimeMs !== local.mtimeMs) {
      return this.requeue({ ...remote, size: after.size, mtimeMs: after.mtimeMs }, 'changed during upload');
    }
    // The bytes the server holds must be the bytes on disk now. The hash of the bytes as sent is
    // that hash when the stamp did not move during the upload (and the file had been left alone
    // before it, on a disk of this computer); else the file is hashed again, while the
    // verification search is under way (neither waits for the other). The file is synced only
    // when both agree. `verifying` is written before either starts.
    const sentSha = before && sameStamp(before, after) && stampIsQuiet(before) && (await stampsAreLocal(this.absolutePath)) ? sent.digest() : null;
    const localSha = sentSha !== null ? Promise.resolve(sentSha) : undefined;
    if (serverSha === null) {
      // Nothing to compare the hash with but the row: hash first, as the crash-resume path does.
      const sha = await (localSha ?? this.deps.hash(this.absolutePath, this.signal));
      return this.verify(this.move('verifying', { sha256: sha, bytesDone: local.size, ...remote }), local);
    }
    const verifying = this.move('verifying', { sha256: serverSha, bytesDone: local.size, ...remote });
    return this.verify(verifying, local, localSha ?? this.deps.hash(this.absolutePath, this.signal));
  }

  /**
   * SPEC §4.3 rule 4: search by id with hasContent, limit 1; the size (and sha256) must match.
   * With `rehash` (right after an upload), the file's hash taken now must match what the server
   * holds, else the file changed during the upload and goes up again.
   */
  private async verify(record: FileRecord, local: FileStat, rehash?: Promise<string>): Promise<PipelineOutcome> {
    const search = this.deps.api.search(this.pair.patientId, { id: [record.documentId!], hasContent: true, offset: 0, limit: 1 });
    let localSha = record.sha256;
    if (rehash) {
      // Both settle before anything is decided (a rejected search must not go unobserved).
      const [hashed] = await Promise.allSettled([rehash, search]);
      if (hashed.status === 'rejected') throw hashed.reason;
      localSha = hashed.value;
      if (record.remoteSha256 !== localSha) {
        return this.requeue({}, 'changed during upload');
      }
    }
    const result = await search;
    const found = result.documents[0];
    if (!found) throw new VerificationError('the server does not list the document with content yet');
    if (found.fileSize !== local.size) throw new VerificationError(`the server holds ${found.fileSize ?? 0} bytes, the file has ${local.size}`);
    if (found.sha256 && localSha && found.sha256 !== localSha) throw new VerificationError('the server holds different content than the file');
    const synced = this.move('synced', { sha256: localSha, remoteSha256: found.sha256 ?? localSha, remoteVersion: found.version, bytesDone: local.size });
    return { result: 'synced', record: synced };
  }

  /**
   * A placeholder without content may be adopted (our own create whose answer a crash or a dropped
   * connection lost; the server refuses a second upload without If-Match, so a race for it cannot
   * replace a scan). A document with content is adopted only when it holds these very bytes.
   */
  private async checkAdoptable(existing: DocumentDto, local: FileStat): Promise<void> {
    if (!existing.hasContent) return;
    const taken = (reason: string) => new NameTakenError(`document ${existing.id} (${existing.path}/${existing.fileName}) already exists: ${reason}`);
    if (existing.fileSize !== local.size) throw taken(`it holds ${existing.fileSize ?? 0} bytes, this file has ${local.size}`);
    const localSha = await this.deps.hash(this.absolutePath, this.signal);
    if (existing.sha256 !== localSha) throw taken('it holds different content');
  }

  private async abandonUpload(record: FileRecord): Promise<void> {
    if (record.uploadUrl) await this.deps.api.abandonUpload?.(record.uploadUrl, this.signal);
  }

  /** The document with exactly this path and name (search compares case-insensitively, so do we). */
  private async findExisting(record: FileRecord): Promise<DocumentDto | null> {
    const wantedPath = foldKey(record.remotePath);
    const wantedName = foldKey(record.fileName);
    const body: SearchBody = { path: record.remotePath, fileName: record.fileName, offset: 0, limit: 100 };
    for (let offset = 0; ; ) {
      const page = await this.deps.api.search(this.pair.patientId, { ...body, offset });
      const match = page.documents.find((document) => foldKey(document.path) === wantedPath && foldKey(document.fileName) === wantedName);
      if (match) return match;
      offset += page.documents.length;
      if (page.documents.length === 0 || offset >= page.total) return null;
    }
  }

  private async fetchRemote(documentId: string): Promise<DocumentDto | null> {
    const result = await this.deps.api.search(this.pair.patientId, { id: [documentId], offset: 0, limit: 1 });
    return result.documents[0] ?? null;
  }

  async settleFailure(error: unknown): Promise<PipelineOutcome> {
    const record = this.record();
    if (error instanceof FileTooLargeError) {
      const failed = this.rest('failed', { errorCode: 'TOO_LARGE', errorMessage: error.plainMessage, errorDetail: error.message, attempts: record.attempts + 1 });
      return { result: 'failed', record: failed };
    }
    const verdict = classifyFailure(error);
    switch (verdict.kind) {
      case 'stopped':
        return { result: 'stopped', record: this.rest('waiting', { nextAttemptAt: this.deps.now() }) };
      case 'missing':
        return this.missing();
      case 'changed': {
        // Kept with the hold, so the next run waits again only if the file moves on meanwhile.
        const now = await this.deps.stat(this.absolutePath).catch(() => undefined);
        return this.requeue(now ? { size: now.size, mtimeMs: now.mtimeMs } : {}, verdict.detail);
      }
      case 'permanent':
        return {
          result: 'failed',
          record: this.rest('failed', { errorCode: verdict.code, errorMessage: verdict.message, errorDetail: verdict.detail, attempts: record.attempts + 1 }),
        };
      case 'retry': {
        const attempts = record.attempts + 1;
        const delay = retryDelayMs(this.deps.backoff, attempts, verdict.retryAfterSeconds, this.deps.random);
        const waiting = this.rest('waiting', {
          attempts,
          nextAttemptAt: this.deps.now() + delay,
          errorCode: verdict.code,
          errorMessage: verdict.message,
          errorDetail: verdict.detail,
        });
        return { result: 'waiting', record: waiting, offline: verdict.offline, unavailable: verdict.unavailable };
      }
    }
  }

  private missing(): PipelineOutcome {
    const record = this.rest('failed', { errorCode: DELETED_LOCALLY_CODE, errorMessage: DELETED_LOCALLY_MESSAGE, errorDetail: null });
    return { result: 'failed', record };
  }

  /**
   * The file changed: back to the queue, due only after a settle time (the rule new files follow),
   * so a file still being written is not uploaded again at once. The next run compares the file
   * with the size and mtime kept here and waits again if it moved on.
   */
  private requeue(patch: FilePatch, detail: string): PipelineOutcome {
    const nextAttemptAt = this.deps.now() + (this.deps.settleMs ?? DEFAULT_SETTLE_MS);
    const record = this.rest('queued', { ...patch, nextAttemptAt }, { event: 'queued', detail });
    return { result: 'queued', record };
  }

  /**
   * A resting state. A row already `failed` or `synced` stays as is; a row already `queued` takes
   * the patch (what this run learned must not be lost: the row would be due again at once with
   * the stale fields) but no second history entry.
   */
  private rest(state: FileState, patch: FilePatch, note?: HistoryNote): FileRecord {
    const current = this.record();
    if (current.state === state && (state === 'failed' || state === 'synced')) return current;
    return this.move(state, patch, current.state === state ? undefined : note);
  }

  private move(state: FileState, patch: FilePatch, note?: HistoryNote): FileRecord {
    this.current = this.deps.journal.transition(this.fileId, state, patch, note);
    return this.current;
  }

  private record(): FileRecord {
    const record = this.deps.journal.get(this.fileId);
    if (!record) throw new Error(`file ${this.fileId} is not in the journal`);
    return record;
  }
}

/**
 * The file's scan time as the server keeps it (docs/api.md "Scan times"): its mtime as it was when
 * the file was found stable (the run requeues a file whose mtime moved since), so a scan written
 * yesterday and synced today is dated yesterday. None for an mtime before 1980: a file whose time
 * was lost (1 January 1970) was not scanned then.
 */
function scanTimeOf(local: FileStat): string | undefined {
  const at = new Date(Math.trunc(local.mtimeMs));
  return Number.isNaN(at.getTime()) || at.getUTCFullYear() < 1980 || at.getUTCFullYear() > 9999 ? undefined : at.toISOString();
}

async function isLink(absolutePath: string): Promise<boolean> {
  try {
    return (await lstat(absolutePath)).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * The type a file is uploaded as: its extension's, or DCM for a file without a known extension
 * whose header is DICOM Part-10 (CBCT slices named IM1, IM2, …). A header that cannot be read
 * leaves the name's type: the upload itself then says what is wrong.
 */
async function fileTypeOf(fileName: string, absolutePath: string): Promise<string> {
  const byName = fileTypeFromName(fileName);
  if (byName !== 'BIN') return byName;
  let handle;
  try {
    handle = await open(absolutePath, 'r');
    const head = new Uint8Array(DICOM_HEAD_BYTES);
    const { bytesRead } = await handle.read(head, 0, DICOM_HEAD_BYTES, 0);
    return typeFromNameAndHead(byName, head.subarray(0, bytesRead));
  } catch {
    return byName;
  } finally {
    await handle?.close();
  }
}
