import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqlite } from './database.js';

describe('SQL of the SQLite store', () => {
  it('never binds a bare LIMIT parameter (it makes SQLite re-prepare the statement on every run)', () => {
    const folder = import.meta.dirname;
    const offenders = fs
      .readdirSync(folder)
      .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
      .flatMap((name) => (fs.readFileSync(path.join(folder, name), 'utf8').match(/LIMIT\s+[?@:$]\w*/g) ?? []).map((hit) => `${name}: ${hit}`));
    expect(offenders).toEqual([]);
  });

  it('gathers planner statistics where they are missing when the database is opened', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-stats-'));
    const file = path.join(dir, 'db.sqlite');
    const migrations = [{ name: 't', sql: 'CREATE TABLE t (n INTEGER PRIMARY KEY, k TEXT); CREATE INDEX t_by_k ON t(k)' }];
    const first = openSqlite(file, migrations);
    first.exec("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 2000) INSERT INTO t (n, k) SELECT n, 'k' || (n % 10) FROM c");
    first.close();
    const reopened = openSqlite(file, migrations);
    expect(reopened.prepare("SELECT stat FROM sqlite_stat1 WHERE idx = 't_by_k'").pluck().get()).toMatch(/^2000 /);
    reopened.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers LIMIT +? with the bound number of rows, as LIMIT ? would', () => {
    const db = openSqlite(':memory:', []);
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY); INSERT INTO t (n) VALUES (1), (2), (3), (4), (5)');
    const page = db.prepare('SELECT n FROM t ORDER BY n LIMIT +? OFFSET ?').pluck();
    expect(page.all(2, 0)).toEqual([1, 2]);
    expect(page.all(3, 3)).toEqual([4, 5]);
    db.close();
  });
});

describe('database file', () => {
  it.skipIf(process.platform === 'win32')('is readable by the server\'s user only, with its WAL, and one left open before is tightened', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-mode-'));
    const file = path.join(dir, 'data', 'db.sqlite');
    const mode = (target: string) => fs.statSync(target).mode & 0o777;
    const db = openSqlite(file, []);
    db.exec('CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)');
    expect(mode(path.dirname(file))).toBe(0o700);
    expect([mode(file), mode(`${file}-wal`), mode(`${file}-shm`)]).toEqual([0o600, 0o600, 0o600]);
    db.close();
    fs.chmodSync(file, 0o644);
    openSqlite(file, []).close();
    expect(mode(file)).toBe(0o600);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
