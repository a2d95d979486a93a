/**
 * What every process that opens the database makes sure of first (the server at each start, and
 * the admin CLI before each command): a signing key, the installation's own ids and keys in meta,
 * and the content folders. One function for both, so a data folder the CLI set up is the one the
 * server would have made; apart from context.ts so the CLI does not load the HTTP side for it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { ConfigError } from './config.js';
import type { MetaRepository, Store } from './db/types.js';
import { KeyStore } from './identity/keys.js';
import { SecretWrap, type MasterKeys } from './identity/master-key.js';
import { privateDirectory } from './private-files.js';
import { contentFolders } from './storage/folders.js';

export interface PreparedStore {
  keys: KeyStore;
  tenantId: string;
  /** Signs download and thumbnail links. */
  linkKey: Buffer;
  /** Seals subscription hmacs at rest. */
  webhookSecretKey: Buffer;
}

/**
 * `masterKeys`: the secrets are kept wrapped with them (identity/master-key.ts); a value found plain
 * or wrapped with the previous key is wrapped with the current one here, at each start.
 * `keysReloadMs`: how long the signing keys read are kept (KeyStore's default when undefined).
 */
export async function prepareStore(store: Store, masterKeys?: MasterKeys, keysReloadMs?: number): Promise<PreparedStore> {
  await refuseUnfinishedMigration(store.meta);
  const wrap = new SecretWrap(masterKeys);
  const keys = new KeyStore(store.signingKeys, keysReloadMs, undefined, wrap);
  // Instances starting at the same moment on one database make one signing key, not one each.
  await store.exclusively(() => keys.ensureKey());
  const tenantId = await store.meta.setIfAbsent('tenant-id', randomUUID());
  const linkKey = Buffer.from(await secretKey(store.meta, 'link-signing-key', wrap), 'base64');
  const webhookSecretKey = Buffer.from(await secretKey(store.meta, 'webhook-secret-key', wrap), 'base64');
  return { keys, tenantId, linkKey, webhookSecretKey };
}

/**
 * Set in a database that `admin migrate` is filling (server/admin/migrate/migrate.ts) and removed
 * when it is complete: a server on part of the records would take content it does not see yet for
 * orphans and remove it, and serve an installation with documents missing.
 */
export const MIGRATION_MARKER = 'migration-in-progress';

async function refuseUnfinishedMigration(meta: MetaRepository): Promise<void> {
  const marker = await meta.get(MIGRATION_MARKER);
  if (marker === undefined) return;
  let from = 'an embedded installation';
  try {
    from = `PATIENT_DOCS_DATA_DIR=${(JSON.parse(marker) as { from: string }).from}`;
  } catch {
    // the marker's detail only makes the message more helpful
  }
  throw new ConfigError(`the database is being filled by admin migrate from ${from}, which has not completed; run the migrate command again until it reports success, then start the server`);
}

/** A 32-byte key kept in meta (base64), made on first use, stored wrapped when a master key is given. */
async function secretKey(meta: MetaRepository, name: string, wrap: SecretWrap): Promise<string> {
  const place = `meta/${name}`;
  const stored = await meta.setIfAbsent(name, wrap.seal(randomBytes(32).toString('base64'), place));
  const plain = wrap.open(stored, place);
  if (wrap.stale(stored)) await meta.set(name, wrap.seal(plain, place));
  return plain;
}

/** The content folders, as the server's content storage and resumable uploads make them (storage/index.ts). */
export function prepareContentFolders(dataDir: string): void {
  privateDirectory(contentFolders(dataDir).uploads);
}
