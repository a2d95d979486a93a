/**
 * The stored files of an installation moved from one content storage to another through the
 * storage interface (so any backend can be the target), each checked against the SHA-256 and
 * size its record holds before it becomes visible there. A file the target already holds intact
 * is not copied again, so a run after a complete one changes nothing. When the content stays where
 * it is, every file is checked in place instead.
 *
 * The files go in batches, a few at a time within one: a small file (most scans of a clinic are)
 * is read whole, hashed and put under its key with one write, not made durable by itself; at the
 * end of a batch the target makes all of it durable at once (one syncfs on a local disk instead of
 * two fsyncs per file), and only then is the batch recorded as done (copy-record.ts). A large file
 * streams through a temp object, hashed on the way, committed (durable) when it matches.
 */
import { createHash } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import type Database from 'better-sqlite3';
import type { ByteRange, ContentStorage } from '../../storage/types.js';
import type { CopyRecord } from './copy-record.js';
import type { MigrationProgress } from './progress.js';

export interface StoredFile {
  key: string;
  sha256: string;
  size: number;
  /** Marked lost (admin verify --mark-lost): copied when it is there intact, else left behind without complaint. */
  lost: boolean;
}

export interface StoredContent {
  files: StoredFile[];
  thumbnails: string[];
}

export interface ContentProblem {
  key: string;
  problem: string;
}

export interface ContentReport {
  files: number;
  bytes: number;
  /** Files written to the target (0 when it held them all intact already). */
  copied: number;
  copiedBytes: number;
  thumbnails: number;
  thumbnailsCopied: number;
  /** Files marked lost before that are not there intact (nothing to copy). */
  lostLeftBehind: number;
  /** Thumbnails whose file is gone (each is rendered again on demand). */
  thumbnailsMissing: number;
  problems: ContentProblem[];
}

/**
 * Files copied at the same time within a batch: small files wait on per-file round trips (the
 * thread pool's, an object store's requests), large ones on bandwidth.
 */
const PARALLEL_FILES = 8;
/** Files up to this size are read whole and put with one write; larger ones stream through a temp object. */
const WHOLE_FILE_BYTES = 4 * 1024 * 1024;
/** Where a batch ends: at this many files or bytes, whichever comes first; then it is made durable and recorded. */
export interface BatchLimits {
  files: number;
  bytes: number;
}

const BATCH_LIMITS: BatchLimits = { files: 1000, bytes: 256 * 1024 * 1024 };

/** Every file the embedded database's records name: each version's content, and the thumbnails. */
export function listStoredContent(source: Database.Database): StoredContent {
  const files = (
    source.prepare('SELECT content_key, sha256, file_size, content_lost_at FROM document_versions GROUP BY content_key ORDER BY content_key').raw().all() as Array<[string, string, number, string | null]>
  ).map(([key, sha256, size, lostAt]) => ({ key, sha256, size, lost: lostAt !== null }));
  const thumbnails = source
    .prepare('SELECT thumbnail_key FROM document_versions WHERE thumbnail_key IS NOT NULL UNION SELECT thumbnail_key FROM documents WHERE thumbnail_key IS NOT NULL ORDER BY 1')
    .pluck()
    .all() as string[];
  return { files, thumbnails };
}

/** The whole object (`size` bytes, a range read: no buffer larger than the file), undefined when it is not there. */
async function readWhole(storage: ContentStorage, key: string, size?: number): Promise<Buffer | undefined> {
  const actual = size ?? (await storage.size(key));
  if (actual === undefined) return undefined;
  if (actual === 0) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const chunk of storage.read(key, { start: 0, end: actual - 1 })) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Size and SHA-256 of an object as a storage holds it, undefined when it is not there. */
async function digest(storage: ContentStorage, key: string): Promise<{ size: number; sha256: string } | undefined> {
  const stored = await storage.size(key);
  if (stored === undefined) return undefined;
  const hash = createHash('sha256');
  let size = 0;
  // The whole of what the storage says it holds, read as one range (a read of a small file then needs no larger buffer).
  const range: ByteRange | undefined = stored > 0 ? { start: 0, end: stored - 1 } : undefined;
  await pipeline(
    storage.read(key, range),
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        size += chunk.length;
        callback();
      },
    }),
  );
  return { size, sha256: hash.digest('hex') };
}

