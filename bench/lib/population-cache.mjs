// A populated database kept between bench runs (`--cache <dir>`): filling 1,000,000 documents takes
// minutes, using a copy of them seconds (SQLite) or a restore (PostgreSQL). A cached population is
// named by what makes it: its size and a hash of the schema migrations and of the code that filled
// it, so a change to either fills it anew. The bench works on a copy; the cached one stays as made.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { POSTGRES_BIN } from './postgres.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const MIGRATIONS = ['dist/server/db/sqlite/migrations.js', 'dist/server/db/postgres/migrations.js'];

/** A name for a population: `label`, then a hash of the migrations and of `recipe` (the source of what fills it). */
export function populationName(label, recipe) {
  const hash = createHash('sha256');
  for (const file of MIGRATIONS) hash.update(fs.readFileSync(path.join(ROOT, file)));
  hash.update(recipe);
  return `${label}-${hash.digest('hex').slice(0, 12)}`;
}

/** Writes `source` to `target` through a temp name, so a run stopped half-way leaves no cached file behind. */
function copyWhole(source, target) {
  fs.copyFileSync(source, `${target}.part`);
  fs.renameSync(`${target}.part`, target);
}

/**
 * The SQLite database file `file`: copied from the cache when it holds `name`, otherwise made by
 * `fill()` (which writes `file`) and then copied into the cache. Returns whether it came from the cache.
 */
export async function cachedSqlite(cacheDir, name, file, fill) {
  const cached = path.join(cacheDir, `${name}.sqlite`);
  if (fs.existsSync(cached)) {
    fs.copyFileSync(cached, file);
    return true;
  }
  await fill();
  fs.mkdirSync(cacheDir, { recursive: true });
  copyWhole(file, cached);
  return false;
}

/**
 * The PostgreSQL database at `url` (created and empty): restored from the cache's dump of `name`
 * (then analysed: a dump holds no planner statistics), otherwise made by `fill()` and then dumped
 * into the cache. Returns whether it came from the cache.
 */
export async function cachedPostgres(cacheDir, name, url, fill) {
  const cached = path.join(cacheDir, `${name}.pgdump`);
  const tool = (command, args) => execFileSync(path.join(POSTGRES_BIN, command), args, { stdio: ['ignore', 'ignore', 'inherit'] });
  if (fs.existsSync(cached)) {
    tool('pg_restore', ['--no-owner', '--exit-on-error', '-d', url, cached]);
    tool('vacuumdb', ['--analyze', '-d', url]);
    return true;
  }
  await fill();
  fs.mkdirSync(cacheDir, { recursive: true });
  tool('pg_dump', ['-Fc', '-f', `${cached}.part`, url]);
  fs.renameSync(`${cached}.part`, cached);
  return false;
}
