/**
 * How far `admin migrate`'s file copy got, kept beside the installation it migrates
 * (PATIENT_DOCS_DATA_DIR/migrate-progress.json), per target storage. The files are copied in key
 * order, batch by batch; once a batch is durable in the target, the record moves to its last key.
 * Every file up to that key that the target holds at its size was checked against its SHA-256 and
 * made durable there, so a run again takes it at its size without reading it back; the files after
 * it are read and checked again (a run killed before its batch was durable may have left them
 * half-written by a power cut). The record is written only after the batch it names is durable: it
 * never claims more than the target holds. A record lost or unreadable costs a slower run, nothing
 * more.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { PRIVATE_FILE } from '../../private-files.js';

export const COPY_RECORD_FILE = 'migrate-progress.json';

interface RecordFile {
  targets: Record<string, { through: string; at: string }>;
}

function readRecordFile(file: string): RecordFile {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<RecordFile>;
    if (parsed.targets && typeof parsed.targets === 'object') return { targets: parsed.targets };
  } catch {
    // Absent, or torn by a crash while it was written: every file is checked again.
  }
  return { targets: {} };
}

export class CopyRecord {
  private through: string | undefined;

  private constructor(
    private readonly file: string,
    /** The target storage's location (a folder, s3://bucket/prefix). */
    private readonly target: string,
  ) {
    const through = readRecordFile(file).targets[target]?.through;
    this.through = typeof through === 'string' ? through : undefined;
  }

  static open(dataDir: string, target: string): CopyRecord {
    return new CopyRecord(path.join(dataDir, COPY_RECORD_FILE), target);
  }

  /** Whether the file under `key` was copied, checked and made durable in the target by an earlier batch. */
  covers(key: string): boolean {
    return this.through !== undefined && key <= this.through;
  }

  /** Every file up to `key` (in key order) is durable in the target now. */
  async advance(key: string): Promise<void> {
    if (this.covers(key)) return;
    const record = readRecordFile(this.file);
    record.targets[this.target] = { through: key, at: new Date().toISOString() };
    const temp = `${this.file}.${process.pid}.tmp`;
    await fsp.writeFile(temp, `${JSON.stringify(record, null, 2)}\n`, { mode: PRIVATE_FILE });
    await fsp.rename(temp, this.file);
    this.through = key;
  }
}
