/**
 * Opens the server's database as configured, with one-line errors naming the file and the variable
 * that chose it. Apart from the rest of the context (context.ts), so the admin CLI's commands can
 * open the database without loading the HTTP side of the server.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, type ServerConfig } from './config.js';
import { SqliteStore } from './db/sqlite/store.js';
import { makeDirectories } from './private-files.js';
import type { Store } from './db/types.js';

export function ensureDataDir(dataDir: string): void {
  try {
    makeDirectories(dataDir);
    fs.accessSync(dataDir, fs.constants.W_OK);
  } catch (error) {
    throw new ConfigError(`PATIENT_DOCS_DATA_DIR=${dataDir} cannot be created or is not writable (${(error as Error).message})`);
  }
}

/** Whether the configuration names a PostgreSQL database (postgres:// or postgresql://) rather than the embedded file. */
export function usesPostgres(config: Pick<ServerConfig, 'databaseUrl'>): boolean {
  return config.databaseUrl?.startsWith('postgres') === true;
}

export async function openStore(config: ServerConfig): Promise<Store> {
  if (usesPostgres(config)) return openPostgres(config);
  ensureDataDir(config.dataDir);
  const file = sqliteFile(config);
  let store: SqliteStore | undefined;
  try {
    store = SqliteStore.open(file);
    // A file the server may read but not write opens fine and fails at its first write, in some
    // later step: one write now (rolled back) fails here instead, where the file can be named.
    store.db.exec('BEGIN IMMEDIATE');
    try {
      store.db.exec('CREATE TABLE write_probe (x)');
    } finally {
      store.db.exec('ROLLBACK');
    }
    return store;
  } catch (error) {
    if (store?.db.open) store.db.close();
    throw databaseError(error, file, config);
  }
}

/**
 * Connects to PostgreSQL and applies pending migrations. A database that cannot be reached, or
 * refuses the user, stops the start with one line naming it (without its password).
 */
async function openPostgres(config: ServerConfig): Promise<Store> {
  // Loaded only here: the embedded database's servers and admin commands do without the driver.
  const [{ isUnavailable }, { databaseLabel }, { PostgresStore }] = await Promise.all([
    import('./db/postgres/database.js'),
    import('./db/postgres/migrations.js'),
    import('./db/postgres/store.js'),
  ]);
  const url = config.databaseUrl!;
  const source = `PATIENT_DOCS_DATABASE_URL=${databaseLabel(url)}`;
  try {
    // A claimed webhook message stays with its instance for one delivery timeout (DESIGN §6: an
    // instance that dies leaves its messages to the others within that); past it, another instance
    // may take it (at-least-once, same messageId).
    return await PostgresStore.open(url, { webhookLeaseMs: config.webhookTimeoutMs, poolSize: config.databasePoolSize });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const cause = (error as Error).message.split('\n')[0];
    if (code === 'PATIENT_DOCS_NEWER_DATABASE') throw new ConfigError(`${source}: ${cause}`);
    if (isUnavailable(error)) {
      throw new ConfigError(`${source}: the database cannot be reached (${cause}); check that PostgreSQL runs and this machine may connect to it`);
    }
    if (typeof code === 'string' && /^(28|3D|42501)/.test(code)) {
      throw new ConfigError(`${source}: the database refused this server (${cause}); check the user, password, database name and the user's rights`);
    }
    throw error;
  }
}

/** Below this much free space a disk counts as full (SQLite needs a few pages for its WAL and shared memory). */
const LOW_SPACE_BYTES = 1024 * 1024;

/** Bytes available to this user on the file system holding `directory`, if it can be asked. */
function freeBytes(directory: string): number | undefined {
  try {
    const stats = fs.statfsSync(directory);
    return stats.bavail * stats.bsize;
  } catch {
    return undefined;
  }
}

/** What went wrong opening the database, as one line naming the file and the variable that chose it. */
function databaseError(error: unknown, file: string, config: ServerConfig): unknown {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return error;
  const source = config.databaseUrl ? `PATIENT_DOCS_DATABASE_URL=${config.databaseUrl}` : `PATIENT_DOCS_DATA_DIR=${config.dataDir}`;
  const cause = (error as Error).message.split('\n')[0];
  if (code === 'PATIENT_DOCS_NEWER_DATABASE') return new ConfigError(`${source}: ${cause}`);
  if (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR')) {
    // SQLite reports a full disk at open as a "disk I/O error" (it cannot size its shared-memory
    // file): the free space tells the two apart, so IT is not sent looking for a broken disk.
    const free = freeBytes(path.dirname(file));
    if (code === 'SQLITE_FULL' || (free !== undefined && free < LOW_SPACE_BYTES)) {
      return new Error(`the disk holding ${path.dirname(file)} is full (${free ?? 0} bytes free), so the database ${file} cannot be opened; free space on that disk and start the server again`);
    }
  }
  if (code.startsWith('SQLITE_READONLY') || code === 'SQLITE_PERM' || code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new ConfigError(`${source}: the database file ${file} cannot be written (${cause}); give the user the server runs as write access to it and its folder`);
  }
  if (code.startsWith('SQLITE_CANTOPEN') || code === 'SQLITE_NOTADB' || code === 'SQLITE_AUTH' || !code.startsWith('SQLITE_')) {
    return new ConfigError(`${source}: the database file ${file} cannot be opened (${cause}); it must name a Patient Docs database file, or none yet, in a writable folder`);
  }
  return new Error(`the database file ${file} cannot be opened (${cause})`);
}

/** The embedded database's file: `sqlite:<file>` (relative to the data dir), else patient-docs.sqlite in it. */
export function sqliteFile(config: ServerConfig): string {
  return config.databaseUrl?.startsWith('sqlite:') ? path.resolve(config.dataDir, config.databaseUrl.slice('sqlite:'.length)) : path.join(config.dataDir, 'patient-docs.sqlite');
}
