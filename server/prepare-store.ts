/**
 * What every process that opens the database makes sure of first (the server at each start, and
 * the admin CLI before each command): a signing key, the installation's own ids and keys in meta,
 * and the content folders. One function for both, so a data folder the CLI set up is the one the
 * server would have made; apart from context.ts so the CLI does not load the HTTP side for it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Store } from './db/types.js';
import { KeyStore } from './identity/keys.js';
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

export async function prepareStore(store: Store): Promise<PreparedStore> {
  const keys = new KeyStore(store.signingKeys);
  await keys.ensureKey();
  const tenantId = await store.meta.setIfAbsent('tenant-id', randomUUID());
  const linkKey = Buffer.from(await store.meta.setIfAbsent('link-signing-key', randomBytes(32).toString('base64')), 'base64');
  const webhookSecretKey = Buffer.from(await store.meta.setIfAbsent('webhook-secret-key', randomBytes(32).toString('base64')), 'base64');
  return { keys, tenantId, linkKey, webhookSecretKey };
}

/** The content folders, as the server's content storage and resumable uploads make them (storage/index.ts). */
export function prepareContentFolders(dataDir: string): void {
  privateDirectory(contentFolders(dataDir).uploads);
}
