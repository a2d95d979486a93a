/**
 * Content storage in an S3-compatible object store (PATIENT_DOCS_STORAGE_URL=s3://bucket[/prefix]),
 * shared by every instance. Under the prefix:
 *   objects/received/<id>  bytes a one-shot upload streamed in, or a finished tus upload assembled
 *                          (received/tus-<id>, s3-resumable.ts): a temp object until a row names it
 *   objects/<key>          what rows name: received objects kept where they are (key
 *                          received/<id>), thumbnails, and objects committed under a key of the
 *                          caller's (a migration keeps its rows' keys) by a server-side copy
 *   uploads/<id>/          resumable uploads in progress (s3-resumable.ts)
 *   probe/<uuid>           the start-up check's object, deleted at once
 * An upload's bytes are written to the store once: `keep` hands the row the key of the object they
 * were received into, and the database row that names it is what makes it visible. A crash leaves
 * at worst a received object no row names, which clean-up removes once it is older than any upload
 * still running could make it (collectGarbage's tempOlderThanMs, 6 hours by the janitor). So that a
 * row is never written for an object clean-up may take meanwhile, `keep` adopts a received object
 * only while it is younger than ADOPT_WITHIN_MS by its LastModified, and copies an older one to a
 * fresh object (S3 dates an object assembled from parts by the start of its multipart upload: a tus
 * upload begun hours before).
 *
 * Uploads stream (a multipart upload, parts of PART_BYTES, a few in flight, in buffers used again
 * from part to part), hashed and counted on the way; the body is never held whole in memory nor on
 * the local disk.
 */
import { createHash, randomUUID } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
  type _Object,
} from '@aws-sdk/client-s3';
import { HEAD_BYTES, isMissingObject, SizeLimitError, type ByteRange, type ContentStorage, type ReceivedContent, type TempObject } from './types.js';

const KEY_PATTERN = /^[a-z0-9][a-z0-9._-]*(\/[a-z0-9][a-z0-9._-]*)*$/;
/** A temp object's id: a UUID, `tus-` before it for a resumable upload's (s3-resumable.ts). */
const ID_PATTERN = /^(tus-)?[a-f0-9-]{36}$/;
/** Part size of streamed uploads: 4 in flight and 1 filling bound an upload's memory to 40 MiB. */
export const PART_BYTES = 8 * 1024 * 1024;
const QUEUE_SIZE = 4;
/** What a read keeps buffered ahead of its reader. */
const READ_AHEAD_BYTES = 2 * 1024 * 1024;
/** Where received objects go, below objects/: their key as a row names it once kept. */
const RECEIVED = 'received/';
/**
 * `keep` adopts a received object at most this old (by the store's LastModified, against this
 * instance's clock); clean-up takes one no row names only past tempOlderThanMs (6 hours by the
 * janitor). The difference is what covers writing the row and the clocks of two instances.
 */
export const ADOPT_WITHIN_MS = 60 * 60_000;
/** Largest object one CopyObject copies; larger ones are copied part by part. */
const COPY_LIMIT = 5 * 1024 * 1024 * 1024;
const COPY_PART_BYTES = 1024 * 1024 * 1024;

export interface S3Location {
  bucket: string;
  /** '' or ending in '/'. */
  prefix: string;
}

