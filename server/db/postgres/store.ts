/**
 * The Store on PostgreSQL (15 or newer), for one or several server instances on one database.
 * Nothing is remembered in this process that another instance's write could make stale: every
 * read goes to the database (the search-page cache above it is proven current by the patient's
 * change counter, which lives in the database).
 */
import type { TokenLimits } from '../../identity/rate-limit.js';
import type { Store } from '../types.js';
import { PostgresAudit } from './audit.js';
import { PostgresDocumentContent } from './content-repository.js';
import { PostgresDatabase, type PostgresOptions } from './database.js';
import { PostgresClients, PostgresMeta, PostgresOrders, PostgresOrganizations, PostgresPatients, PostgresSigningKeys } from './directory.js';
import { PostgresDocuments } from './document-repository.js';
import { migrate } from './migrations.js';
import { PostgresWorkLeases } from './leases.js';
import { WorkNotifications } from './notifications.js';
import { PostgresOutbox } from './outbox.js';
import { PostgresTokenLimiter } from './token-limits.js';
import { PostgresWebhooks } from './webhooks.js';

/** "PDSTART": the first steps of a start (keys, secrets, the seed file), one instance at a time. */
const START_LOCK = 0x50445354;

export interface PostgresStoreOptions extends PostgresOptions {
  /** How long a claimed webhook message stays with the instance that claimed it (PostgresWebhooks). */
  webhookLeaseMs?: number;
}

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly organizations;
  readonly patients;
  readonly clients;
  readonly documents;
  readonly content;
  readonly orders;
  readonly outbox;
  readonly signingKeys;
  readonly meta;
  readonly webhooks;
  readonly audit;
  readonly leases;
  /** The one listening connection of this instance (NOTIFY between instances). */
  readonly notifications;

  constructor(
    readonly db: PostgresDatabase,
    options: PostgresStoreOptions = {},
  ) {
    this.notifications = new WorkNotifications(db.url, options.connectTimeoutMs ?? 5000);
    this.outbox = new PostgresOutbox(db, this.notifications);
    this.organizations = new PostgresOrganizations(db);
    this.patients = new PostgresPatients(db, this.outbox);
    this.clients = new PostgresClients(db);
    this.documents = new PostgresDocuments(db, this.outbox);
    this.audit = new PostgresAudit(db);
    this.content = new PostgresDocumentContent(db, this.outbox, this.audit);
    this.orders = new PostgresOrders(db, this.outbox);
    this.signingKeys = new PostgresSigningKeys(db);
    this.meta = new PostgresMeta(db);
    this.webhooks = new PostgresWebhooks(db, { leaseMs: options.webhookLeaseMs ?? 60_000 }, this.notifications);
    this.leases = new PostgresWorkLeases(db, this.notifications.origin);
  }

  /** Connects and applies pending migrations (once across instances starting together). */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const db = new PostgresDatabase(url, options);
    try {
      await migrate(db);
      return new PostgresStore(db, options);
    } catch (error) {
      await db.close().catch(() => undefined);
      throw error;
    }
  }

  sharedTokenLimiter(limits: TokenLimits): PostgresTokenLimiter {
    return new PostgresTokenLimiter(this.db, limits);
  }

  exclusively<T>(work: () => Promise<T>): Promise<T> {
    return this.db.withLock(START_LOCK, work);
  }

  async close(): Promise<void> {
    this.notifications.close();
    await this.db.close();
  }
}
