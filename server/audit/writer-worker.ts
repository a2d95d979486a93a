// Worker entry of AuditWriterThread: audit entries in, one transaction per batch, then the answer.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { SqliteAudit } from '../db/sqlite/audit.js';
import type { WorkerBoot } from '../worker-threads.js';
import type { AuditWriterOptions, FromAuditWriter, ToAuditWriter } from './writer-thread.js';

const { data: options } = workerData as WorkerBoot<AuditWriterOptions>;
const db = new Database(options.file, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
db.pragma(`busy_timeout = ${options.busyTimeoutMs}`);
// It only appends: a small page cache will do (the index leaves being appended to).
db.pragma('cache_size = -4000');
// Checkpoints as the server's own connection does (database.ts): every ~40 MB of WAL, not every 4.
db.pragma('wal_autocheckpoint = 10000');
const audit = new SqliteAudit(db);

parentPort!.on('message', (message: ToAuditWriter) => {
  if (message === 'close') {
    db.close();
    parentPort!.close();
    return;
  }
  let answer: FromAuditWriter;
  try {
    audit.appendNow(message.entries);
    answer = { id: message.id };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    answer = { id: message.id, error: { message: error instanceof Error ? error.message : String(error), ...(typeof code === 'string' ? { code } : {}) } };
  }
  parentPort!.postMessage(answer);
});
