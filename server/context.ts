/**
 * Builds the server's collaborators from configuration: the one place that decides which store,
 * which keys, which services. The HTTP app (app.ts), the admin CLI and tests all start here.
 */
import type { ServerConfig } from './config.js';
import type { Store } from './db/types.js';
import { AuditLog } from './audit/log.js';
import { AUDIT_BUSY_TIMEOUT_MS, sqliteAuditSink } from './audit/writer-thread.js';
import { SqliteStore } from './db/sqlite/store.js';
import { AccessGuard } from './domain/access.js';
import { DirectoryService } from './domain/directory.js';
import { DocumentService } from './domain/document-service.js';
import { Links } from './domain/links.js';
import type { KeyStore } from './identity/keys.js';
import { MemoryTokenLimiter, type TokenAttemptLimiter, type TokenLimits } from './identity/rate-limit.js';
import { SecretVerifier } from './identity/secret-verifier.js';
import { TokenService } from './identity/tokens.js';
import { createContentParts, type ContentParts } from './storage/index.js';
import { hasThumbnail, renderThumbnail } from './thumbnails/index.js';
import { SecretBox } from './webhooks/secret-box.js';
import { WebhookService } from './webhooks/service.js';
import { CallbackGuard } from './webhooks/ssrf.js';
import { openStore } from './open-store.js';
import { prepareStore } from './prepare-store.js';

export { ensureDataDir, openStore, sqliteFile } from './open-store.js';

export interface ServerContext {
  config: ServerConfig;
  store: Store;
  keys: KeyStore;
  tokens: TokenService;
  links: Links;
  access: AccessGuard;
  documents: DocumentService;
  directory: DirectoryService;
  /** Limits on token requests: in the database on PostgreSQL (for every instance together), in this process on SQLite. */
  tokenLimiter: TokenAttemptLimiter;
  /** Checks client secrets on threads of its own (closed with the server). */
  secretVerifier: SecretVerifier;
  tenantId: string;
  /** Document content: storage, resumable uploads, thumbnails, GC. */
  content: ContentParts;
  webhooks: WebhookService;
  /** Seals subscription hmacs at rest (key: meta 'webhook-secret-key'). */
  webhookSecrets: SecretBox;
  callbackGuard: CallbackGuard;
  /** Every access to a patient's files, buffered and written in batches (server/audit/log.ts). */
  audit: AuditLog;
}

/**
 * The audit log, written by a thread of its own when the database is a file (the server), in the
 * request thread otherwise (an in-memory database in tests).
 */
function auditLog(store: Store, config: ServerConfig): AuditLog {
  if (store instanceof SqliteStore && !store.db.memory) {
    return new AuditLog(sqliteAuditSink(store, AUDIT_BUSY_TIMEOUT_MS), { maxPending: config.auditMaxPending });
  }
  return new AuditLog(store.audit, { maxPending: config.auditMaxPending });
}

/**
 * How long a process keeps what other processes may change (a client's organizations, scopes and
 * disabled state, the signing keys): on PostgreSQL, where other instances write, a change made through one
 * is seen by every instance within a second (DESIGN §6).
 */
export const SHARED_DATABASE_MEMORY_MS = 900;

/** That time for this store; undefined on the embedded database, where each keeper has its own default. */
export function memoryFor(store: Store): number | undefined {
  return store.kind === 'postgres' ? SHARED_DATABASE_MEMORY_MS : undefined;
}

/** Counted in the database where several instances share it (the limits hold for the deployment), in this process otherwise. */
function tokenLimiter(store: Store, limits: TokenLimits): TokenAttemptLimiter {
  return store.sharedTokenLimiter?.(limits) ?? new MemoryTokenLimiter(limits);
}

export async function createContext(config: ServerConfig, store?: Store): Promise<ServerContext> {
  const opened = store ?? (await openStore(config));
  const { keys, tenantId, linkKey, webhookSecretKey } = await prepareStore(opened, config.masterKeys, memoryFor(opened));
  const tokens = new TokenService(keys, {
    issuer: config.publicUrl,
    audience: config.audience,
    lifetimeSeconds: config.tokenLifetimeSeconds,
    tenantId,
    externalIssuer: config.externalIssuer,
  });
  const webhookSecrets = new SecretBox(webhookSecretKey);
  const callbackGuard = new CallbackGuard({ allowPrivate: config.allowPrivateCallbacks, loopbackHttp: config.allowLoopbackHttpCallbacks === true });
  const links = new Links(config.publicUrl, linkKey);
  const access = new AccessGuard(opened.clients, opened.patients, Date.now, memoryFor(opened));
  const documents = new DocumentService(opened, links, hasThumbnail);
  return {
    config,
    store: opened,
    keys,
    tokens,
    links,
    access,
    documents,
    directory: new DirectoryService(opened),
    tokenLimiter: tokenLimiter(opened, {
      requestsPerClientAndSource: config.tokenRateLimitPerMinute,
      failuresPerSource: config.tokenAddressFailuresPerMinute,
      failuresPerClient: config.tokenClientFailuresPerMinute,
    }),
    secretVerifier: new SecretVerifier({ threads: config.secretVerifyThreads, queue: config.secretVerifyQueue }),
    tenantId,
    content: await createContentParts(config, opened, { documents, access, links, renderer: { hasThumbnail, renderThumbnail } }),
    webhooks: new WebhookService(opened.webhooks, webhookSecrets, callbackGuard),
    webhookSecrets,
    callbackGuard,
    audit: auditLog(opened, config),
  };
}
