/**
 * Where `admin migrate` copies to, from its flags: a PostgreSQL database (--to-database) and a
 * content storage (--to-storage), each checked for form before anything is opened, with one line
 * naming the flag when it is wrong.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError } from '../cli-common.js';
import { databaseLabel } from '../../db/postgres/migrations.js';
import { LocalDiskStorage } from '../../storage/local-disk.js';
import type { ContentStorage } from '../../storage/types.js';

export interface MigrationTargets {
  /** postgres://… (its password is never printed: see databaseLabel). */
  database?: string;
  /** s3://bucket[/prefix], or file:///folder for a content folder on another disk. */
  storage?: string;
}

function checkDatabaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InputError(`--to-database must be a URL such as postgres://user:password@host:5432/database (it is not a URL)`);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') throw new InputError(`--to-database ${databaseLabel(raw)} must be a postgres:// URL (PostgreSQL 15 or newer)`);
  if (!url.hostname && !url.searchParams.get('host')) throw new InputError(`--to-database ${databaseLabel(raw)} names no host`);
  if (url.pathname.length <= 1) throw new InputError(`--to-database ${databaseLabel(raw)} names no database (postgres://user:password@host:5432/database)`);
  return raw;
}

function checkStorageUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InputError(`--to-storage must be a URL such as s3://bucket/prefix or file:///srv/patient-docs/content (it is not a URL)`);
  }
  if (url.protocol === 's3:') {
    if (!url.hostname) throw new InputError(`--to-storage ${raw} names no bucket (s3://bucket[/prefix])`);
    return raw;
  }
  if (url.protocol === 'file:') {
    if (url.hostname && url.hostname !== 'localhost') throw new InputError(`--to-storage ${raw}: a file:// URL names a folder on this machine (file:///path)`);
    return raw;
  }
  throw new InputError(`--to-storage ${raw} must be an s3://bucket[/prefix] or file:///folder URL`);
}

/** The targets the flags name; at least one. */
export function migrationTargets(flags: { toDatabase: string | undefined; toStorage: string | undefined }): MigrationTargets {
  if (flags.toDatabase === undefined && flags.toStorage === undefined) {
    throw new InputError('migrate needs --to-database postgres://… and/or --to-storage URL (what to move the embedded installation to)');
  }
  return {
    ...(flags.toDatabase !== undefined ? { database: checkDatabaseUrl(flags.toDatabase) } : {}),
    ...(flags.toStorage !== undefined ? { storage: checkStorageUrl(flags.toStorage) } : {}),
  };
}

/** The storage writes, reads and deletes a probe object, or says in one line what failed. */
async function checked(storage: ContentStorage, url: string): Promise<ContentStorage> {
  try {
    await storage.check();
  } catch (error) {
    throw new InputError(`--to-storage ${url}: ${(error as Error).message.split('\n')[0]} (nothing was copied)`);
  }
  return storage;
}

/**
 * Opens the target content storage. `currentRoot`: the content folder the files are in now,
 * which cannot also be the target.
 */
export async function openTargetStorage(url: string, currentRoot: string): Promise<ContentStorage> {
  if (url.startsWith('file:')) {
    const folder = path.resolve(fileURLToPath(url));
    if (folder === path.resolve(currentRoot)) throw new InputError(`--to-storage ${url} is the content folder the files are in now; name another folder`);
    return checked(new LocalDiskStorage(folder), url);
  }
  // The object store the server reaches with PATIENT_DOCS_STORAGE_URL (the same endpoint and credentials variables).
  const { createS3Client, parseStorageUrl, S3ContentStorage } = await import('../../storage/s3.js');
  let where;
  try {
    where = parseStorageUrl(url);
  } catch (error) {
    throw new InputError(`--to-storage ${url}: ${(error as Error).message}`);
  }
  const endpoint = process.env.PATIENT_DOCS_S3_ENDPOINT?.trim() || undefined;
  return checked(new S3ContentStorage(createS3Client(endpoint), where, endpoint), url);
}