/** `s3://bucket[/prefix]` → bucket and prefix; throws with one line for anything else. */
export function parseStorageUrl(url: string): S3Location {
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(\/.*)?$/.exec(url.trim());
  if (!match) throw new Error(`PATIENT_DOCS_STORAGE_URL=${JSON.stringify(url)} must be s3://bucket or s3://bucket/prefix (a bucket name of 3-63 lowercase letters, digits, dots and hyphens)`);
  const prefix = (match[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix !== '' && !KEY_PATTERN.test(prefix)) throw new Error(`the prefix of PATIENT_DOCS_STORAGE_URL (${JSON.stringify(prefix)}) may hold lowercase letters, digits, '.', '_', '-' and '/' only`);
  return { bucket: match[1]!, prefix: prefix === '' ? '' : `${prefix}/` };
}

/**
 * The client every part of the S3 backend uses. A custom endpoint (MinIO, Ceph RGW, a test server)
 * is addressed path-style. Checksums only where S3 requires them: with the SDK's default, bodies
 * are sent aws-chunked with trailing checksums, which some S3-compatible stores keep verbatim.
 */
export function createS3Client(endpoint: string | undefined): S3Client {
  // The SDK warns on every start (7 lines on stderr, in the server's log and in the admin CLI's
  // answer) that its releases from 2027 on will need Node 22; the installed one runs on the Node
  // this package's engines name. Whoever upgrades it past that checks `engines` (package.json).
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  return new S3Client({
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    region: process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 3,
  });
}

/** The error an unreachable or failing object store becomes: a 503 with Retry-After (errors.ts), nothing stored. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  readonly code = 'PATIENT_DOCS_STORE_UNAVAILABLE';
}

/** Faults of the store (not of the request): unreachable, timed out, 5xx, throttled. */
export function storeUnavailable(error: unknown): boolean {
  const fault = error as { code?: string; name?: string; $metadata?: { httpStatusCode?: number }; $retryable?: unknown } | null;
  if (!fault) return false;
  if (fault instanceof StoreUnavailableError) return true;
  const status = fault.$metadata?.httpStatusCode;
  if (status !== undefined && (status >= 500 || status === 429)) return true;
  const code = fault.code ?? '';
  return ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE'].includes(code) || fault.name === 'TimeoutError';
}

/** Rethrows a store fault as StoreUnavailableError (keeping anything else as it is). */
export function asStoreFault(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || !storeUnavailable(error)) return error;
  return new StoreUnavailableError(`the object store is unreachable or failing (${(error as Error).message?.split('\n')[0] || (error as Error).name})`, { cause: error });
}

/** The store's own faults of `sending` become StoreUnavailableError. */
export async function guarded<T>(sending: Promise<T>): Promise<T> {
  try {
    return await sending;
  } catch (error) {
    throw asStoreFault(error);
  }
}

/** What the start-up check says in one line about a failed probe. */
export function probeFailure(error: unknown, location: string, endpoint: string | undefined): string {
  const fault = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number }; message?: string };
  const status = fault.$metadata?.httpStatusCode;
  const where = endpoint ? ` at ${endpoint}` : '';
  if (fault.name === 'NoSuchBucket' || (status === 404 && fault.name !== 'NoSuchKey')) return `the bucket of ${location} does not exist${where}; create it first`;
  if (['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied', 'InvalidToken', 'ExpiredToken', 'CredentialsProviderError'].includes(fault.name ?? '') || status === 403 || status === 401) {
    return `the object store${where} refused the credentials for ${location} (${fault.name ?? status}): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's policy`;
  }
  if (storeUnavailable(error) || status === undefined) return `the object store${where} is unreachable (${fault.code ?? fault.name ?? fault.message?.split('\n')[0]}): check PATIENT_DOCS_S3_ENDPOINT and the network`;
  return `the object store${where} failed the write, read and delete of a probe object in ${location} (${fault.name ?? status})`;
}

/** Counts, hashes and keeps the head of the bytes passing through; fails past `maxBytes`. */
class MeasuringStream extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  head = Buffer.alloc(0);

  constructor(private readonly maxBytes: number) {
    // Little ahead of the uploader: the part it fills is where the bytes wait (its memory bound).
    super({ highWaterMark: READ_AHEAD_BYTES });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null, data?: Buffer) => void): void {
    if (this.bytes + chunk.length > this.maxBytes) {
      callback(new SizeLimitError(this.maxBytes));
      return;
    }
    this.bytes += chunk.length;
    this.hash.update(chunk);
    if (this.head.length < HEAD_BYTES) this.head = Buffer.concat([this.head, chunk.subarray(0, HEAD_BYTES - this.head.length)]);
    callback(null, chunk);
  }
}

export class S3ContentStorage implements ContentStorage {
  readonly shared = true;
  readonly location: string;

  constructor(
    readonly client: S3Client,
    readonly where: S3Location,
    private readonly endpoint?: string,
    /** ADOPT_WITHIN_MS, shorter only in tests of the copy a late keep makes. */
    private readonly adoptWithinMs = ADOPT_WITHIN_MS,
  ) {
    this.location = `s3://${where.bucket}/${where.prefix}`.replace(/\/$/, '');
  }

  get bucket(): string {
    return this.where.bucket;
  }

