// A throwaway PostgreSQL 15 cluster for benches (as test/helpers/postgres.ts makes for tests): initdb
// in a temp folder as the unprivileged `postgres` user, on a free loopback port; removed on exit.
// Durability settings are PostgreSQL's defaults here (fsync on), since benches measure the real cost.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

const BIN = process.env.PATIENT_DOCS_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const SUPERUSER = 'patient_docs_bench';

function asPostgres(tool, args) {
  const command = path.join(BIN, tool);
  const asRoot = process.getuid?.() === 0;
  return execFileSync(asRoot ? 'runuser' : command, asRoot ? ['-u', 'postgres', '--', command, ...args] : args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen({ host: '127.0.0.1', port: 0 }, () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** Starts a cluster; returns { createDatabase(name) → url, remove() }. */
export async function startPostgres() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bench-pg-'));
  fs.chmodSync(root, 0o755);
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres', root]);
  const data = path.join(root, 'data');
  const port = await freePort();
  asPostgres('initdb', ['-D', data, '-U', SUPERUSER, '--auth=trust', '-E', 'UTF8', '--locale=C.utf8']);
  const options = [`-p ${port}`, `-k ${root}`, "-c listen_addresses='127.0.0.1'", '-c shared_buffers=64MB'].join(' ');
  asPostgres('pg_ctl', ['-D', data, '-l', path.join(root, 'postgres.log'), '-o', options, '-w', '-t', '60', 'start']);
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    try {
      asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // not running
    }
    fs.rmSync(root, { recursive: true, force: true });
  };
  process.on('exit', remove);
  const url = (database) => `postgres://${SUPERUSER}@127.0.0.1:${port}/${database}`;
  return {
    url,
    remove,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: url('postgres') });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name}"`);
      } finally {
        await client.end();
      }
      return url(name);
    },
  };
}
