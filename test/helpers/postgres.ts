/**
 * A real PostgreSQL for tests: a cluster in a temp folder owned by the unprivileged `postgres` user
 * (PostgreSQL refuses to run as root), listening on a free loopback port with its socket in that
 * folder, one database per suite. `testPostgres` gives a test file the cluster of its worker process
 * (starting one costs seconds), kept for the worker's next files and removed when the worker exits;
 * `startPostgres` starts one of the caller's own, removed by `remove()` or at exit. The cluster's
 * files are a copy of one initdb made once for every file and run (a copy costs a third of the CPU
 * of an initdb), kept in the temp folder under a name of the binaries and settings that made it.
 *
 * The cluster's default collation is ICU English, as on a typical production server, so any text
 * the store compares byte-wise without `COLLATE "C"` sorts differently here and a test notices.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterThisFile } from './file-cleanup.js';

const BIN = process.env.PATIENT_DOCS_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const OS_USER = 'postgres';
const SUPERUSER = 'patient_docs_test';

export interface TestPostgres {
  /** The cluster's port on 127.0.0.1. */
  readonly port: number;
  /** A new, empty database; its postgres:// URL. */
  createDatabase(name?: string): Promise<string>;
  /**
   * A new database with the server's schema already applied: a copy of a database this cluster
   * migrated once (CREATE DATABASE … TEMPLATE), for suites about what is stored rather than about
   * migrating (those take createDatabase).
   */
  createMigratedDatabase(): Promise<string>;
  /** The URL of a database by name (the server's PATIENT_DOCS_DATABASE_URL). */
  url(database: string): string;
  /** Stops the cluster (fast shutdown: connections are cut), keeping its files. */
  stop(): void;
  /** Starts it again on the same port after stop(). */
  start(): void;
  /** Whether it runs (started and not stopped since). */
  running(): boolean;
  /** Drops a database made here, cutting its connections (a clean-up). */
  dropDatabase(url: string): Promise<void>;
  /** Stops it and removes its folder. */
  remove(): void;
}