  /** The object key of a committed object. */
  objectKey(key: string): string {
    if (!KEY_PATTERN.test(key) || key.split('/').some((segment) => segment === '.' || segment === '..')) throw new Error(`invalid storage key ${JSON.stringify(key)}`);
    return `${this.where.prefix}objects/${key}`;
  }

  /** The object key of a temp object: a received object no row names yet. */
  tempKey(temp: TempObject): string {
    return this.objectKey(this.receivedKey(temp));
  }

  /** The key (below objects/) a row names a temp object by once `keep` adopted it. */
  receivedKey(temp: TempObject): string {
    if (!ID_PATTERN.test(temp.id)) throw new Error(`invalid temp object id ${JSON.stringify(temp.id)}`);
    return `${RECEIVED}${temp.id}`;
  }

  async check(): Promise<void> {
    const key = `${this.where.prefix}probe/${randomUUID()}`;
    const body = Buffer.from(`patient-docs probe ${new Date().toISOString()}`);
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentLength: body.length }));
      const got = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      const read = Buffer.from(await got.Body!.transformToByteArray());
      if (!read.equals(body)) throw new Error(`the object store${this.endpoint ? ` at ${this.endpoint}` : ''} gave back other bytes than were written to ${this.location}`);
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      if (error instanceof Error && error.message.includes('gave back other bytes')) throw error;
      throw new Error(probeFailure(error, this.location, this.endpoint), { cause: error });
    }
  }

  async receive(source: Readable, maxBytes: number): Promise<ReceivedContent> {
    const temp: TempObject = { id: randomUUID() };
    const measured = new MeasuringStream(maxBytes);
    let failure: unknown;
    const fail = (error: unknown) => {
      failure ??= error;
      measured.destroy(error as Error);
    };
    source.once('error', fail);
    measured.once('error', (error) => (failure ??= error));
    source.pipe(measured);
    try {
      await this.streamUpload(this.tempKey(temp), measured);
      if (failure !== undefined) throw failure;
    } catch (error) {
      source.unpipe(measured);
      await this.discard(temp).catch(() => undefined);
      throw asStoreFault(failure ?? error);
    } finally {
      source.off('error', fail);
    }
    return { temp, size: measured.bytes, sha256: measured.hash.digest('hex'), head: measured.head };
  }

  /**
   * Streams `body` into the object `objectKey`: one PutObject for less than a part, else a
   * multipart upload of PART_BYTES parts, QUEUE_SIZE in flight. Each part is filled in one of
   * QUEUE_SIZE + 1 buffers used again from part to part, so an upload holds that much memory
   * whatever its size, and leaves no part-sized garbage behind it. A failure aborts the multipart
   * upload (its parts go) and rejects.
   */
  private async streamUpload(objectKey: string, body: AsyncIterable<Buffer>): Promise<void> {
    const target = { Bucket: this.bucket, Key: objectKey };
    const spare: Buffer[] = [];
    const parts: Array<{ PartNumber: number; ETag: string }> = [];
    const inFlight = new Set<Promise<void>>();
    let uploadId: string | undefined;
    let current: Buffer = Buffer.allocUnsafe(PART_BYTES);
    let filled = 0;
    let partNumber = 0;
    const sendPart = async (buffer: Buffer, length: number, number: number): Promise<void> => {
      const sent = await this.client.send(new UploadPartCommand({ ...target, UploadId: uploadId, PartNumber: number, Body: buffer.subarray(0, length), ContentLength: length }));
      parts.push({ PartNumber: number, ETag: sent.ETag! });
      spare.push(buffer);
    };
    const startPart = async (): Promise<void> => {
      uploadId ??= (await this.client.send(new CreateMultipartUploadCommand(target))).UploadId!;
      while (inFlight.size >= QUEUE_SIZE) await Promise.race(inFlight);
      partNumber += 1;
      const sending: Promise<void> = sendPart(current, filled, partNumber).finally(() => inFlight.delete(sending));
      // Rejections are seen by the race above or the wait below; none goes unhandled meanwhile.
      sending.catch(() => undefined);
      inFlight.add(sending);
      current = spare.pop() ?? Buffer.allocUnsafe(PART_BYTES);
      filled = 0;
    };
    try {
      for await (const chunk of body) {
        for (let at = 0; at < chunk.length; ) {
          const copied = chunk.copy(current, filled, at, Math.min(chunk.length, at + PART_BYTES - filled));
          filled += copied;
          at += copied;
          if (filled === PART_BYTES) await startPart();
        }
      }
      if (uploadId === undefined) {
        await this.client.send(new PutObjectCommand({ ...target, Body: current.subarray(0, filled), ContentLength: filled }));
        return;
      }
      if (filled > 0) await startPart();
      await Promise.all(inFlight);
      parts.sort((one, other) => one.PartNumber - other.PartNumber);
      await this.client.send(new CompleteMultipartUploadCommand({ ...target, UploadId: uploadId, MultipartUpload: { Parts: parts } }));
    } catch (error) {
      await Promise.allSettled(inFlight);
      if (uploadId !== undefined) await this.client.send(new AbortMultipartUploadCommand({ ...target, UploadId: uploadId })).catch(() => undefined);
      throw error;
    }
  }

  /** A server-side copy of the whole temp object under its key (a crash leaves it whole or absent), then the temp object goes. */
  async commit(temp: TempObject, key: string): Promise<void> {
    await this.copy(this.tempKey(temp), this.objectKey(key));
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.tempKey(temp) })).catch(() => undefined);
  }

  /**
   * The received object itself, its key for the row to name (nothing copied), while it is young
   * enough that clean-up cannot take it before the row is written; else a copy under `key`.
   */
  async keep(temp: TempObject, key: string): Promise<string> {
    const head = await guarded(this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.tempKey(temp) })));
    if (Date.now() - (head.LastModified?.getTime() ?? 0) <= this.adoptWithinMs) return this.receivedKey(temp);
    await this.commit(temp, key);
    return key;
  }

  async uncommit(key: string, temp: TempObject): Promise<void> {
    // Kept where it was received: it is the temp object already.
    if (key === this.receivedKey(temp)) return;
    await this.copy(this.objectKey(key), this.tempKey(temp));
    await guarded(this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) })));
  }

  async discard(temp: TempObject): Promise<void> {
    await guarded(this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.tempKey(temp) })));
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    await guarded(this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key), Body: bytes, ContentLength: bytes.length })));
  }

  async size(key: string): Promise<number | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
      return head.ContentLength;
    } catch (error) {
      if (isMissingObject(error)) return undefined;
      throw asStoreFault(error);
    }
  }

  read(key: string, range?: ByteRange): Readable {
    return this.readObject(this.objectKey(key), range);
  }

  /**
   * A stream of the object's bytes, opened at once; its errors (missing, unreachable) arrive as the
   * stream's. The response's chunks are handed on as they come (no stage between), and the
   * response is paused while READ_AHEAD_BYTES wait unread.
   */
  readObject(objectKey: string, range?: ByteRange): Readable {
    let body: Readable | undefined;
    const abort = new AbortController();
    const out = new Readable({
      highWaterMark: READ_AHEAD_BYTES,
      read: () => body?.resume(),
      destroy: (error, callback) => {
        abort.abort();
        body?.destroy();
        callback(error);
      },
    });
    this.client
      .send(new GetObjectCommand({ Bucket: this.bucket, Key: objectKey, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }), { abortSignal: abort.signal })
      .then((got) => {
        body = got.Body as Readable;
        if (out.destroyed) {
          body.destroy();
          return;
        }
        body.once('error', (error) => out.destroy(asStoreFault(error) as Error));
        body.once('end', () => out.push(null));
        body.on('data', (chunk: Buffer) => {
          if (!out.push(chunk)) body!.pause();
        });
        // Flowing even if the client paused it before handing it over (the reader asked already).
        body.resume();
      })
      .catch((error: unknown) => out.destroy(asStoreFault(error) as Error));
    return out;
  }

  async remove(key: string): Promise<void> {
    await guarded(this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) })));
  }

  async hasObjects(): Promise<boolean> {
    const listed = await guarded(this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${this.where.prefix}objects/`, MaxKeys: 1 })));
    return (listed.KeyCount ?? listed.Contents?.length ?? 0) > 0;
  }

  /** Every object under `prefix` (below the storage prefix), page by page. */
  async *list(prefix: string): AsyncGenerator<_Object> {
    let token: string | undefined;
    do {
      const page = await guarded(this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${this.where.prefix}${prefix}`, ContinuationToken: token })));
      for (const object of page.Contents ?? []) yield object;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** Incomplete multipart uploads under `prefix` (below the storage prefix); none where the store cannot list them. */
  async *multipartUploads(prefix: string): AsyncGenerator<{ key: string; uploadId: string; initiated: Date | undefined }> {
    let keyMarker: string | undefined;
    let idMarker: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: `${this.where.prefix}${prefix}`, KeyMarker: keyMarker, UploadIdMarker: idMarker }));
      } catch (error) {
        // Some S3-compatible stores (s3rver) cannot list them: the bucket's lifecycle rule
        // (AbortIncompleteMultipartUpload, docs/several-instances.md) removes their parts there.
        if ((error as { name?: string }).name === 'NotImplemented') return;
        throw asStoreFault(error);
      }
      for (const upload of page.Uploads ?? []) if (upload.Key && upload.UploadId) yield { key: upload.Key, uploadId: upload.UploadId, initiated: upload.Initiated };
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      idMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined;
    } while (keyMarker);
  }

  /**
   * One-shot multipart uploads and received objects no row names older than `tempOlderThanMs`,
   * and other objects no row names older than `orphanOlderThanMs`. Without `isReferenced` only the
   * multipart uploads: a received object may be a row's. Every instance may run it: each removal is
   * of an object older than any upload still running could make it, and removing twice is harmless.
   */
  async collectGarbage(options: { tempOlderThanMs: number; isReferenced?: (key: string) => Promise<boolean>; orphanOlderThanMs?: number }): Promise<{ tempFiles: number; orphanObjects: number }> {
    const tempCutoff = Date.now() - options.tempOlderThanMs;
    const base = `${this.where.prefix}objects/`;
    let tempFiles = 0;
    for await (const upload of this.multipartUploads(`objects/${RECEIVED}`)) {
      // A resumable upload's lives as long as the upload does: its store removes it (s3-resumable.ts).
      if (upload.key.startsWith(`${base}${RECEIVED}tus-`) || (upload.initiated?.getTime() ?? 0) > tempCutoff) continue;
      await guarded(this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: upload.key, UploadId: upload.uploadId }))).catch(() => undefined);
      tempFiles += 1;
    }
    let orphanObjects = 0;
    if (options.isReferenced) {
      const orphanCutoff = Date.now() - (options.orphanOlderThanMs ?? 60 * 60_000);
      for await (const object of this.list('objects/')) {
        if (!object.Key) continue;
        const key = object.Key.slice(base.length);
        const received = key.startsWith(RECEIVED);
        if ((object.LastModified?.getTime() ?? 0) > (received ? tempCutoff : orphanCutoff)) continue;
        if (await options.isReferenced(key)) continue;
        await guarded(this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: object.Key })));
        if (received) tempFiles += 1;
        else orphanObjects += 1;
      }
    }
    return { tempFiles, orphanObjects };
  }

  /** Copies one object to another key inside the bucket, whole (CopyObject) or part by part above 5 GiB. */
  async copy(from: string, to: string): Promise<void> {
    const source = `${this.bucket}/${from.split('/').map(encodeURIComponent).join('/')}`;
    const head = await guarded(this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: from })));
    const size = head.ContentLength ?? 0;
    if (size <= COPY_LIMIT) {
      await guarded(this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: to, CopySource: source })));
      return;
    }
    const created = await guarded(this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: to })));
    try {
      const parts: Array<{ PartNumber: number; ETag: string }> = [];
      for (let start = 0, number = 1; start < size; start += COPY_PART_BYTES, number += 1) {
        const end = Math.min(size, start + COPY_PART_BYTES) - 1;
        const part = await guarded(this.client.send(new UploadPartCopyCommand({ Bucket: this.bucket, Key: to, UploadId: created.UploadId, PartNumber: number, CopySource: source, CopySourceRange: `bytes=${start}-${end}` })));
        parts.push({ PartNumber: number, ETag: part.CopyPartResult!.ETag! });
      }
      await guarded(this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: to, UploadId: created.UploadId, MultipartUpload: { Parts: parts } })));
    } catch (error) {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: to, UploadId: created.UploadId })).catch(() => undefined);
      throw error;
    }
  }
}
