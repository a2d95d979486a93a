/**
 * Resumable (tus) uploads on the local disk: `uploads/<id>.bin` holds the bytes received so far
 * (its size is the offset, so a restart loses nothing that reached the disk) and `<id>.json`
 * the upload's description. The running SHA-256 is kept in memory while the server runs; when it
 * cannot be trusted (a restart, a chunk cut mid-write) completion hashes the file again.
 */
import { createHash, randomUUID, type Hash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PRIVATE_FILE, privateDirectory } from '../private-files.js';
import { DurableFileWriter, readFileHead, WRITE_HIGH_WATER_MARK, type LocalDiskStorage } from './local-disk.js';
import type { WorkLeases } from '../db/types.js';
import { UploadWriters } from './upload-writers.js';
import { ChecksumMismatchError, OffsetMismatchError, type ReceivedContent, type ResumableStore, type ResumableUpload } from './types.js';

const ID_PATTERN = /^[a-f0-9-]{36}$/;

interface RunningHash {
  hash: Hash;
  /** Bytes of the file the hash covers. */
  bytes: number;
}

export class DiskResumableStore implements ResumableStore {
  private readonly hashes = new Map<string, RunningHash>();
  private readonly writers: UploadWriters;

  constructor(
    readonly directory: string,
    /** Where completed uploads become temp objects: the content storage on the same file system (a rename). */
    private readonly storage: LocalDiskStorage,
    private readonly lifetimeMs: number,
    private readonly now: () => Date = () => new Date(),
    /** Where instances share this folder (PostgreSQL): one request at a time writes to an upload, whichever instance it reached. */
    shared?: WorkLeases,
  ) {
    privateDirectory(directory);
    this.writers = new UploadWriters(shared);
  }

  exclusively<T>(id: string, work: () => Promise<T>): Promise<T> {
    return this.writers.exclusively(id, work);
  }

  private dataPath(id: string): string {
    return path.join(this.directory, `${id}.bin`);
  }

  private infoPath(id: string): string {
    return path.join(this.directory, `${id}.json`);
  }

  private async writeInfo(upload: Omit<ResumableUpload, 'offset'>): Promise<void> {
    const temp = `${this.infoPath(upload.id)}.${randomUUID()}.tmp`;
    try {
      await fsp.writeFile(temp, JSON.stringify(upload), { mode: PRIVATE_FILE });
      await fsp.rename(temp, this.infoPath(upload.id));
    } catch (error) {
      // A full disk: the half-written description must not stay behind eating space.
      await fsp.rm(temp, { force: true });
      throw error;
    }
  }

  async create(upload: Omit<ResumableUpload, 'offset'>): Promise<ResumableUpload> {
    await fsp.writeFile(this.dataPath(upload.id), Buffer.alloc(0), { flag: 'wx', mode: PRIVATE_FILE });
    try {
      await this.writeInfo(upload);
    } catch (error) {
      await fsp.rm(this.dataPath(upload.id), { force: true });
      throw error;
    }
    this.hashes.set(upload.id, { hash: createHash('sha256'), bytes: 0 });
    return { ...upload, offset: 0 };
  }

  async get(id: string): Promise<ResumableUpload | undefined> {
    const upload = await this.read(id);
    return upload && Date.parse(upload.expiresAt) > this.now().getTime() ? upload : undefined;
  }

  /** The upload as its files describe it, expired or not. */
  private async read(id: string): Promise<ResumableUpload | undefined> {
    if (!ID_PATTERN.test(id)) return undefined;
    try {
      const info = JSON.parse(await fsp.readFile(this.infoPath(id), 'utf8')) as Omit<ResumableUpload, 'offset'>;
      const stat = await fsp.stat(this.dataPath(id));
      return { ...info, offset: stat.size };
    } catch {
      return undefined;
    }
  }