const sha256Of = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

const describe = (found: { size: number; sha256: string } | undefined, file: StoredFile): string | undefined => {
  if (!found) return 'the file is missing';
  if (found.size !== file.size) return `the file has ${found.size} of its ${file.size} bytes`;
  if (found.sha256 !== file.sha256) return 'the file does not match its sha256';
  return undefined;
};

/** Runs `work` over `items`, `limit` at a time, in order of start. */
async function inParallel<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next]!;
      next += 1;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** `items` cut into runs within `limits` (at least one item each). */
function inBatches<T>(items: readonly T[], limits: BatchLimits, bytesOf: (item: T) => number): T[][] {
  const batches: T[][] = [];
  let batch: T[] = [];
  let bytes = 0;
  for (const item of items) {
    if (batch.length > 0 && (batch.length >= limits.files || bytes + bytesOf(item) > limits.bytes)) {
      batches.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(item);
    bytes += bytesOf(item);
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/**
 * Makes each batch durable in the target, then records it: one batch's sync runs while the next
 * batch is copied, and a sync starts only when the one before (and its record) is done, so the
 * record only ever moves to a key whose batch, and every batch before, is durable.
 */
class BatchSyncer {
  private pending: Promise<void> = Promise.resolve();

  constructor(private readonly target: ContentStorage) {}

  async add(keys: readonly string[], then?: () => Promise<void>): Promise<void> {
    await this.pending;
    const syncing = (async () => {
      if (keys.length > 0) await this.target.sync?.(keys);
      await then?.();
    })();
    // Awaited by the next add or by done; until then its failure is not unhandled.
    syncing.catch(() => undefined);
    this.pending = syncing;
  }

  done(): Promise<void> {
    return this.pending;
  }
}

function emptyReport(content: StoredContent): ContentReport {
  return { files: content.files.length, bytes: 0, copied: 0, copiedBytes: 0, thumbnails: content.thumbnails.length, thumbnailsCopied: 0, lostLeftBehind: 0, thumbnailsMissing: 0, problems: [] };
}

interface FileOutcome {
  copied: boolean;
  /** Written (or found, left by a run that was stopped) but not yet made durable: the batch's sync does it. */
  unsynced?: boolean;
  problem?: string;
}

/** A large file: streamed into a temp object, hashed on the way, committed (durable) when it matches. */
async function streamFile(from: ContentStorage, to: ContentStorage, file: StoredFile): Promise<FileOutcome> {
  const received = await to.receive(from.read(file.key), file.size);
  const problem = describe({ size: received.size, sha256: received.sha256 }, file);
  if (problem) {
    await to.discard(received.temp);
    return { copied: false, problem };
  }
  await to.commit(received.temp, file.key);
  return { copied: true };
}

/**
 * Copies one file unless the target holds it intact: at its size, when an earlier batch recorded
 * it (`recorded`), else read back and hashed. Returns what went wrong, if anything.
 */
async function copyFile(from: ContentStorage, to: ContentStorage, file: StoredFile, recorded: boolean): Promise<FileOutcome> {
  if ((await to.size(file.key)) === file.size) {
    if (recorded) return { copied: false };
    if (describe(await digest(to, file.key), file) === undefined) return { copied: false, unsynced: true };
  }
  const size = await from.size(file.key);
  if (size === undefined) return { copied: false, problem: 'the file is missing' };
  if (size !== file.size) return { copied: false, problem: `the file has ${size} of its ${file.size} bytes` };
  if (file.size > WHOLE_FILE_BYTES) return streamFile(from, to, file);
  const bytes = await readWhole(from, file.key, file.size);
  const problem = describe(bytes && { size: bytes.length, sha256: sha256Of(bytes) }, file);
  if (problem) return { copied: false, problem };
  await to.put(file.key, bytes!, { durable: false });
  return { copied: true, unsynced: true };
}

async function copyThumbnail(from: ContentStorage, to: ContentStorage, key: string): Promise<'copied' | 'kept' | 'missing'> {
  const bytes = await readWhole(from, key);
  if (!bytes) return 'missing';
  if ((await to.size(key)) === bytes.length && (await readWhole(to, key, bytes.length))?.equals(bytes)) return 'kept';
  await to.put(key, bytes, { durable: false });
  return 'copied';
}

const totalBytes = (files: readonly StoredFile[]): number => files.reduce((sum, file) => sum + file.size, 0);

interface CopyOptions {
  /** How far an earlier run got in this target (the files it covers are taken at their size); moved on as batches become durable. */
  record?: CopyRecord;
  batch?: BatchLimits;
}

async function copyFiles(from: ContentStorage, to: ContentStorage, files: readonly StoredFile[], report: ContentReport, progress: MigrationProgress, options: CopyOptions): Promise<void> {
  const record = options.record;
  progress.begin('copying files', files.length, totalBytes(files));
  const syncer = new BatchSyncer(to);
  for (const batch of inBatches(files, options.batch ?? BATCH_LIMITS, (file) => file.size)) {
    const unsynced: string[] = [];
    await inParallel(batch, PARALLEL_FILES, async (file) => {
      let outcome: FileOutcome;
      try {
        outcome = await copyFile(from, to, file, record?.covers(file.key) ?? false);
      } catch (error) {
        outcome = { copied: false, problem: `it could not be copied (${(error as Error).message.split('\n')[0]})` };
      }
      if (outcome.unsynced) unsynced.push(file.key);
      if (outcome.copied) {
        report.copied += 1;
        report.copiedBytes += file.size;
      }
      if (outcome.problem && file.lost) report.lostLeftBehind += 1;
      else if (outcome.problem) report.problems.push({ key: file.key, problem: outcome.problem });
      else report.bytes += file.size;
      progress.advance(1, file.size);
    });
    const last = batch.at(-1)!.key;
    await syncer.add(unsynced, record && (() => record.advance(last)));
  }
  await syncer.done();
}

async function copyThumbnails(from: ContentStorage, to: ContentStorage, thumbnails: readonly string[], report: ContentReport, progress: MigrationProgress, options: CopyOptions): Promise<void> {
  progress.begin('copying thumbnails', thumbnails.length);
  const syncer = new BatchSyncer(to);
  for (const batch of inBatches(thumbnails, options.batch ?? BATCH_LIMITS, () => 0)) {
    const unsynced: string[] = [];
    await inParallel(batch, PARALLEL_FILES, async (key) => {
      const outcome = await copyThumbnail(from, to, key);
      if (outcome === 'copied') report.thumbnailsCopied += 1;
      if (outcome === 'missing') report.thumbnailsMissing += 1;
      // One kept may have been put by a run stopped before its batch's sync: synced too.
      else unsynced.push(key);
      progress.advance(1);
    });
    await syncer.add(unsynced);
  }
  await syncer.done();
}

export async function copyContent(from: ContentStorage, to: ContentStorage, content: StoredContent, progress: MigrationProgress, options: CopyOptions = {}): Promise<ContentReport> {
  const report = emptyReport(content);
  await copyFiles(from, to, content.files, report, progress, options);
  await copyThumbnails(from, to, content.thumbnails, report, progress, options);
  progress.end();
  return report;
}

/** The content stays where it is: every file is read and checked against its record. */
export async function checkContentInPlace(storage: ContentStorage, content: StoredContent, progress: MigrationProgress): Promise<ContentReport> {
  const report = emptyReport(content);
  progress.begin('checking files', content.files.length, totalBytes(content.files));
  await inParallel(content.files, PARALLEL_FILES, async (file) => {
    const problem = describe(await digest(storage, file.key).catch(() => undefined), file);
    if (problem && file.lost) report.lostLeftBehind += 1;
    else if (problem) report.problems.push({ key: file.key, problem });
    else report.bytes += file.size;
    progress.advance(1, file.size);
  });
  progress.end();
  return report;
}