/** Whether this machine can run the tests' PostgreSQL (the binaries and the unprivileged user). */
export function postgresAvailable(): boolean {
  try {
    execFileSync('id', ['-u', OS_USER], { stdio: 'ignore' });
    return fs.existsSync(path.join(BIN, 'initdb'));
  } catch {
    return false;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen({ host: '127.0.0.1', port: 0 }, () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Runs a PostgreSQL tool as the unprivileged user when this process is root; as itself otherwise. */
function asPostgres(tool: string, args: string[]): string {
  return runAsPostgres(path.join(BIN, tool), args);
}

function runAsPostgres(command: string, args: string[]): string {
  const tool = path.basename(command);
  const asRoot = process.getuid?.() === 0;
  try {
    return execFileSync(asRoot ? 'runuser' : command, asRoot ? ['-u', OS_USER, '--', command, ...args] : args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${tool} ${args.join(' ')} failed:\n${stdout ?? ''}${stderr ?? ''}`, { cause: error });
  }
}

const INITDB_ARGS = ['-U', SUPERUSER, '--auth=trust', '-E', 'UTF8', '--locale=C.utf8', '--locale-provider=icu', '--icu-locale=en-US', '--no-sync'];

/**
 * The folder of a freshly initialized cluster's files, made once for these binaries and settings
 * (its name says which), never started: each cluster starts on a copy. Made under a name of its
 * own and renamed into place, so files starting clusters at the same moment never see half of one;
 * the one that renames second uses the other's and removes its own.
 */
function clusterTemplate(): string {
  const initdb = path.join(BIN, 'initdb');
  const { size, mtimeMs } = fs.statSync(initdb);
  const key = createHash('sha256').update(JSON.stringify([initdb, size, mtimeMs, INITDB_ARGS, process.getuid?.()])).digest('hex').slice(0, 16);
  const template = path.join(os.tmpdir(), `patient-docs-pg-template-${key}`);
  if (fs.existsSync(path.join(template, 'data', 'PG_VERSION'))) return template;
  const staging = fs.mkdtempSync(`${template}.making-`);
  fs.chmodSync(staging, 0o755);
  if (process.getuid?.() === 0) execFileSync('chown', [OS_USER, staging]);
  try {
    asPostgres('initdb', ['-D', path.join(staging, 'data'), ...INITDB_ARGS]);
    fs.renameSync(staging, template);
  } catch (error) {
    fs.rmSync(staging, { recursive: true, force: true });
    if (!fs.existsSync(path.join(template, 'data', 'PG_VERSION'))) throw error;
  }
  return template;
}

let sequence = 0;

/** Names the test run a cluster belongs to (test/global-setup.ts sets it), for stopRunClusters. */
export const TEST_RUN_VARIABLE = 'PATIENT_DOCS_TEST_RUN';
const RUN_FILE = 'test-run';

export async function startPostgres(): Promise<TestPostgres> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-pg-'));
  fs.chmodSync(root, 0o755);
  const run = process.env[TEST_RUN_VARIABLE];
  if (run) fs.writeFileSync(path.join(root, RUN_FILE), run);
  if (process.getuid?.() === 0) execFileSync('chown', [OS_USER, root]);
  const data = path.join(root, 'data');
  const log = path.join(root, 'postgres.log');
  const port = await freePort();
  // cp -a as the cluster's user: the copy keeps the modes (0700 on the data folder) PostgreSQL checks.
  runAsPostgres('cp', ['-a', path.join(clusterTemplate(), 'data'), data]);
  const options = [
    `-p ${port}`,
    `-k ${root}`,
    "-c listen_addresses='127.0.0.1'",
    // A test cluster: durability is not under test, speed on a shared 2-core machine is.
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c max_connections=200',
    '-c shared_buffers=32MB',
  ].join(' ');
  let running = false;
  const start = (): void => {
    asPostgres('pg_ctl', ['-D', data, '-l', log, '-o', options, '-w', '-t', '60', 'start']);
    running = true;
  };
  const stop = (): void => {
    if (!running) return;
    running = false;
    asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
  };
  let removed = false;
  const remove = (): void => {
    if (removed) return;
    removed = true;
    process.off('exit', remove);
    try {
      stop();
    } catch {
      // already gone: the folder is removed all the same
      try {
        asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
      } catch {
        // not running
      }
    }
    fs.rmSync(root, { recursive: true, force: true });
  };
  // A file that fails or is interrupted still leaves no cluster running behind it.
  process.on('exit', remove);
  try {
    start();
  } catch (error) {
    remove();
    throw error;
  }
  const url = (database: string): string => `postgres://${SUPERUSER}@127.0.0.1:${port}/${database}`;
  const create = async (database: string, template?: string): Promise<string> => {
    const client = new pg.Client({ connectionString: url('postgres') });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE "${database}"${template ? ` TEMPLATE "${template}"` : ''}`);
    } finally {
      await client.end();
    }
    return url(database);
  };
  const nextName = (): string => {
    sequence += 1;
    return `docs_${process.pid}_${sequence}`;
  };
  let migrated: Promise<string> | undefined;
  /** The database the migrated ones are copied from: migrated as a server's start does, then left without connections (a template must have none). */
  const migratedTemplate = (): Promise<string> => {
    migrated ??= (async () => {
      const name = 'patient_docs_migrated_template';
      const { PostgresStore } = await import('../../server/db/postgres/store.js');
      const store = await PostgresStore.open(await create(name));
      await store.close();
      return name;
    })();
    return migrated;
  };
  const dropDatabase = async (database: string): Promise<void> => {
    const client = new pg.Client({ connectionString: url('postgres') });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS "${new URL(database).pathname.slice(1)}" WITH (FORCE)`);
    } finally {
      await client.end();
    }
  };
  return {
    port,
    url,
    stop,
    start,
    running: () => running,
    dropDatabase,
    remove,
    createDatabase: (name?: string) => create(name ?? nextName()),
    createMigratedDatabase: async () => create(nextName(), await migratedTemplate()),
  };
}

/**
 * The worker's PostgreSQL cluster: started by the first file of the worker process that asks and
 * kept for the files the worker runs after it (a start and a removal cost one to two seconds per
 * file), removed when the worker exits (vitest ends a worker with SIGTERM: it exits, and the
 * cluster's exit hook stops it and removes its folder). A file has it to itself (a worker runs one
 * file at a time) and may stop and start it: a file that leaves it stopped has it started again for
 * the next.
 */
let cluster: Promise<TestPostgres> | undefined;
let workerCluster: Promise<TestPostgres> | undefined;

function workerPostgres(): Promise<TestPostgres> {
  if (!workerCluster) {
    const started = startPostgres();
    workerCluster = started;
    started.catch(() => {
      if (workerCluster === started) workerCluster = undefined;
    });
    // Without a listener, SIGTERM ends the process at once, without its exit hooks.
    if (process.listenerCount('SIGTERM') === 0) process.once('SIGTERM', () => process.exit(143));
  }
  return workerCluster;
}

/**
 * This file's PostgreSQL: the worker's cluster (running), with the databases the file makes in it
 * dropped when the file ends, so each file starts from a cluster holding none of another's.
 */
export function testPostgres(): Promise<TestPostgres> {
  if (!cluster) {
    const made: string[] = [];
    const forFile = workerPostgres().then((shared): TestPostgres => {
      if (!shared.running()) shared.start();
      return {
        ...shared,
        createDatabase: async (name?: string) => {
          const url = await shared.createDatabase(name);
          made.push(url);
          return url;
        },
        createMigratedDatabase: async () => {
          const url = await shared.createMigratedDatabase();
          made.push(url);
          return url;
        },
      };
    });
    cluster = forFile;
    afterThisFile(async () => {
      cluster = undefined;
      const shared = await forFile.catch(() => undefined);
      if (!shared) return;
      if (!shared.running()) shared.start();
      for (const url of made.splice(0)) await shared.dropDatabase(url);
    });
  }
  return cluster;
}

/**
 * Stops and removes the clusters of test run `run` still there when the run ends: a worker process
 * ended without its exit hooks leaves its cluster running. Other runs' clusters (another checkout's
 * tests on the same machine) are left alone.
 */
export function stopRunClusters(run: string): void {
  for (const name of fs.readdirSync(os.tmpdir())) {
    if (!name.startsWith('patient-docs-pg-') || name.startsWith('patient-docs-pg-template-')) continue;
    const root = path.join(os.tmpdir(), name);
    let owner: string;
    try {
      owner = fs.readFileSync(path.join(root, RUN_FILE), 'utf8');
    } catch {
      continue;
    }
    if (owner !== run) continue;
    if (fs.existsSync(path.join(root, 'data', 'postmaster.pid'))) {
      try {
        asPostgres('pg_ctl', ['-D', path.join(root, 'data'), '-m', 'immediate', '-w', 'stop']);
      } catch {
        // already stopped
      }
    }
    fs.rmSync(root, { recursive: true, force: true });
  }
}
