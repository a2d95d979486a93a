/**
 * A journal row as the engine sees it (FileRecord), the fields a caller may change with a state,
 * how a row is read from and written to the files table, and what a state implies for its row
 * (fields reset, the history entry written).
 */
import type { BridgeErrorCode } from '../../../shared/bridge-errors.js';
import type { FileState, HistoryEvent } from './states.js';

export interface FileRecord {
  id: number;
  pairId: string;
  /** Posix separators, spelled as on disk (the file is opened by it; see mapping.ts toRelativePath). */
  relativePath: string;
  remotePath: string;
  fileName: string;
  size: number;
  mtimeMs: number;
  /** SHA-256 of the bytes last hashed locally. */
  sha256: string | null;
  documentId: string | null;
  /** The content the server holds as current (the `If-Match` of the next version). */
  remoteSha256: string | null;
  remoteVersion: number | null;
  state: FileState;
  attempts: number;
  nextAttemptAt: number | null;
  errorCode: string | null;
  /** Plain language, shown to clinic staff. */
  errorMessage: string | null;
  /** The server's problem detail, shown on demand. */
  errorDetail: string | null;
  bytesDone: number;
  uploadUrl: string | null;
  deletedLocally: boolean;
  updatedAt: number;
  syncedAt: number | null;
  /**
   * When the re-check last found this file's scan missing on the server (its stored file lost, an
   * older version current again after a restore, or its document gone), so staff are told that
   * and not an old "synced" date, and its upload after that is said to be one. Null if never, or
   * since a newer scan from the folder replaced the one found missing.
   */
  lostAt: number | null;
}

export interface ObservedFile {
  size: number;
  mtimeMs: number;
  remotePath: string;
  fileName: string;
}

/** The fields a caller may change together with a state. */
export type FilePatch = Partial<
  Pick<
    FileRecord,
    | 'size'
    | 'mtimeMs'
    | 'sha256'
    | 'documentId'
    | 'remoteSha256'
    | 'remoteVersion'
    | 'attempts'
    | 'nextAttemptAt'
    | 'errorCode'
    | 'errorMessage'
    | 'errorDetail'
    | 'bytesDone'
    | 'uploadUrl'
    | 'lostAt'
  >
>;

/** Overrides the history entry a transition writes (e.g. `adopted` after a 409). */
export interface HistoryNote {
  event: HistoryEvent;
  detail?: string;
}

export interface HistoryEntry {
  at: number;
  event: HistoryEvent;
  version: number | null;
  sha256: string | null;
  detail: string | null;
}

export type RetryTarget = { pairId: string } | { fileId: number };

export const DELETED_LOCALLY_CODE: BridgeErrorCode = 'DELETED_LOCALLY';
/** A synced file the server no longer has, and that is gone from the folder too (see engine recheck). */
export const LOST_ON_SERVER_CODE: BridgeErrorCode = 'LOST_ON_SERVER';

export const FILE_COLUMNS = `id, pair_id AS pairId, relative_path AS relativePath, remote_path AS remotePath,
  file_name AS fileName, size, mtime_ms AS mtimeMs, sha256, document_id AS documentId,
  remote_sha256 AS remoteSha256, remote_version AS remoteVersion, state, attempts,
  next_attempt_at AS nextAttemptAt, error_code AS errorCode, error_message AS errorMessage,
  error_detail AS errorDetail, bytes_done AS bytesDone, upload_url AS uploadUrl,
  deleted_locally AS deletedLocally, updated_at AS updatedAt, synced_at AS syncedAt, lost_at AS lostAt`;

// The patch keys are a closed set mapped to fixed column names, so building the UPDATE from them
// cannot inject SQL.
export const PATCH_COLUMNS: Record<keyof FilePatch, string> = {
  size: 'size',
  mtimeMs: 'mtime_ms',
  sha256: 'sha256',
  documentId: 'document_id',
  remoteSha256: 'remote_sha256',
  remoteVersion: 'remote_version',
  attempts: 'attempts',
  nextAttemptAt: 'next_attempt_at',
  errorCode: 'error_code',
  errorMessage: 'error_message',
  errorDetail: 'error_detail',
  bytesDone: 'bytes_done',
  uploadUrl: 'upload_url',
  lostAt: 'lost_at',
};

export const FRESH_START: FilePatch = {
  attempts: 0,
  nextAttemptAt: null,
  errorCode: null,
  errorMessage: null,
  errorDetail: null,
  bytesDone: 0,
  uploadUrl: null,
};

export type RawFileRow = Omit<FileRecord, 'deletedLocally'> & { deletedLocally: number };

export function toRecord(row: RawFileRow): FileRecord {
  return { ...row, deletedLocally: row.deletedLocally === 1 };
}

/** Fields a state implies, so callers cannot forget them (the caller's patch still wins). */
export function automaticFields(state: FileState): FilePatch {
  switch (state) {
    case 'synced':
      return { attempts: 0, nextAttemptAt: null, errorCode: null, errorMessage: null, errorDetail: null, uploadUrl: null };
    case 'queued':
      return { ...FRESH_START };
    case 'creating':
    case 'uploading':
    case 'verifying':
    case 'failed':
      return { nextAttemptAt: null };
    case 'waiting':
      return {};
  }
}

export function defaultNote(current: FileRecord, state: FileState, patch: FilePatch): HistoryNote | undefined {
  if (state === current.state) return undefined;
  switch (state) {
    case 'failed':
      return { event: 'failed', detail: patch.errorMessage ?? current.errorMessage ?? undefined };
    case 'synced':
      return { event: 'verified' };
    case 'queued':
      return { event: 'queued' };
    case 'verifying':
      // Content the server already held before this upload makes it a new version.
      if (current.state !== 'uploading') return undefined;
      return current.remoteSha256 === null ? { event: 'uploaded' } : { event: 'version' };
    case 'creating':
    case 'uploading':
    case 'waiting':
      return undefined;
  }
}
