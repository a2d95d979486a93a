/**
 * Where document bytes live, behind an interface: the local disk today, an object store later.
 * Bytes arrive into a temp object (hashed and size-checked on the way) and become visible under
 * a key only by `commit`, which is atomic: a reader sees the whole object or nothing.
 */
import type { Readable } from 'node:stream';

/** Inclusive byte range, as HTTP Range counts. */
export interface ByteRange {
  start: number;
  end: number;
}

/** Bytes received but not committed; removed by `discard` or by garbage collection. */
export interface TempObject {
  readonly id: string;
  /** A local file holding the bytes, for tools that need a path. */
  readonly path: string;
  /** Every byte was fsync'ed as it was received (receive's writer did): commit need not sync the file again. */
  readonly durable?: boolean;
}

export interface ReceivedContent {
  temp: TempObject;
  size: number;
  /** Lowercase hex. */
  sha256: string;
}

export class SizeLimitError extends Error {
  override name = 'SizeLimitError';

  constructor(readonly limit: number) {
    super(`the content is larger than the limit of ${limit} bytes`);
  }
}

export interface GarbageReport {
  tempFiles: number;
  expiredUploads: number;
  orphanObjects: number;
}

export interface ContentStorage {
  /** Streams `source` into a new temp object; rejects with SizeLimitError past `maxBytes`, leaving nothing behind. */
  receive(source: Readable, maxBytes: number): Promise<ReceivedContent>;
  /** Makes a temp object durable under `key` (fsync unless it is already, rename, fsync of the folder). */
  commit(temp: TempObject, key: string): Promise<void>;
  discard(temp: TempObject): Promise<void>;
  /** Undoes `commit` (its record could not be written): the object becomes the temp object again. */
  uncommit(key: string, temp: TempObject): Promise<void>;
  /** Stores a small object atomically (thumbnails). */
  put(key: string, bytes: Buffer): Promise<void>;
  /** Undefined when the object does not exist. */
  size(key: string): Promise<number | undefined>;
  read(key: string, range?: ByteRange): Readable;
  /** A local file for the object, for renderers that need a path. */
  localPath(key: string): string;
  remove(key: string): Promise<void>;
  /** Removes temp files older than `tempOlderThanMs` and committed objects nothing refers to. */
  collectGarbage(options: { tempOlderThanMs: number; isReferenced?: (key: string) => Promise<boolean>; orphanOlderThanMs?: number }): Promise<Omit<GarbageReport, 'expiredUploads'>>;
}

/** A tus upload's state as the protocol needs it (tus 1.0 core, creation, expiration). */
export interface ResumableUpload {
  id: string;
  documentId: string;
  length: number;
  offset: number;
  /** Upload-Metadata, decoded. */
  metadata: Record<string, string>;
  /** The sha256 the client expects to replace (If-Match at creation), or null for a first upload. */
  ifMatch: string | null;
  createdBy: string;
  createdAt: string;
  expiresAt: string;
}

export class OffsetMismatchError extends Error {
  override name = 'OffsetMismatchError';
}

export class ChecksumMismatchError extends Error {
  override name = 'ChecksumMismatchError';
}

export interface ResumableStore {
  create(upload: Omit<ResumableUpload, 'offset'>): Promise<ResumableUpload>;
  /** Undefined for unknown and expired uploads. */
  get(id: string): Promise<ResumableUpload | undefined>;
  /**
   * Appends the bytes of `source` at `offset`. With a checksum, the chunk is kept only when
   * its sha256 matches (else ChecksumMismatchError and the offset stays). Without one, every
   * byte that arrived is kept, so an interrupted request still advances the offset.
   */
  append(id: string, offset: number, source: Readable, checksum?: Buffer): Promise<ResumableUpload>;
  /** Turns a complete upload into a temp object ready for commit, with its size and sha256. */
  complete(id: string): Promise<ReceivedContent>;
  /**
   * Gives a completed upload whose commit failed for a passing reason its bytes back, all but the
   * last one: a tus client that finds the offset at the length takes the upload as done, so it
   * must send that byte again, and that PATCH commits.
   */
  reopen(upload: ResumableUpload, received: ReceivedContent): Promise<void>;
  remove(id: string): Promise<void>;
  /** Removes uploads whose expiry has passed; returns how many. */
  removeExpired(now: Date): Promise<number>;
}