  /**
   * Called inside `exclusively` (one writer per upload, whichever instance), for an upload the
   * request found live: an expiry that passes while the request holds the upload does not refuse
   * it (the clean-up passes a held upload by, and this write renews the expiry).
   */
  async append(id: string, offset: number, source: Readable, checksum?: Buffer): Promise<ResumableUpload> {
    const upload = await this.read(id);
    if (!upload) throw new OffsetMismatchError('the upload does not exist or has expired');
    if (upload.offset !== offset) throw new OffsetMismatchError(`Upload-Offset ${offset} does not match the upload's offset ${upload.offset}`);
    const running = this.hashes.get(id);
    // The running hash continues only if it covers exactly the bytes before this chunk.
    const trusted = running && running.bytes === offset ? running : undefined;
    const snapshot = trusted?.hash.copy();
    let writer: DurableFileWriter | undefined;
    let failure: unknown;
    try {
      // Durable before the offset is reported: a client never resumes past bytes a power cut lost.
      writer = new DurableFileWriter(await fsp.open(this.dataPath(id), 'a'), { maxBytes: upload.length - offset, alsoFeed: trusted?.hash, ownHash: checksum !== undefined });
      await pipeline(source, writer);
    } catch (error) {
      failure = error;
    }
    const size = (await fsp.stat(this.dataPath(id))).size;
    if (checksum && (failure !== undefined || !writer || !writer.hash.digest().equals(checksum))) {
      // A checksummed chunk is all or nothing: keep none of it.
      await fsp.truncate(this.dataPath(id), offset);
      if (trusted && snapshot) this.hashes.set(id, { hash: snapshot, bytes: offset });
      if (failure === undefined) throw new ChecksumMismatchError('the chunk does not match its Upload-Checksum');
      throw failure;
    }
    if (trusted && writer && !writer.tainted && size === offset + writer.bytes) trusted.bytes = size;
    else this.hashes.delete(id);
    await this.writeInfo({ ...info(upload), expiresAt: new Date(this.now().getTime() + this.lifetimeMs).toISOString() });
    if (failure !== undefined) throw failure;
    return { ...upload, offset: size };
  }

  async complete(id: string): Promise<ReceivedContent> {
    const upload = await this.get(id);
    if (!upload || upload.offset !== upload.length) throw new OffsetMismatchError('the upload is not complete');
    const running = this.hashes.get(id);
    const sha256 = running && running.bytes === upload.length ? running.hash.digest('hex') : await hashFile(this.dataPath(id));
    const head = await readFileHead(this.dataPath(id));
    // The PATCH that brought the last byte fsync'ed the file before its offset was reported: the
    // commit's rename needs no second fsync of a multi-GB file (an empty upload was never written).
    const temp = { id, durable: upload.length > 0 };
    await fsp.rename(this.dataPath(id), this.storage.tempPath(temp));
    await fsp.rm(this.infoPath(id), { force: true });
    this.hashes.delete(id);
    return { temp, size: upload.length, sha256, head };
  }

  async reopen(upload: ResumableUpload, received: ReceivedContent): Promise<void> {
    await fsp.rename(this.storage.tempPath(received.temp), this.dataPath(upload.id));
    if (upload.length > 0) await fsp.truncate(this.dataPath(upload.id), upload.length - 1);
    this.hashes.delete(upload.id);
    await this.writeInfo({ ...info(upload), expiresAt: new Date(this.now().getTime() + this.lifetimeMs).toISOString() });
  }

  async remove(id: string): Promise<void> {
    if (!ID_PATTERN.test(id)) return;
    this.hashes.delete(id);
    await fsp.rm(this.dataPath(id), { force: true });
    await fsp.rm(this.infoPath(id), { force: true });
  }

  async removeExpired(now: Date): Promise<number> {
    let removed = 0;
    for (const name of await fsp.readdir(this.directory).catch(() => [] as string[])) {
      const id = name.replace(/\.(json|bin)$/, '');
      if (!name.endsWith('.json') || !ID_PATTERN.test(id)) continue;
      // An upload a request is writing (here or on another instance) is not abandoned.
      const gone = await this.writers.ifFree(id, async () => {
        const info = await fsp
          .readFile(path.join(this.directory, name), 'utf8')
          .then((text) => JSON.parse(text) as { expiresAt?: string })
          .catch(() => ({ expiresAt: undefined }));
        if (info.expiresAt && Date.parse(info.expiresAt) > now.getTime()) return false;
        await this.remove(id);
        return true;
      });
      if (gone) removed += 1;
    }
    // Data files whose description never got written (a crash inside create).
    for (const name of await fsp.readdir(this.directory).catch(() => [] as string[])) {
      if (name.endsWith('.bin') && !fs.existsSync(path.join(this.directory, name.replace(/\.bin$/, '.json')))) {
        await fsp.rm(path.join(this.directory, name), { force: true });
      }
    }
    return removed;
  }
}

function info(upload: ResumableUpload): Omit<ResumableUpload, 'offset'> {
  const { offset: _offset, ...rest } = upload;
  return rest;
}

export async function hashFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(fs.createReadStream(file, { highWaterMark: WRITE_HIGH_WATER_MARK }), hash);
  return hash.digest('hex');
}
