// A PostgreSQL cluster for a bench: initialized in a temp folder as the unprivileged `postgres` user
// (PostgreSQL refuses to run as root), on a free loopback port, removed at the end (as the tests'
// test/helpers/postgres.ts, with durability as IT would keep it: fsync on).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './server.mjs';

/** PostgreSQL's programs (initdb, pg_ctl, pg_dump…). */
export const POSTGRES_BIN = process.env.PATIENT_DOCS_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const OS_USER = 'postgres';
const SUPERUSER = 'patient_docs_bench';

function asPostgres(tool, args) {
  const command = path.join(POSTGRES_BIN, tool);
  const asRoot = process.getuid?.() === 0;
  return execFileSync(asRoot ? 'runuser' : command, asRoot ? ['-u', OS_USER, '--', command, ...args] : args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Starts a cluster; `settings` are extra `-c name=value` server settings. Returns its URL for a
 * database name, its postmaster's pid (for CPU per request: the postmaster and its children) and
 * createDatabase(name) and remove().
 */
export async function startPostgres(settings = []) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bench-pg-'));
  fs.chmodSync(root, 0o755);
  if (process.getuid?.() === 0) execFileSync('chown', [OS_USER, root]);
  const data = path.join(root, 'data');
  const port = await freePort();
  asPostgres('initdb', ['-D', data, '-U', SUPERUSER, '--auth=trust', '-E', 'UTF8', '--locale=C.utf8', '--no-sync']);
  const options = [`-p ${port}`, `-k ${root}`, "-c listen_addresses='127.0.0.1'", '-c max_connections=100', ...settings.map((setting) => `-c ${setting}`)].join(' ');
  asPostgres('pg_ctl', ['-D', data, '-l', path.join(root, 'postgres.log'), '-o', options, '-w', '-t', '60', 'start']);
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    process.off('exit', remove);
    try {
      asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // not running
    }
    fs.rmSync(root, { recursive: true, force: true });
  };
  process.on('exit', remove);
  const postmasterPid = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const url = (database) => `postgres://${SUPERUSER}@127.0.0.1:${port}/${database}`;
  /** Creates an empty database; returns its URL. */
  const createDatabase = async (name) => {
    const client = new pg.Client({ connectionString: url('postgres') });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE "${name}"`);
    } finally {
      await client.end();
    }
    return url(name);
  };
  return { port, postmasterPid, url, createDatabase, remove };
}

/** The pids of a process and its children (a postmaster's backends and helpers), from /proc. */
export function processTree(pid) {
  const children = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const parent = Number(fs.readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid];
  for (let index = 0; index < tree.length; index += 1) tree.push(...(children.get(tree[index]) ?? []));
  return tree;
}
