/**
 * Builds the server's collaborators from configuration: the one place that decides which store,
 * which keys, which services. The HTTP app (app.ts), the admin CLI and tests all start here.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, type ServerConfig } from './config.js';
import { SqliteStore } from './db/sqlite/store.js';
import type { Store } from './db/types.js';
import { AccessGuard } from './domain/access.js';
import { DirectoryService } from './domain/directory.js';
import { DocumentService } from './domain/documents.js';
import { Links } from './domain/links.js';
import { KeyStore } from './identity/keys.js';
import { RateLimiter } from './identity/rate-limit.js';
import { TokenService } from './identity/tokens.js';
import { createContentParts, type ContentParts } from './storage/index.js';
import { hasThumbnail, renderThumbnail } from './thumbnails/index.js';
import { SecretBox } from './webhooks/secret-box.js';
import { WebhookService } from './webhooks/service.js';
import { CallbackGuard } from './webhooks/ssrf.js';

export interface ServerContext {
  config: ServerConfig;
  store: Store;
  keys: KeyStore;
  tokens: TokenService;
  links: Links;
  access: AccessGuard;
  documents: DocumentService;
  directory: DirectoryService;
  tokenRateLimiter: RateLimiter;
  tenantId: string;
  /** Document content: storage, resumable uploads, thumbnails, GC. */
  content: ContentParts;
  webhooks: WebhookService;
  /** Seals subscription hmacs at rest (key: meta 'webhook-secret-key'). */
  webhookSecrets: SecretBox;
  callbackGuard: CallbackGuard;
}

export function ensureDataDir(dataDir: string): void {
  try {
    fs.mkdirSync(dataDir, { recursive: true });
    fs.accessSync(dataDir, fs.constants.W_OK);
  } catch {
    throw new ConfigError(`PATIENT_DOCS_DATA_DIR=${dataDir} cannot be created or is not writable`);
  }
}

export async function openStore(config: ServerConfig): Promise<Store> {
  if (config.databaseUrl?.startsWith('postgres')) {
    throw new ConfigError('PATIENT_DOCS_DATABASE_URL=postgres://… is not supported by this build yet; unset it to use the embedded SQLite database');
  }
  ensureDataDir(config.dataDir);
  return SqliteStore.open(sqliteFile(config));
}

/** The embedded database's file: `sqlite:<file>` (relative to the data dir), else patient-docs.sqlite in it. */
export function sqliteFile(config: ServerConfig): string {
  return config.databaseUrl?.startsWith('sqlite:') ? path.resolve(config.dataDir, config.databaseUrl.slice('sqlite:'.length)) : path.join(config.dataDir, 'patient-docs.sqlite');
}

export async function createContext(config: ServerConfig, store?: Store): Promise<ServerContext> {
  const opened = store ?? (await openStore(config));
  const keys = new KeyStore(opened.signingKeys);
  await keys.ensureKey();
  const tenantId = await opened.meta.setIfAbsent('tenant-id', randomUUID());
  const linkKey = Buffer.from(await opened.meta.setIfAbsent('link-signing-key', randomBytes(32).toString('base64')), 'base64');
  const tokens = new TokenService(keys, {
    issuer: config.publicUrl,
    audience: config.audience,
    lifetimeSeconds: config.tokenLifetimeSeconds,
    tenantId,
    externalIssuer: config.externalIssuer,
  });
  const webhookSecrets = new SecretBox(Buffer.from(await opened.meta.setIfAbsent('webhook-secret-key', randomBytes(32).toString('base64')), 'base64'));
  const callbackGuard = new CallbackGuard({ allowPrivate: config.allowPrivateCallbacks });
  const links = new Links(config.publicUrl, linkKey);
  const access = new AccessGuard(opened.clients, opened.patients);
  const documents = new DocumentService(opened, links, undefined, hasThumbnail);
  return {
    config,
    store: opened,
    keys,
    tokens,
    links,
    access,
    documents,
    directory: new DirectoryService(opened),
    tokenRateLimiter: new RateLimiter(config.tokenRateLimitPerMinute, 60_000),
    tenantId,
    content: createContentParts(config.dataDir, opened, { documents, access, links, renderer: { hasThumbnail, renderThumbnail } }),
    webhooks: new WebhookService(opened.webhooks, webhookSecrets, callbackGuard),
    webhookSecrets,
    callbackGuard,
  };
}
