/**
 * PostgreSQL schema, as ordered migrations recorded in schema_migrations by name. Several instances
 * may start at the same moment: the first to take the advisory lock applies what is pending, each
 * migration in its own transaction; the others wait for it and then find nothing left to do.
 *
 * Text that is compared or ranged byte-wise (ids, folded names and paths, ISO timestamps) is
 * `COLLATE "C"`: the database's default collation may be linguistic (en_US, ICU), whose order is
 * not the order SQLite and the search's folder ranges rely on.
 */
import { NewerDatabaseError, SERVER_VERSION } from '../sqlite/database.js';
import type { PostgresDatabase } from './database.js';

export interface PostgresMigration {
  name: string;
  sql: string;
}

/** The advisory lock key of schema changes (an arbitrary constant: "PDMIGRAT"). */
export const MIGRATION_LOCK = 0x50444d49;

/** Text kept in byte order. */
const C = 'text COLLATE "C"';

/**
 * Per-patient totals (patient_document_counts, by has_content) and the patient's change counter
 * (patient_document_versions), kept right by one trigger on every write to documents, as in
 * SQLite. Each is an upsert of one row, which PostgreSQL locks until the transaction ends: two
 * transactions writing one patient's documents at once update it one after the other, each from
 * the other's committed value, so no increment is lost.
 */
const DOCUMENT_TRIGGERS = `
  CREATE FUNCTION documents_keep_counts() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (OLD.patient_id, OLD.has_content, OLD.deleted_at IS NULL) IS DISTINCT FROM (NEW.patient_id, NEW.has_content, NEW.deleted_at IS NULL)) THEN
      IF OLD.deleted_at IS NULL THEN
        UPDATE patient_document_counts SET documents = documents - 1 WHERE patient_id = OLD.patient_id AND has_content = OLD.has_content;
      END IF;
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND (OLD.patient_id, OLD.has_content, OLD.deleted_at IS NULL) IS DISTINCT FROM (NEW.patient_id, NEW.has_content, NEW.deleted_at IS NULL)) THEN
      IF NEW.deleted_at IS NULL THEN
        INSERT INTO patient_document_counts (patient_id, has_content, documents) VALUES (NEW.patient_id, NEW.has_content, 1)
          ON CONFLICT (patient_id, has_content) DO UPDATE SET documents = patient_document_counts.documents + 1;
      END IF;
    END IF;
    IF TG_OP <> 'DELETE' THEN
      INSERT INTO patient_document_versions (patient_id, version) VALUES (NEW.patient_id, 1)
        ON CONFLICT (patient_id) DO UPDATE SET version = patient_document_versions.version + 1;
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.patient_id <> NEW.patient_id) THEN
      INSERT INTO patient_document_versions (patient_id, version) VALUES (OLD.patient_id, 1)
        ON CONFLICT (patient_id) DO UPDATE SET version = patient_document_versions.version + 1;
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER documents_keep_counts AFTER INSERT OR UPDATE OR DELETE ON documents FOR EACH ROW EXECUTE FUNCTION documents_keep_counts();
`;

