/** The tests' PostgreSQL (helpers/postgres.ts): a real cluster that starts, serves, restarts and is removed. */
import fs from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type TestPostgres } from './helpers/postgres.js';

let cluster: TestPostgres;
beforeAll(async () => {
  cluster = await startPostgres();
});
afterAll(() => cluster?.remove());

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('test PostgreSQL cluster', () => {
  it('gives each suite its own empty database on PostgreSQL 15+, sorting by English rules by default', async () => {
    const [a, b] = [await cluster.createDatabase(), await cluster.createDatabase()];
    expect(a).not.toBe(b);
    await query(a, 'CREATE TABLE t (x text)');
    expect(await query(b, "SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 't'")).toEqual([{ n: 0 }]);
    expect(await query(a, "SELECT usesuper, current_setting('server_version_num')::int >= 150000 AS v15 FROM pg_user WHERE usename = current_user")).toEqual([{ usesuper: true, v15: true }]);
    // The default collation is linguistic: a store that needs byte order must ask for COLLATE "C".
    expect(await query(a, "SELECT x FROM (VALUES ('a'), ('B'), ('/')) v(x) ORDER BY x")).toEqual([{ x: '/' }, { x: 'a' }, { x: 'B' }]);
    expect(await query(a, `SELECT x FROM (VALUES ('a'), ('B'), ('/')) v(x) ORDER BY x COLLATE "C"`)).toEqual([{ x: '/' }, { x: 'B' }, { x: 'a' }]);
  });

  it('refuses connections while stopped and serves the same data once started again', async () => {
    const url = await cluster.createDatabase();
    await query(url, "CREATE TABLE kept (x text); INSERT INTO kept VALUES ('still here')");
    cluster.stop();
    await expect(query(url, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/);
    cluster.start();
    expect(await query(url, 'SELECT x FROM kept')).toEqual([{ x: 'still here' }]);
  });

  it('removes its folder and stops the server when removed', async () => {
    const other = await startPostgres();
    const url = await other.createDatabase();
    const [{ dir }] = (await query(url, "SELECT current_setting('data_directory') AS dir")) as [{ dir: string }];
    expect(fs.existsSync(dir)).toBe(true);
    other.remove();
    expect(fs.existsSync(dir)).toBe(false);
    await expect(query(url, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/);
  });
});
