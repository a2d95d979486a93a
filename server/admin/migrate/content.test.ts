import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalDiskStorage } from '../../storage/local-disk.js';
import type { ByteRange } from '../../storage/types.js';
import { copyContent, type StoredContent, type StoredFile } from './content.js';
import { COPY_RECORD_FILE, CopyRecord } from './copy-record.js';
import { MigrationProgress } from './progress.js';

/** A real content folder that also notes what the copy asks of it: reads, and each batch's sync with the record at that moment. */
class WatchedDisk extends LocalDiskStorage {
  reads: string[] = [];
  syncs: Array<{ keys: string[]; recordBefore: string | undefined }> = [];

  constructor(
    root: string,
    private readonly recordFile: string,
  ) {
    super(root);
  }

  override read(key: string, range?: ByteRange): Readable {
    this.reads.push(key);
    return super.read(key, range);
  }

  override async sync(keys: readonly string[]): Promise<void> {
    this.syncs.push({ keys: [...keys], recordBefore: recordThrough(this.recordFile) });
    await super.sync(keys);
  }
}

function recordThrough(file: string): string | undefined {
  if (!fs.existsSync(file)) return undefined;
  return (Object.values((JSON.parse(fs.readFileSync(file, 'utf8')) as { targets: Record<string, { through: string }> }).targets)[0] ?? undefined)?.through;
}

const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
const silent = (): MigrationProgress => new MigrationProgress({ write: () => undefined });

let dataDir: string;
let source: LocalDiskStorage;
let target: WatchedDisk;
let recordFile: string;

beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-migrate-content-'));
  source = new LocalDiskStorage(path.join(dataDir, 'content'));
  recordFile = path.join(dataDir, COPY_RECORD_FILE);
  target = new WatchedDisk(path.join(dataDir, 'target'), recordFile);
});
afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

/** `count` stored files of the source (keys in order, starting with `prefix`), with their records. */
async function storedFiles(count: number, prefix = 'd', size = (index: number) => 100 + index): Promise<StoredFile[]> {
  const files: StoredFile[] = [];
  for (let index = 0; index < count; index += 1) {
    const bytes = randomBytes(size(index));
    const key = `documents/${prefix}${String(index).padStart(3, '0')}/v1`;
    await source.put(key, bytes);
    files.push({ key, sha256: sha(bytes), size: bytes.length, lost: false });
  }
  return files;
}

const copy = (content: StoredContent) => copyContent(source, target, content, silent(), { record: CopyRecord.open(dataDir, target.location), batch: { files: 10, bytes: 1024 * 1024 } });
const targetBytes = (key: string): Buffer => fs.readFileSync(target.localPath(key));

describe('admin migrate: the content copy', () => {
  it('copies every file in batches, each made durable before it is recorded, and a run again reads nothing back', async () => {
    const files = await storedFiles(25);
    const first = await copy({ files, thumbnails: [] });
    expect(first).toMatchObject({ files: 25, copied: 25, problems: [] });
    for (const file of files) expect(sha(targetBytes(file.key))).toBe(file.sha256);
    // Three batches (10, 10, 5): each synced while the record still names the batch before.
    expect(target.syncs.map((sync) => [sync.keys.length, sync.recordBefore])).toEqual([
      [10, undefined],
      [10, files[9]!.key],
      [5, files[19]!.key],
    ]);
    expect(recordThrough(recordFile)).toBe(files[24]!.key);
    expect(fs.readdirSync(target.tmpDir)).toEqual([]);

    target.reads = [];
    const again = await copy({ files, thumbnails: [] });
    expect(again).toMatchObject({ copied: 0, copiedBytes: 0, problems: [] });
    expect(target.reads).toEqual([]);
  });

  it('after a run stopped before its batch was durable, checks what it left: a damaged file is copied again, an intact one kept and made durable', async () => {
    const files = await storedFiles(4);
    // What a stopped run (and a power cut) may leave: one file whole, one of the right size but other bytes; no record.
    await target.put(files[0]!.key, fs.readFileSync(source.localPath(files[0]!.key)), { durable: false });
    await target.put(files[1]!.key, randomBytes(files[1]!.size), { durable: false });
    const report = await copy({ files, thumbnails: [] });
    expect(report).toMatchObject({ copied: 3, problems: [] });
    for (const file of files) expect(sha(targetBytes(file.key))).toBe(file.sha256);
    expect(target.syncs).toHaveLength(1);
    expect([...target.syncs[0]!.keys].sort()).toEqual(files.map((file) => file.key));
  });

  it('streams a large file through a temp object, and reports a missing or damaged source file without copying it', async () => {
    const [large] = await storedFiles(1, 'large', () => 5 * 1024 * 1024);
    const [damaged, missing, lost] = await storedFiles(3, 'small');
    fs.writeFileSync(source.localPath(damaged!.key), randomBytes(damaged!.size));
    fs.rmSync(source.localPath(missing!.key));
    fs.rmSync(source.localPath(lost!.key));
    const report = await copy({ files: [large!, damaged!, missing!, { ...lost!, lost: true }], thumbnails: [] });
    expect(report).toMatchObject({ copied: 1, copiedBytes: large!.size, lostLeftBehind: 1 });
    expect([...report.problems].sort((a, b) => a.key.localeCompare(b.key))).toEqual([
      { key: damaged!.key, problem: 'the file does not match its sha256' },
      { key: missing!.key, problem: 'the file is missing' },
    ]);
    expect(sha(targetBytes(large!.key))).toBe(large!.sha256);
    for (const file of [damaged!, missing!, lost!]) expect(fs.existsSync(target.localPath(file.key))).toBe(false);
  });
});
