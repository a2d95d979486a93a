/** The embedded Store: SQLite through better-sqlite3, one connection, WAL. */
import type { Store } from '../types.js';
import { openSqlite, type SqliteDatabase } from './database.js';
import { CASE_FOLDED_KEYS_MIGRATION, CORE_MIGRATIONS, DOCUMENTS_BY_FOLDER_MIGRATION, LOOK_ALIKE_KEYS_MIGRATION, PATIENT_IDENTIFIERS_MIGRATION, SCANNED_AT_MIGRATION, type Migration } from './migrations.js';
import { SqliteOrganizations, SqlitePatients, SqliteClients, SqliteOrders, SqliteMeta, SqliteSigningKeys } from './directory.js';
import { CONTENT_LOST_MIGRATION, CONTENT_MIGRATION, SqliteDocumentContent, THUMBNAIL_RENDERS_MIGRATION } from './content-repository.js';
import { SqliteDocuments } from './document-repository.js';
import { SqliteOutbox } from './outbox.js';
import { AUDIT_MIGRATION, SqliteAudit } from './audit.js';
import { ChangeWatch } from './change-watch.js';
import { SqliteWebhooks, WEBHOOK_LEAN_MESSAGES_MIGRATION, WEBHOOK_MIGRATION } from './webhooks.js';

const OPTIMIZE_EVERY_MS = 6 * 60 * 60 * 1000;

export const SQLITE_MIGRATIONS: Migration[] = [...CORE_MIGRATIONS, WEBHOOK_MIGRATION, CONTENT_MIGRATION, WEBHOOK_LEAN_MESSAGES_MIGRATION, DOCUMENTS_BY_FOLDER_MIGRATION, CASE_FOLDED_KEYS_MIGRATION, AUDIT_MIGRATION, CONTENT_LOST_MIGRATION, LOOK_ALIKE_KEYS_MIGRATION, PATIENT_IDENTIFIERS_MIGRATION, SCANNED_AT_MIGRATION, THUMBNAIL_RENDERS_MIGRATION];

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
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

  constructor(readonly db: SqliteDatabase) {
    this.outbox = new SqliteOutbox(db);
    this.organizations = new SqliteOrganizations(db);
    this.changes = new ChangeWatch(db);
    this.patients = new SqlitePatients(db, this.outbox, this.changes);
    this.clients = new SqliteClients(db);
    this.documents = new SqliteDocuments(db, this.outbox, this.patients);
    this.audit = new SqliteAudit(db);
    this.content = new SqliteDocumentContent(db, this.outbox, this.audit);
    this.orders = new SqliteOrders(db, this.outbox);
    this.signingKeys = new SqliteSigningKeys(db);
    this.meta = new SqliteMeta(db);
    this.webhooks = new SqliteWebhooks(db);
  }

  /** Whether anything was written since a value was read (SqlitePatients keeps access by it; the audit sink asks it too). */
  readonly changes: ChangeWatch;

  /** Rows this connection (the request thread's) has written since it opened; asking takes no lock. */
  ownChanges(): number {
    return this.changes.ownChanges();
  }

  static open(file: string): SqliteStore {
    return new SqliteStore(openSqlite(file, SQLITE_MIGRATIONS));
  }

  /** One server per data folder (server.lock) and SQLite's write lock already keep starts apart. */
  exclusively<T>(work: () => Promise<T>): Promise<T> {
    return work();
  }

  /** Keeps planner statistics current on a server that runs for weeks (usually a no-op). */
  private readonly optimizer = setInterval(() => this.optimize(), OPTIMIZE_EVERY_MS).unref();

  private optimize(): void {
    try {
      if (this.db.open && !this.db.readonly) this.db.pragma('optimize');
    } catch {
      // Statistics are an optimization: a busy or read-only moment just skips this round.
    }
  }

  /**
   * How long a write waits for another process's write lock (the admin CLI, a backup) before
   * SQLITE_BUSY. better-sqlite3 waits synchronously, so the server's event loop stands still
   * meanwhile: every request, reads and downloads included, waits with it.
   */
  setBusyTimeout(ms: number): void {
    this.db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(ms))}`);
  }

  async close(): Promise<void> {
    clearInterval(this.optimizer);
    this.optimize();
    this.db.close();
  }
}
