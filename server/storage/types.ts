/**
 * Where document bytes live, behind an interface: the local disk (local-disk.ts) or an
 * S3-compatible object store (s3.ts). Bytes arrive into a temp object (hashed and size-checked on
 * the way) and become readable under a key only by `commit` or `keep`, which are atomic: a reader
 * sees the whole object or nothing. A database record naming the key is what makes it visible.
 * Nothing here names a local path: whoever needs the bytes reads them.
 */
import type { Readable } from 'node:stream';
import { DICOM_HEAD_BYTES } from '../../shared/dicom.js';

/** How many first bytes of received content are kept with it, to tell a file's type by its header. */
export const HEAD_BYTES = DICOM_HEAD_BYTES;

/** Inclusive byte range, as HTTP Range counts. */
export interface ByteRange {
  start: number;
  end: number;
}

/** Bytes received but not committed; removed by `discard` or by garbage collection. */
export interface TempObject {
  /** Unique among temp objects (a UUID): committed keys take it in, so two attempts never share a key. */
  readonly id: string;
  /** Every byte was fsync'ed as it was received (receive's writer did): commit need not sync the file again. */
  readonly durable?: boolean;
}

export interface ReceivedContent {
  temp: TempObject;
  size: number;
  /** Lowercase hex. */
  sha256: string;
  /** The first HEAD_BYTES bytes (fewer for a shorter file). */
  head: Uint8Array;
  /**
   * The whole content as the chunks it arrived in, where the storage kept them while receiving a
   * file of at most KEPT_CONTENT_BYTES: its thumbnail is rendered from them, without reading the
   * stored object again.
   */
  content?: readonly Uint8Array[];
}

/** Received content up to this size is kept in memory for its thumbnail's render (ReceivedContent.content). */
export const KEPT_CONTENT_BYTES = 1024 * 1024;

export class SizeLimitError extends Error {
  override name = 'SizeLimitError';

  constructor(readonly limit: number) {
    super(`the content is larger than the limit of ${limit} bytes`);
  }
}

/** Whether a read failed because the object is not there (else it is there but unreadable, or the store is unreachable). */
export function isMissingObject(error: unknown): boolean {
  const fault = error as { code?: string; name?: string; $metadata?: { httpStatusCode?: number } } | null;
  return fault?.code === 'ENOENT' || fault?.code === 'ENOTDIR' || fault?.name === 'NoSuchKey' || fault?.name === 'NotFound' || fault?.$metadata?.httpStatusCode === 404;
}

export interface GarbageReport {
  tempFiles: number;
  expiredUploads: number;
  orphanObjects: number;
}

export interface ContentStorage {
  /** Where the objects are, for messages: a folder, or s3://bucket/prefix. */
  readonly location: string;
  /**
   * Other instances write the same objects (an object store): clean-up never takes a temp object
   * for abandoned before it is old enough, not even at start.
   */
  readonly shared: boolean;
  /** Writes, reads back and deletes a probe object; rejects with one line naming what failed. */
  check(): Promise<void>;
  /** Streams `source` into a new temp object; rejects with SizeLimitError past `maxBytes`, leaving nothing behind. */
  receive(source: Readable, maxBytes: number): Promise<ReceivedContent>;
  /** Makes a temp object durable and visible under exactly `key`, whole or not at all; the temp object is gone after. */
  commit(temp: TempObject, key: string): Promise<void>;
  /**
   * Like `commit`, but the store may keep the bytes where they were received rather than move them
   * under `key` (an object store, where a move copies every byte): resolves to the key that reads
   * them, which the record must name. Either way the record is what makes them visible: an object
   * no record names is collected (collectGarbage with isReferenced), and `uncommit`, `remove` and
   * `discard` work on the returned key as on one `commit` made.
   */
  keep(temp: TempObject, key: string): Promise<string>;
  discard(temp: TempObject): Promise<void>;
  /** Undoes `commit` (its record could not be written): the object becomes the temp object again. */
  uncommit(key: string, temp: TempObject): Promise<void>;
  /**
   * Stores a small object atomically (thumbnails). `durable: false` (admin migrate's batches of
   * files) leaves making it survive a power cut to `sync`, once for the whole batch.
   */
  put(key: string, bytes: Buffer, options?: { durable?: boolean }): Promise<void>;
  /**
   * Makes the objects put with `durable: false` durable, all at once. Absent where every write is
   * durable when it returns (an object store).
   */
  sync?(keys: readonly string[]): Promise<void>;
  /**
   * Gives the object a second name, the local file `file` (a hard link: no byte is copied), for a
   * reader that needs a file of its own (a thumbnail render): an object's bytes never change in
   * place, and the link keeps them readable when the object is removed or replaced meanwhile.
   * False when it cannot (the file on another file system, no hard links there, the object gone):
   * the caller copies the bytes instead. Absent where objects are not local files (an object store).
   */
  linkAs?(key: string, file: string): Promise<boolean>;
  /** Undefined when the object does not exist or cannot be read (read's error then says which). */
  size(key: string): Promise<number | undefined>;
  read(key: string, range?: ByteRange): Readable;
  remove(key: string): Promise<void>;
  /** Whether any committed object exists at all (a disk not mounted, a wrong bucket or prefix hold none). */
  hasObjects(): Promise<boolean>;
  /**
   * Removes temp files older than `tempOlderThanMs` and committed objects nothing refers to older
   * than `orphanOlderThanMs`. Bytes `keep` left where they were received count as temp files while
   * no record names them: they go only with `isReferenced` given, once older than `tempOlderThanMs`.
   */
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
  /**
   * Runs one request's writes to an upload as its only writer, on every instance: a PATCH's
   * `append` and, at the last byte, `complete` and the database commit after it; a DELETE's
   * `remove`. OffsetMismatchError when another request holds the upload. `append`, `complete`,
   * `reopen` and `remove` are called inside it; clean-up (`removeExpired`) passes held uploads by.
   */
  exclusively<T>(id: string, work: () => Promise<T>): Promise<T>;
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