export const POSTGRES_MIGRATIONS: PostgresMigration[] = [
  {
    name: '001-schema',
    sql: `
      CREATE TABLE meta (key ${C} PRIMARY KEY, value text NOT NULL);

      CREATE TABLE organizations (id ${C} PRIMARY KEY, name text NOT NULL, created_at ${C} NOT NULL);

      CREATE TABLE patients (
        id ${C} PRIMARY KEY,
        name text NOT NULL,
        name_key ${C} NOT NULL,
        created_at ${C} NOT NULL,
        updated_at ${C} NOT NULL
      );
      CREATE INDEX patients_by_name ON patients(name_key, id);

      CREATE TABLE patient_organizations (
        patient_id ${C} NOT NULL REFERENCES patients(id),
        organization_id ${C} NOT NULL REFERENCES organizations(id),
        PRIMARY KEY (patient_id, organization_id)
      );
      CREATE INDEX patient_organizations_by_org ON patient_organizations(organization_id, patient_id);

      CREATE TABLE patient_consents (
        patient_id ${C} NOT NULL REFERENCES patients(id),
        organization_id ${C} NOT NULL REFERENCES organizations(id),
        granted_at ${C} NOT NULL,
        PRIMARY KEY (patient_id, organization_id)
      );

      CREATE TABLE clients (
        client_id ${C} PRIMARY KEY,
        name text NOT NULL,
        secret_hash text NOT NULL,
        scopes text NOT NULL,
        created_at ${C} NOT NULL,
        disabled_at ${C}
      );

      CREATE TABLE client_organizations (
        client_id ${C} NOT NULL REFERENCES clients(client_id),
        organization_id ${C} NOT NULL REFERENCES organizations(id),
        PRIMARY KEY (client_id, organization_id)
      );

      CREATE TABLE documents (
        id ${C} PRIMARY KEY,
        patient_id ${C} NOT NULL REFERENCES patients(id),
        organization_id ${C} NOT NULL,
        file_name text NOT NULL,
        name_key ${C} NOT NULL,
        file_type ${C} NOT NULL,
        path text NOT NULL,
        path_key ${C} NOT NULL,
        created_at ${C} NOT NULL,
        last_modified_at ${C} NOT NULL,
        has_content boolean NOT NULL DEFAULT false,
        file_size bigint,
        sha256 ${C},
        version integer NOT NULL DEFAULT 0,
        content_key ${C},
        content_type text,
        thumbnail_key ${C},
        created_by ${C} NOT NULL,
        deleted_at ${C},
        deleted_by ${C}
      );
      -- One live document per (patient, folder, name), case-insensitively (the keys are folded).
      CREATE UNIQUE INDEX documents_unique_name ON documents(patient_id, path_key, name_key) WHERE deleted_at IS NULL;
      -- Each sort of a patient's documents is an index walk that stops after one page. Nulls
      -- (placeholders' sizes) sort first ascending, as in SQLite.
      CREATE INDEX documents_by_modified ON documents(patient_id, last_modified_at, id) WHERE deleted_at IS NULL;
      CREATE INDEX documents_by_path ON documents(patient_id, path_key, id) WHERE deleted_at IS NULL;
      CREATE INDEX documents_by_name ON documents(patient_id, name_key, id) WHERE deleted_at IS NULL;
      CREATE INDEX documents_by_size ON documents(patient_id, file_size NULLS FIRST, id) WHERE deleted_at IS NULL;
      CREATE INDEX documents_by_type ON documents(patient_id, file_type, id) WHERE deleted_at IS NULL;

      CREATE TABLE patient_document_counts (
        patient_id ${C} NOT NULL,
        has_content boolean NOT NULL,
        documents bigint NOT NULL,
        PRIMARY KEY (patient_id, has_content)
      );
      CREATE TABLE patient_document_versions (patient_id ${C} PRIMARY KEY, version bigint NOT NULL);
      ${DOCUMENT_TRIGGERS}

      CREATE TABLE document_versions (
        document_id ${C} NOT NULL REFERENCES documents(id),
        version integer NOT NULL,
        file_type ${C} NOT NULL,
        original_file_name text,
        file_size bigint NOT NULL,
        sha256 ${C} NOT NULL,
        content_key ${C} NOT NULL,
        content_type text NOT NULL,
        thumbnail_key ${C},
        thumbnail_status ${C} NOT NULL,
        thumbnail_error text,
        uploaded_at ${C} NOT NULL,
        uploaded_by ${C} NOT NULL,
        content_lost_at ${C},
        content_lost_reason text,
        PRIMARY KEY (document_id, version)
      );
      CREATE INDEX document_versions_by_content_key ON document_versions(content_key);
      CREATE INDEX document_versions_by_thumbnail_key ON document_versions(thumbnail_key) WHERE thumbnail_key IS NOT NULL;
      CREATE INDEX document_versions_pending ON document_versions(uploaded_at) WHERE thumbnail_status = 'pending';

      CREATE TABLE orders (
        id ${C} PRIMARY KEY,
        patient_id ${C} NOT NULL REFERENCES patients(id),
        organization_id ${C} NOT NULL REFERENCES organizations(id),
        status text NOT NULL,
        created_at ${C} NOT NULL,
        updated_at ${C} NOT NULL
      );

      -- Transactional outbox: written in the same transaction as the change that caused it. Writers
      -- take OUTBOX_LOCK before appending (see outbox.ts), so sequence order is commit order.
      CREATE TABLE outbox_events (
        sequence bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id ${C} NOT NULL UNIQUE,
        event_type ${C} NOT NULL,
        patient_id ${C},
        organization_id ${C},
        operation_id ${C} NOT NULL,
        occurred_at ${C} NOT NULL,
        data text NOT NULL
      );

      CREATE TABLE signing_keys (
        kid ${C} PRIMARY KEY,
        private_jwk text NOT NULL,
        public_jwk text NOT NULL,
        created_at ${C} NOT NULL,
        retired_at ${C}
      );

      CREATE TABLE webhook_subscriptions (
        id ${C} PRIMARY KEY,
        organization_id ${C} NOT NULL,
        client_id ${C} NOT NULL,
        events text NOT NULL,
        callback text NOT NULL,
        sealed_secret text NOT NULL,
        status ${C} NOT NULL,
        disabled_reason text,
        created_at ${C} NOT NULL,
        from_sequence bigint NOT NULL,
        deleted_at ${C}
      );
      CREATE INDEX webhook_subscriptions_by_org ON webhook_subscriptions(organization_id, created_at);

      -- One message per (event, subscription), however many instances fan the event out.
      CREATE TABLE webhook_messages (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id ${C} NOT NULL,
        subscription_id ${C} NOT NULL REFERENCES webhook_subscriptions(id),
        event_id ${C} NOT NULL,
        event_type ${C} NOT NULL,
        patient_id ${C},
        body text,
        state ${C} NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at bigint NOT NULL,
        created_at ${C} NOT NULL,
        updated_at ${C} NOT NULL,
        last_status integer,
        last_error text,
        UNIQUE (event_id, subscription_id)
      );
      CREATE INDEX webhook_messages_by_id ON webhook_messages(subscription_id, id);
      CREATE INDEX webhook_messages_pending ON webhook_messages(subscription_id, next_attempt_at) WHERE state = 'pending';
      CREATE INDEX webhook_messages_dead ON webhook_messages(subscription_id, updated_at) WHERE state = 'dead';

      CREATE TABLE webhook_attempts (
        sequence bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        message_id ${C} NOT NULL,
        subscription_id ${C} NOT NULL,
        attempt integer NOT NULL,
        attempted_at ${C} NOT NULL,
        status_code integer,
        latency_ms integer NOT NULL,
        error text,
        outcome ${C} NOT NULL
      );
      CREATE INDEX webhook_attempts_by_subscription ON webhook_attempts(subscription_id, sequence);

      CREATE TABLE webhook_cursor (id integer PRIMARY KEY CHECK (id = 1), sequence bigint NOT NULL);

      CREATE TABLE audit_log (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at ${C} NOT NULL,
        action ${C} NOT NULL,
        outcome ${C} NOT NULL,
        status integer NOT NULL,
        organization_id ${C},
        client_id ${C},
        patient_id ${C},
        document_id ${C},
        version integer,
        request_id ${C} NOT NULL,
        remote_address text,
        detail text
      );
      CREATE INDEX audit_log_by_patient ON audit_log(patient_id, at, id);
      CREATE INDEX audit_log_by_document ON audit_log(document_id, at, id) WHERE document_id IS NOT NULL;
      CREATE INDEX audit_log_by_client ON audit_log(client_id, at, id);
      CREATE INDEX audit_log_by_time ON audit_log(at, id);
    `,
  },
  {
    // Patients' identifiers and birth dates (docs/api.md "Patient identifiers"), as in SQLite's
    // 010: the owners' primary key is the rule "unique per organization and system".
    name: '002-patient-identifiers',
    sql: `
      ALTER TABLE patients ADD COLUMN birth_date ${C};
      CREATE INDEX patients_by_birth_date ON patients(birth_date, name_key) WHERE birth_date IS NOT NULL;

      CREATE TABLE patient_identifiers (
        patient_id ${C} NOT NULL REFERENCES patients(id),
        system ${C} NOT NULL,
        value ${C} NOT NULL,
        position integer NOT NULL,
        PRIMARY KEY (patient_id, system, value)
      );
      CREATE INDEX patient_identifiers_by_value ON patient_identifiers(system, value, patient_id);

      CREATE TABLE patient_identifier_owners (
        organization_id ${C} NOT NULL,
        system ${C} NOT NULL,
        value ${C} NOT NULL,
        patient_id ${C} NOT NULL REFERENCES patients(id),
        PRIMARY KEY (organization_id, system, value)
      );
      CREATE INDEX patient_identifier_owners_by_patient ON patient_identifier_owners(patient_id);
    `,
  },
  {
    // Scan times (docs/api.md "Scan times"), as SQLite's 011-scanned-at: null for what was stored before.
    name: '003-scanned-at',
    sql: `
      ALTER TABLE documents ADD COLUMN scanned_at ${C};
      ALTER TABLE document_versions ADD COLUMN scanned_at ${C};
    `,
  },
  {
    // The token endpoint's limits, counted for every instance together (token-limits.ts).
    name: '004-token-limits',
    sql: `CREATE TABLE token_limits (key ${C} PRIMARY KEY, window_start bigint NOT NULL, count integer NOT NULL);`,
  },
  {
    // Work one instance of several does at a time: clean-up, thumbnail renders, a resumable upload's writes (leases.ts).
    name: '005-work-leases',
    sql: `CREATE TABLE work_leases (key ${C} PRIMARY KEY, holder ${C} NOT NULL, until bigint NOT NULL);`,
  },
  {
    // Which live instance holds a webhook claim (webhooks.ts, notifications.ts): a dead one's claims are taken over at once.
    name: '006-webhook-claimants',
    sql: `
      ALTER TABLE webhook_messages ADD COLUMN claimed_by integer, ADD COLUMN claimed_at timestamptz;
      CREATE INDEX webhook_messages_claimed ON webhook_messages(claimed_by) WHERE state = 'pending' AND claimed_by IS NOT NULL;
    `,
  },
  {
    // How many processes started a version's thumbnail render, and the last of them, as SQLite's 012-thumbnail-renders.
    name: '007-thumbnail-renders',
    sql: `
      ALTER TABLE document_versions ADD COLUMN thumbnail_render_starts integer NOT NULL DEFAULT 0, ADD COLUMN thumbnail_render_by ${C};
    `,
  },
];

