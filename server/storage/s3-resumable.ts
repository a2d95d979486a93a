/**
 * Resumable (tus) uploads in the object store, so that each request of one upload may land on any
 * instance. Under the storage prefix:
 *   uploads/<id>/state.json       the upload's description, its parts and its running SHA-256 state
 *   uploads/<id>/chunk-<offset>   bytes received but not yet in a part (S3 parts are 5 MiB at least)
 *   objects/received/tus-<id>     the S3 multipart upload the parts go to; completed, the temp object
 *
 * A PATCH reads its body, cuts whole parts of PART_BYTES (with the chunks before it) as they fill,
 * keeps the rest as a chunk object, and writes state.json last: the state is what says which bytes
 * are received, so a request cut off anywhere leaves the upload as the last state says (a part
 * uploaded but not in the state is overwritten by the next one of its number).
 *
 * The SHA-256 of the whole upload runs across requests and instances: hash-wasm's SHA-256 exports
 * its internal state (Node's crypto cannot), kept in state.json with the offset it covers. Hashing
 * the assembled object at completion instead would read every byte of a multi-GB scan once more.
 * When the state is missing (a reopened upload), completion hashes the assembled object once.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CopyObjectCommand, CreateMultipartUploadCommand, DeleteObjectCommand, GetObjectCommand, PutObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { createSHA256, type IHasher } from 'hash-wasm';
import { asStoreFault, guarded, PART_BYTES, type S3ContentStorage } from './s3.js';
import type { WorkLeases } from '../db/types.js';
import { UploadWriters } from './upload-writers.js';
import { ChecksumMismatchError, HEAD_BYTES, isMissingObject, OffsetMismatchError, SizeLimitError, type ReceivedContent, type ResumableStore, type ResumableUpload } from './types.js';

const ID_PATTERN = /^[a-f0-9-]{36}$/;

interface Part {
  number: number;
  etag: string;
  size: number;
}

interface Pending {
  /** Where its bytes start in the upload. */
  offset: number;
  /** Its first `size` bytes are the upload's (a reopened upload's chunk is one byte longer). */
  size: number;
  key: string;
}

interface UploadState {
  info: Omit<ResumableUpload, 'offset'>;
  multipartId: string;
  parts: Part[];
  pending: Pending[];
  /** hash-wasm's SHA-256 state over every byte received, base64; null when it must be computed at completion. */
  hash: string | null;
}

const offsetOf = (state: UploadState): number => state.parts.reduce((sum, part) => sum + part.size, 0) + state.pending.reduce((sum, chunk) => sum + chunk.size, 0);

export class S3ResumableStore implements ResumableStore {
  private readonly writers: UploadWriters;

  constructor(
    private readonly storage: S3ContentStorage,
    private readonly lifetimeMs: number,
    private readonly now: () => Date = () => new Date(),
    /**
     * Where several instances share the bucket (PostgreSQL): one request at a time writes to an
     * upload, whichever instance it reached, or two PATCHes would both write state.json.
     */
    shared?: WorkLeases,
  ) {
    this.writers = new UploadWriters(shared);
  }

  exclusively<T>(id: string, work: () => Promise<T>): Promise<T> {
    return this.writers.exclusively(id, work);
  }

  private base(id: string): string {
    return `${this.storage.where.prefix}uploads/${id}/`;
  }

  /** The object the multipart upload assembles: the temp object `tus-<id>` once complete. */
  private targetKey(id: string): string {
    return this.storage.tempKey({ id: `tus-${id}` });
  }

