/**
 * The stored files of an installation moved from one content storage to another through the
 * storage interface (so any backend can be the target), each checked against the SHA-256 and
 * size its record holds before it becomes visible there: the bytes go into a temp object, hashed
 * on the way, and are committed under their key only when they match. A file the target already
 * holds intact is not copied again, so a run after a complete one changes nothing. When the
 * content stays where it is, every file is checked in place instead.
 */
import { createHash } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import type Database from 'better-sqlite3';
import type { ContentStorage } from '../../storage/types.js';
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
 * Files copied at the same time: small scans wait on per-file round trips (a local target's two
 * fsyncs, an object store's requests), large ones on bandwidth. On a local target the fsyncs in
 * flight are bounded by libuv's thread pool (UV_THREADPOOL_SIZE, 4 unless set; 32 about doubles
 * the files per second, bench/migrate.mjs).
 */
const PARALLEL_FILES = 16;

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

/** Size and SHA-256 of an object as a storage holds it, undefined when it is not there. */
async function digest(storage: ContentStorage, key: string): Promise<{ size: number; sha256: string } | undefined> {
  if ((await storage.size(key)) === undefined) return undefined;
  const hash = createHash('sha256');
  let size = 0;
  await pipeline(
    storage.read(key),
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

async function readAll(storage: ContentStorage, key: string): Promise<Buffer | undefined> {
  if ((await storage.size(key)) === undefined) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of storage.read(key)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

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

function emptyReport(content: StoredContent): ContentReport {
  return { files: content.files.length, bytes: 0, copied: 0, copiedBytes: 0, thumbnails: content.thumbnails.length, thumbnailsCopied: 0, lostLeftBehind: 0, thumbnailsMissing: 0, problems: [] };
}

/** Copies one file unless the target holds it intact; returns what went wrong, if anything. */
async function copyFile(from: ContentStorage, to: ContentStorage, file: StoredFile): Promise<{ copied: boolean; problem?: string }> {
  if ((await to.size(file.key)) === file.size && describe(await digest(to, file.key), file) === undefined) return { copied: false };
  if ((await from.size(file.key)) === undefined) return { copied: false, problem: 'the file is missing' };
  const received = await to.receive(from.read(file.key), file.size);
  const problem = describe({ size: received.size, sha256: received.sha256 }, file);
  if (problem) {
    await to.discard(received.temp);
    return { copied: false, problem };
  }
  await to.commit(received.temp, file.key);
  return { copied: true };
}

async function copyThumbnail(from: ContentStorage, to: ContentStorage, key: string): Promise<'copied' | 'kept' | 'missing'> {
  const bytes = await readAll(from, key);
  if (!bytes) return 'missing';
  if ((await to.size(key)) === bytes.length && (await readAll(to, key))?.equals(bytes)) return 'kept';
  await to.put(key, bytes);
  return 'copied';
}

const totalBytes = (files: readonly StoredFile[]): number => files.reduce((sum, file) => sum + file.size, 0);

export async function copyContent(from: ContentStorage, to: ContentStorage, content: StoredContent, progress: MigrationProgress): Promise<ContentReport> {
  const report = emptyReport(content);
  progress.begin('copying files', content.files.length, totalBytes(content.files));
  await inParallel(content.files, PARALLEL_FILES, async (file) => {
    let outcome: { copied: boolean; problem?: string };
    try {
      outcome = await copyFile(from, to, file);
    } catch (error) {
      outcome = { copied: false, problem: `it could not be copied (${(error as Error).message.split('\n')[0]})` };
    }
    if (outcome.copied) {
      report.copied += 1;
      report.copiedBytes += file.size;
    }
    if (outcome.problem && file.lost) report.lostLeftBehind += 1;
    else if (outcome.problem) report.problems.push({ key: file.key, problem: outcome.problem });
    else report.bytes += file.size;
    progress.advance(1, file.size);
  });
  progress.begin('copying thumbnails', content.thumbnails.length);
  await inParallel(content.thumbnails, PARALLEL_FILES, async (key) => {
    const outcome = await copyThumbnail(from, to, key);
    if (outcome === 'copied') report.thumbnailsCopied += 1;
    if (outcome === 'missing') report.thumbnailsMissing += 1;
    progress.advance(1);
  });
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