/** The database as a label for messages: its URL without the password. */
export function databaseLabel(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return 'the PostgreSQL database';
  }
}

/**
 * Applies pending migrations under the advisory lock; refuses (before any change) a database that
 * holds migrations this build does not know (written by a newer server).
 */
export async function migrate(db: PostgresDatabase, migrations: PostgresMigration[] = POSTGRES_MIGRATIONS): Promise<void> {
  await db.withLock(MIGRATION_LOCK, async () => {
    await db.run(`CREATE TABLE IF NOT EXISTS schema_migrations (name ${C} PRIMARY KEY, applied_at ${C} NOT NULL, app_version text)`);
    const applied = await db.rows<{ name: string; app_version: string | null; applied_at: string }>('SELECT name, app_version, applied_at FROM schema_migrations ORDER BY name');
    const known = new Set(migrations.map((migration) => migration.name));
    const unknown = applied.filter((row) => !known.has(row.name));
    if (unknown.length > 0) {
      const writtenBy = unknown.filter((row) => row.app_version !== null).sort((a, b) => b.applied_at.localeCompare(a.applied_at))[0]?.app_version ?? undefined;
      throw new NewerDatabaseError(databaseLabel(db.url), unknown.map((row) => row.name), writtenBy);
    }
    const done = new Set(applied.map((row) => row.name));
    for (const migration of migrations) {
      if (done.has(migration.name)) continue;
      await db.transaction(async (tx) => {
        await tx.run(migration.sql);
        await tx.run('INSERT INTO schema_migrations (name, applied_at, app_version) VALUES ($1, $2, $3)', [migration.name, new Date().toISOString(), SERVER_VERSION]);
      });
    }
  });
}
