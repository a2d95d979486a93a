// Counts what the client writes to its SQLite files (the sync journal above all), for
// bench/peer-rclone.mjs: loaded into the measured `run --once` with `--require`, it wraps
// better-sqlite3 (the process's only SQLite) and, at exit, writes to BENCH_JOURNAL_COUNT_FILE:
//   statements  executions of statements that write (INSERT, UPDATE, DELETE, … ; not SELECT)
//   commits     transactions committed: a transaction function's outermost call, a COMMIT, or a
//               writing statement run outside any transaction (SQLite commits it by itself)
// Two counter increments per statement: nothing the CPU figures can see.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const Database = require(require.resolve('better-sqlite3', { paths: [process.cwd(), path.resolve(__dirname, '../..')] }));

const counts = { statements: 0, commits: 0 };
const probe = new Database(':memory:');
const Statement = Object.getPrototypeOf(probe.prepare('SELECT 1'));
probe.close();

for (const method of ['run', 'get', 'all', 'iterate']) {
  const original = Statement[method];
  Statement[method] = function counted(...args) {
    if (!this.readonly) {
      const source = this.source.trimStart().slice(0, 8).toUpperCase();
      if (source.startsWith('COMMIT') || source.startsWith('END')) counts.commits += 1;
      else if (!source.startsWith('BEGIN') && !source.startsWith('ROLLBACK') && !source.startsWith('SAVEPOIN') && !source.startsWith('RELEASE')) {
        counts.statements += 1;
        if (!this.database.inTransaction) counts.commits += 1;
      }
    }
    return original.apply(this, args);
  };
}

const transaction = Database.prototype.transaction;
Database.prototype.transaction = function countedTransaction(fn) {
  const database = this;
  const wrapped = transaction.call(this, fn);
  const outer = function (...args) {
    const outermost = !database.inTransaction;
    const result = wrapped.apply(this, args);
    if (outermost) counts.commits += 1;
    return result;
  };
  for (const variant of ['deferred', 'immediate', 'exclusive']) {
    const inner = wrapped[variant];
    outer[variant] = function (...args) {
      const outermost = !database.inTransaction;
      const result = inner.apply(this, args);
      if (outermost) counts.commits += 1;
      return result;
    };
  }
  return outer;
};

const exec = Database.prototype.exec;
Database.prototype.exec = function countedExec(sql) {
  if (/^\s*(COMMIT|END)\b/i.test(sql)) counts.commits += 1;
  return exec.call(this, sql);
};

process.once('exit', () => {
  if (process.env.BENCH_JOURNAL_COUNT_FILE) fs.writeFileSync(process.env.BENCH_JOURNAL_COUNT_FILE, JSON.stringify(counts));
});
