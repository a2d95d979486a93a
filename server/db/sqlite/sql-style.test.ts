import fs from 'node:fs';
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

  it('answers LIMIT +? with the bound number of rows, as LIMIT ? would', () => {
    const db = openSqlite(':memory:', []);
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY); INSERT INTO t (n) VALUES (1), (2), (3), (4), (5)');
    const page = db.prepare('SELECT n FROM t ORDER BY n LIMIT +? OFFSET ?').pluck();
    expect(page.all(2, 0)).toEqual([1, 2]);
    expect(page.all(3, 3)).toEqual([4, 5]);
    db.close();
  });
});