  private async readState(id: string): Promise<UploadState | undefined> {
    if (!ID_PATTERN.test(id)) return undefined;
    for (let attempt = 1; ; attempt += 1) {
      let text: string;
      try {
        const got = await this.storage.client.send(new GetObjectCommand({ Bucket: this.storage.bucket, Key: `${this.base(id)}state.json` }));
        text = await got.Body!.transformToString();
      } catch (error) {
        if (isMissingObject(error)) return undefined;
        throw asStoreFault(error);
      }
      try {
        return JSON.parse(text) as UploadState;
      } catch (error) {
        // S3 answers a read after a write with the whole new object; a store that writes an object
        // in place (s3rver) may show it half-written for a moment: read again.
        if (attempt >= 20) throw error;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
  }

  private async writeState(state: UploadState): Promise<void> {
    const body = Buffer.from(JSON.stringify(state));
    await guarded(this.storage.client.send(new PutObjectCommand({ Bucket: this.storage.bucket, Key: `${this.base(state.info.id)}state.json`, Body: body, ContentLength: body.length, ContentType: 'application/json' })));
  }

  private expiry(): string {
    return new Date(this.now().getTime() + this.lifetimeMs).toISOString();
  }

  async create(upload: Omit<ResumableUpload, 'offset'>): Promise<ResumableUpload> {
    const created = await guarded(this.storage.client.send(new CreateMultipartUploadCommand({ Bucket: this.storage.bucket, Key: this.targetKey(upload.id) })));
    const hasher = await createSHA256();
    hasher.init();
    await this.writeState({ info: upload, multipartId: created.UploadId!, parts: [], pending: [], hash: Buffer.from(hasher.save()).toString('base64') });
    return { ...upload, offset: 0 };
  }

  async get(id: string): Promise<ResumableUpload | undefined> {
    const state = await this.readState(id);
    if (!state || Date.parse(state.info.expiresAt) <= this.now().getTime()) return undefined;
    return { ...state.info, offset: offsetOf(state) };
  }

  /** Called inside `exclusively` (one writer per upload, whichever instance). */
  async append(id: string, offset: number, source: Readable, checksum?: Buffer): Promise<ResumableUpload> {
    const state = await this.readState(id);
    if (!state || Date.parse(state.info.expiresAt) <= this.now().getTime()) throw new OffsetMismatchError('the upload does not exist or has expired');
    const at = offsetOf(state);
    if (at !== offset) throw new OffsetMismatchError(`Upload-Offset ${offset} does not match the upload's offset ${at}`);
    const next: UploadState = { ...state, parts: [...state.parts], pending: [...state.pending] };
    const hasher = await this.hasherOf(state);
    const own = checksum ? createHash('sha256') : undefined;
    const consumed: Pending[] = [];
    const written: string[] = [];
    const room = state.info.length - offset;
    let received = 0;
    let buffered: Buffer[] = [];
    let bufferedBytes = 0;
    let failure: unknown;
    const pendingBytes = () => next.pending.reduce((sum, chunk) => sum + chunk.size, 0);
    try {
      for await (const data of source as AsyncIterable<Buffer>) {
        let chunk = data;
        if (received + chunk.length > room) {
          chunk = chunk.subarray(0, room - received);
          failure = new SizeLimitError(room);
        }
        received += chunk.length;
        hasher?.update(chunk);
        own?.update(chunk);
        buffered.push(chunk);
        bufferedBytes += chunk.length;
        if (pendingBytes() + bufferedBytes >= PART_BYTES) {
          consumed.push(...next.pending);
          await this.uploadPart(next, next.pending, Buffer.concat(buffered));
          next.pending = [];
          buffered = [];
          bufferedBytes = 0;
        }
        if (failure) break;
      }
    } catch (error) {
      failure ??= error;
    }
    if (checksum && (failure !== undefined || !own!.digest().equals(checksum))) {
      // A checksummed chunk is all or nothing: the state stays as it was, the chunks it names too.
      await this.removeKeys(written);
      if (failure === undefined) throw new ChecksumMismatchError('the chunk does not match its Upload-Checksum');
      throw failure;
    }
    if (bufferedBytes > 0) {
      const chunkOffset = offset + received - bufferedBytes;
      const key = `${this.base(id)}chunk-${chunkOffset}`;
      const body = Buffer.concat(buffered);
      await guarded(this.storage.client.send(new PutObjectCommand({ Bucket: this.storage.bucket, Key: key, Body: body, ContentLength: body.length })));
      written.push(key);
      next.pending.push({ offset: chunkOffset, size: body.length, key });
    }
    next.hash = hasher ? Buffer.from(hasher.save()).toString('base64') : null;
    next.info = { ...next.info, expiresAt: this.expiry() };
    await this.writeState(next);
    await this.removeKeys(consumed.map((chunk) => chunk.key).filter((key) => !next.pending.some((chunk) => chunk.key === key)));
    if (failure !== undefined) throw failure;
    return { ...next.info, offset: offsetOf(next) };
  }

  private async hasherOf(state: UploadState): Promise<IHasher | undefined> {
    if (state.hash === null) return undefined;
    const hasher = await createSHA256();
    hasher.load(Buffer.from(state.hash, 'base64'));
    return hasher;
  }

  /** Uploads the pending chunks' bytes followed by `tail` as the next part(s) of `state`, PART_BYTES each, the last one what is left. */
  private async uploadPart(state: UploadState, pending: Pending[], tail: Buffer): Promise<void> {
    let gathered: Buffer[] = [];
    let gatheredBytes = 0;
    const flush = async (): Promise<void> => {
      const body = Buffer.concat(gathered);
      gathered = [];
      gatheredBytes = 0;
      if (body.length === 0) return;
      const number = state.parts.length + 1;
      const sent = await guarded(this.storage.client.send(new UploadPartCommand({ Bucket: this.storage.bucket, Key: this.targetKey(state.info.id), UploadId: state.multipartId, PartNumber: number, Body: body, ContentLength: body.length })));
      state.parts.push({ number, etag: sent.ETag!, size: body.length });
    };
    const add = async (bytes: Buffer): Promise<void> => {
      gathered.push(bytes);
      gatheredBytes += bytes.length;
      if (gatheredBytes >= PART_BYTES) await flush();
    };
    for (const chunk of pending) {
      // A long chunk (a reopened upload's bytes) is read a part at a time.
      for (let start = 0; start < chunk.size; start += PART_BYTES) {
        const end = Math.min(chunk.size, start + PART_BYTES) - 1;
        await add(await this.readRange(chunk.key, start, end));
      }
    }
    if (tail.length > 0) await add(tail);
    await flush();
  }

  private async readRange(key: string, start: number, end: number): Promise<Buffer> {
    const got = await guarded(this.storage.client.send(new GetObjectCommand({ Bucket: this.storage.bucket, Key: key, Range: `bytes=${start}-${end}` })));
    return Buffer.from(await got.Body!.transformToByteArray());
  }

  private async removeKeys(keys: string[]): Promise<void> {
    for (const key of keys) await this.storage.client.send(new DeleteObjectCommand({ Bucket: this.storage.bucket, Key: key })).catch(() => undefined);
  }

  async complete(id: string): Promise<ReceivedContent> {
    const state = await this.readState(id);
    if (!state || offsetOf(state) !== state.info.length) throw new OffsetMismatchError('the upload is not complete');
    const target = this.targetKey(id);
    const bucket = this.storage.bucket;
    if (state.pending.length > 0) await this.uploadPart(state, state.pending, Buffer.alloc(0));
    if (state.parts.length === 0) {
      // An empty upload: S3 has no multipart upload of no parts.
      await guarded(this.storage.client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: target, UploadId: state.multipartId }))).catch(() => undefined);
      await guarded(this.storage.client.send(new PutObjectCommand({ Bucket: bucket, Key: target, Body: Buffer.alloc(0), ContentLength: 0 })));
    } else {
      await guarded(
        this.storage.client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: target, UploadId: state.multipartId, MultipartUpload: { Parts: state.parts.map((part) => ({ PartNumber: part.number, ETag: part.etag })) } })),
      );
    }
    const hasher = await this.hasherOf(state);
    const sha256 = hasher ? hasher.digest('hex') : await this.hashObject(target);
    const head = state.info.length === 0 ? Buffer.alloc(0) : await this.readRange(target, 0, Math.min(HEAD_BYTES, state.info.length) - 1);
    await this.removeAll(id, state, false);
    return { temp: { id: `tus-${id}` }, size: state.info.length, sha256, head };
  }

  private async hashObject(key: string): Promise<string> {
    const hash = createHash('sha256');
    for await (const chunk of this.storage.readObject(key) as AsyncIterable<Buffer>) hash.update(chunk);
    return hash.digest('hex');
  }

  /**
   * The completed object goes back to being the upload's bytes, all but the last one: a copy of it
   * as the one pending chunk (its last byte not counted), a new multipart upload, the hash computed
   * again at completion.
   */
  async reopen(upload: ResumableUpload, received: ReceivedContent): Promise<void> {
    const bucket = this.storage.bucket;
    const from = this.storage.tempKey(received.temp);
    const chunkKey = `${this.base(upload.id)}chunk-0`;
    const pending: Pending[] = [];
    if (upload.length > 1) {
      await guarded(this.storage.client.send(new CopyObjectCommand({ Bucket: bucket, Key: chunkKey, CopySource: `${bucket}/${from.split('/').map(encodeURIComponent).join('/')}` })));
      pending.push({ offset: 0, size: upload.length - 1, key: chunkKey });
    }
    const created = await guarded(this.storage.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: this.targetKey(upload.id) })));
    const { offset: _offset, ...info } = upload;
    await this.writeState({ info: { ...info, expiresAt: this.expiry() }, multipartId: created.UploadId!, parts: [], pending, hash: null });
    await this.storage.discard(received.temp).catch(() => undefined);
  }

  async remove(id: string): Promise<void> {
    const state = await this.readState(id);
    if (state) await this.removeAll(id, state, true);
  }

  /** The upload's objects (state last, so a crash halfway leaves it findable); its multipart upload too when `abort`. */
  private async removeAll(id: string, state: UploadState, abort: boolean): Promise<void> {
    if (abort) await this.storage.client.send(new AbortMultipartUploadCommand({ Bucket: this.storage.bucket, Key: this.targetKey(id), UploadId: state.multipartId })).catch(() => undefined);
    const keys: string[] = [];
    for await (const object of this.storage.list(`uploads/${id}/`)) if (object.Key && !object.Key.endsWith('/state.json')) keys.push(object.Key);
    await this.removeKeys(keys);
    await this.removeKeys([`${this.base(id)}state.json`]);
  }

  /**
   * Uploads past their expiry, and what a crash inside create or remove left: multipart uploads of
   * `tus-` temp objects with no state, and upload objects with no state, once older than an upload lives.
   */
  async removeExpired(now: Date): Promise<number> {
    let removed = 0;
    const described = new Set<string>();
    const leftovers = new Map<string, string[]>();
    const cutoff = now.getTime() - this.lifetimeMs;
    for await (const object of this.storage.list('uploads/')) {
      const match = /uploads\/([a-f0-9-]{36})\/(.+)$/.exec(object.Key ?? '');
      if (!match) continue;
      const [, id, name] = match as unknown as [string, string, string];
      if (name === 'state.json') {
        // An upload a request is writing (here or on another instance) is not abandoned.
        const outcome = await this.writers.ifFree(id, async () => {
          const state = await this.readState(id).catch(() => undefined);
          if (!state) return 'gone';
          if (Date.parse(state.info.expiresAt) > now.getTime()) return 'live';
          await this.removeAll(id, state, true);
          return 'removed';
        });
        if (outcome === 'removed') removed += 1;
        else if (outcome !== 'gone') described.add(id);
      } else if ((object.LastModified?.getTime() ?? 0) <= cutoff) {
        leftovers.set(id, [...(leftovers.get(id) ?? []), object.Key!]);
      }
    }
    for (const [id, keys] of leftovers) if (!described.has(id)) await this.removeKeys(keys);
    for await (const upload of this.storage.multipartUploads('objects/received/tus-')) {
      const id = upload.key.slice(upload.key.lastIndexOf('tus-') + 4);
      if (described.has(id) || (upload.initiated?.getTime() ?? 0) > cutoff) continue;
      await this.storage.client.send(new AbortMultipartUploadCommand({ Bucket: this.storage.bucket, Key: upload.key, UploadId: upload.uploadId })).catch(() => undefined);
    }
    return removed;
  }
}
