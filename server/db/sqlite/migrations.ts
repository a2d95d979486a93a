/**
 * SQLite schema, as ordered migrations. A migration is applied once, in a transaction, and
 * recorded in schema_migrations by name. Areas append their own lists (see store.ts).
 */
export interface Migration {
  name: string;
  sql: string;
  /**
   * Rebuilds a table other tables reference (SQLite's 12-step ALTER): foreign keys are switched off
   * around the migration's transaction and checked in full before it commits.
   */
  rebuildsReferencedTable?: boolean;
}

/** Keep patient_document_counts right on every write to documents (migrations 001b and 005). */
const DOCUMENT_COUNT_TRIGGERS = `
      CREATE TRIGGER documents_count_insert AFTER INSERT ON documents WHEN NEW.deleted_at IS NULL BEGIN
        INSERT INTO patient_document_counts (patient_id, has_content, documents) VALUES (NEW.patient_id, NEW.has_content, 1)
          ON CONFLICT (patient_id, has_content) DO UPDATE SET documents = documents + 1;
      END;
      CREATE TRIGGER documents_count_delete AFTER DELETE ON documents WHEN OLD.deleted_at IS NULL BEGIN
        UPDATE patient_document_counts SET documents = documents - 1 WHERE patient_id = OLD.patient_id AND has_content = OLD.has_content;
      END;
      CREATE TRIGGER documents_count_update AFTER UPDATE OF has_content, deleted_at, patient_id ON documents BEGIN
        UPDATE patient_document_counts SET documents = documents - 1
          WHERE OLD.deleted_at IS NULL AND patient_id = OLD.patient_id AND has_content = OLD.has_content;
        INSERT INTO patient_document_counts (patient_id, has_content, documents)
          SELECT NEW.patient_id, NEW.has_content, 1 WHERE NEW.deleted_at IS NULL
          ON CONFLICT (patient_id, has_content) DO UPDATE SET documents = documents + 1;
      END;
`;

/** Bump a patient's change counter on every write to its documents (migrations 001d and 005). */
const DOCUMENT_VERSION_TRIGGERS = `
      CREATE TRIGGER documents_version_insert AFTER INSERT ON documents BEGIN
        INSERT INTO patient_document_versions (patient_id, version) VALUES (NEW.patient_id, 1)
          ON CONFLICT (patient_id) DO UPDATE SET version = version + 1;
      END;
      CREATE TRIGGER documents_version_update AFTER UPDATE ON documents BEGIN
        INSERT INTO patient_document_versions (patient_id, version) VALUES (NEW.patient_id, 1)
          ON CONFLICT (patient_id) DO UPDATE SET version = version + 1;
        INSERT INTO patient_document_versions (patient_id, version) SELECT OLD.patient_id, 1 WHERE OLD.patient_id <> NEW.patient_id
          ON CONFLICT (patient_id) DO UPDATE SET version = version + 1;
      END;
      CREATE TRIGGER documents_version_delete AFTER DELETE ON documents BEGIN
        INSERT INTO patient_document_versions (patient_id, version) VALUES (OLD.patient_id, 1)
          ON CONFLICT (patient_id) DO UPDATE SET version = version + 1;
      END;
`;

export const CORE_MIGRATIONS: Migration[] = [
  {
    name: '001-core',
    sql: `
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

      CREATE TABLE organizations (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_at TEXT NOT NULL
      ) WITHOUT ROWID;

      CREATE TABLE patients (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      ) WITHOUT ROWID;

      CREATE TABLE patient_organizations (
        patient_id TEXT NOT NULL REFERENCES patients(id),
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        PRIMARY KEY (patient_id, organization_id)
      ) WITHOUT ROWID;
      CREATE INDEX patient_organizations_by_org ON patient_organizations(organization_id, patient_id);

      CREATE TABLE patient_consents (
        patient_id TEXT NOT NULL REFERENCES patients(id),
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        granted_at TEXT NOT NULL,
        PRIMARY KEY (patient_id, organization_id)
      ) WITHOUT ROWID;

      CREATE TABLE clients (
        client_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        secret_hash TEXT NOT NULL,
        scopes TEXT NOT NULL,
        created_at TEXT NOT NULL,
        disabled_at TEXT
      ) WITHOUT ROWID;

      CREATE TABLE client_organizations (
        client_id TEXT NOT NULL REFERENCES clients(client_id),
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        PRIMARY KEY (client_id, organization_id)
      ) WITHOUT ROWID;

      CREATE TABLE documents (
        id TEXT PRIMARY KEY,
        patient_id TEXT NOT NULL REFERENCES patients(id),
        organization_id TEXT NOT NULL,
        file_name TEXT NOT NULL,
        name_key TEXT NOT NULL,
        file_type TEXT NOT NULL,
        path TEXT NOT NULL,
        path_key TEXT NOT NULL,
        created_at TEXT NOT NULL,
        last_modified_at TEXT NOT NULL,
        has_content INTEGER NOT NULL DEFAULT 0,
        file_size INTEGER,
        sha256 TEXT,
        version INTEGER NOT NULL DEFAULT 0,
        content_key TEXT,
        content_type TEXT,
        thumbnail_key TEXT,
        created_by TEXT NOT NULL,
        deleted_at TEXT
      ) WITHOUT ROWID;
      -- One live document per (patient, folder, name), case-insensitively.
      CREATE UNIQUE INDEX documents_unique_name ON documents(patient_id, path_key, name_key) WHERE deleted_at IS NULL;
      -- Whole-patient listing sorted by time: an index walk, no sort.
      CREATE INDEX documents_by_modified ON documents(patient_id, last_modified_at, id) WHERE deleted_at IS NULL;
      -- Folder filter: a range over path_key ('/a' and '/a/' .. '/a0').
      CREATE INDEX documents_by_path ON documents(patient_id, path_key, last_modified_at, id) WHERE deleted_at IS NULL;

      CREATE TABLE orders (
        id TEXT PRIMARY KEY,
        patient_id TEXT NOT NULL REFERENCES patients(id),
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      ) WITHOUT ROWID;

      -- Transactional outbox: written in the same transaction as the change that caused it.
      CREATE TABLE outbox_events (
        sequence INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        event_type TEXT NOT NULL,
        patient_id TEXT,
        organization_id TEXT,
        operation_id TEXT NOT NULL,
        occurred_at TEXT NOT NULL,
        data TEXT NOT NULL
      );

      CREATE TABLE signing_keys (
        kid TEXT PRIMARY KEY,
        private_jwk TEXT NOT NULL,
        public_jwk TEXT NOT NULL,
        created_at TEXT NOT NULL,
        retired_at TEXT
      ) WITHOUT ROWID;
    `,
  },
  {
    // Whole-patient totals without counting 100,000 index entries per search: kept by triggers, so
    // every writer (create, upload, delete, and any later code) keeps them right without knowing.
    name: '001b-patient-document-counts',
    sql: `
      CREATE TABLE patient_document_counts (
        patient_id TEXT NOT NULL,
        has_content INTEGER NOT NULL,
        documents INTEGER NOT NULL,
        PRIMARY KEY (patient_id, has_content)
      ) WITHOUT ROWID;
      INSERT INTO patient_document_counts (patient_id, has_content, documents)
        SELECT patient_id, has_content, COUNT(*) FROM documents WHERE deleted_at IS NULL GROUP BY patient_id, has_content;
      ${DOCUMENT_COUNT_TRIGGERS}
    `,
  },
  {
    // Covering indexes: every filter and sort column rides in the index, so a search sorts and
    // pages ids without touching the table, then reads only the rows of the one page it returns.
    name: '001c-covering-search-indexes',
    sql: `
      DROP INDEX documents_by_modified;
      DROP INDEX documents_by_path;
      CREATE INDEX documents_by_modified ON documents(patient_id, last_modified_at, id, has_content, file_type, name_key, path_key, file_size)
        WHERE deleted_at IS NULL;
      CREATE INDEX documents_by_path ON documents(patient_id, path_key, last_modified_at, id, has_content, file_type, name_key, file_size)
        WHERE deleted_at IS NULL;
    `,
  },
  {
    // A per-patient change counter, bumped by triggers on every write to that patient's documents,
    // so a cached search result can be proven current with one primary-key read.
    name: '001d-patient-document-versions',
    sql: `
      CREATE TABLE patient_document_versions (patient_id TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID;
      ${DOCUMENT_VERSION_TRIGGERS}
    `,
  },
];

/**
 * A folder's documents stored together: the table is keyed by (patient, folder, id) instead of the
 * random id alone, so the page of a folder is a few neighbouring table pages rather than fifty
 * random reads, and new documents of one folder land on the same pages. The id keeps a unique
 * index (lookups by id, and the parent key of document_versions). The covering search indexes
 * gain deleted_at: SQLite counts a partial index as covering only if it holds every column the
 * query names, including the one in the index's own WHERE, and otherwise reads the table row of
 * every index entry it walks.
 */
export const DOCUMENTS_BY_FOLDER_MIGRATION: Migration = {
  name: '005-documents-by-folder',
  rebuildsReferencedTable: true,
  sql: `
    CREATE TABLE documents_by_folder (
      id TEXT NOT NULL,
      patient_id TEXT NOT NULL REFERENCES patients(id),
      organization_id TEXT NOT NULL,
      file_name TEXT NOT NULL,
      name_key TEXT NOT NULL,
      file_type TEXT NOT NULL,
      path TEXT NOT NULL,
      path_key TEXT NOT NULL,
      created_at TEXT NOT NULL,
      last_modified_at TEXT NOT NULL,
      has_content INTEGER NOT NULL DEFAULT 0,
      file_size INTEGER,
      sha256 TEXT,
      version INTEGER NOT NULL DEFAULT 0,
      content_key TEXT,
      content_type TEXT,
      thumbnail_key TEXT,
      created_by TEXT NOT NULL,
      deleted_at TEXT,
      deleted_by TEXT,
      PRIMARY KEY (patient_id, path_key, id)
    ) WITHOUT ROWID;
    INSERT INTO documents_by_folder (id, patient_id, organization_id, file_name, name_key, file_type, path, path_key, created_at,
        last_modified_at, has_content, file_size, sha256, version, content_key, content_type, thumbnail_key, created_by, deleted_at, deleted_by)
      SELECT id, patient_id, organization_id, file_name, name_key, file_type, path, path_key, created_at,
        last_modified_at, has_content, file_size, sha256, version, content_key, content_type, thumbnail_key, created_by, deleted_at, deleted_by
      FROM documents ORDER BY patient_id, path_key, id;
    DROP TABLE documents;
    ALTER TABLE documents_by_folder RENAME TO documents;
    CREATE UNIQUE INDEX documents_by_id ON documents(id);
    CREATE UNIQUE INDEX documents_unique_name ON documents(patient_id, path_key, name_key) WHERE deleted_at IS NULL;
    CREATE INDEX documents_by_modified ON documents(patient_id, last_modified_at, id, has_content, file_type, name_key, path_key, file_size, deleted_at)
      WHERE deleted_at IS NULL;
    CREATE INDEX documents_by_path ON documents(patient_id, path_key, last_modified_at, id, has_content, file_type, name_key, file_size, deleted_at)
      WHERE deleted_at IS NULL;
    ${DOCUMENT_COUNT_TRIGGERS}
    ${DOCUMENT_VERSION_TRIGGERS}
  `,
};

/**
 * Keys folded again after foldKey learned Unicode's simple case folding (final sigma, long s, micro
 * sign…): only names and paths with a character beyond ASCII can change. Two documents that the new
 * keys make one name (stored before, when they were two) keep their old keys — UPDATE OR IGNORE
 * skips the later row instead of failing the start — and a new clash with them is refused.
 * `fold_key` is foldKey, registered on the connection by openSqlite.
 */
export const CASE_FOLDED_KEYS_MIGRATION: Migration = {
  name: '006-case-folded-keys',
  sql: `
    UPDATE OR IGNORE documents SET name_key = fold_key(file_name), path_key = fold_key(path)
      WHERE (file_name GLOB '*[^ -~]*' OR path GLOB '*[^ -~]*') AND (name_key <> fold_key(file_name) OR path_key <> fold_key(path));
    UPDATE patients SET name_key = fold_key(name) WHERE name GLOB '*[^ -~]*' AND name_key <> fold_key(name);
  `,
};

/**
 * Keys folded again after foldKey learned look-alikes (docs/security.md "Names that look alike"):
 * compatibility forms (fullwidth letters, ligatures, other spaces), full case folding (ß = ss),
 * invisible characters left out and the dots that end a name or folder dropped. Only names and
 * paths with a character beyond ASCII, or with a trailing dot, can change.
 *
 * Two stored documents that the new key makes one name both stay, reachable by id, search and
 * download as before: the one whose key is unchanged (or is changed first) holds the new key, and
 * the other keeps its old key (UPDATE OR IGNORE skips it instead of failing the start). Nothing is
 * renamed or hidden; a new document under either name is refused as a clash (409).
 */
export const LOOK_ALIKE_KEYS_MIGRATION: Migration = {
  name: '009-look-alike-keys',
  sql: `
    UPDATE OR IGNORE documents SET name_key = fold_key(file_name), path_key = fold_key(path)
      WHERE (file_name GLOB '*[^ -~]*' OR path GLOB '*[^ -~]*' OR file_name GLOB '*.' OR path GLOB '*.' OR path GLOB '*./*')
        AND (name_key <> fold_key(file_name) OR path_key <> fold_key(path));
    UPDATE patients SET name_key = fold_key(name) WHERE (name GLOB '*[^ -~]*' OR name GLOB '*.') AND name_key <> fold_key(name);
  `,
};

/**
 * Patients' identifiers and birth dates (docs/api.md "Patient identifiers"). `patient_identifiers`
 * keeps each patient's list in its order; `patient_identifier_owners` holds one row per
 * (organization with access, system, value), so its primary key is the rule "unique per
 * organization and system" and a second patient of that organization with the same identifier
 * cannot be written, whoever writes first.
 */
export const PATIENT_IDENTIFIERS_MIGRATION: Migration = {
  name: '010-patient-identifiers',
  sql: `
    ALTER TABLE patients ADD COLUMN birth_date TEXT;
    CREATE INDEX patients_by_birth_date ON patients(birth_date, name_key) WHERE birth_date IS NOT NULL;

    CREATE TABLE patient_identifiers (
      patient_id TEXT NOT NULL REFERENCES patients(id),
      system TEXT NOT NULL,
      value TEXT NOT NULL,
      position INTEGER NOT NULL,
      PRIMARY KEY (patient_id, system, value)
    ) WITHOUT ROWID;
    CREATE INDEX patient_identifiers_by_value ON patient_identifiers(system, value, patient_id);

    CREATE TABLE patient_identifier_owners (
      organization_id TEXT NOT NULL,
      system TEXT NOT NULL,
      value TEXT NOT NULL,
      patient_id TEXT NOT NULL REFERENCES patients(id),
      PRIMARY KEY (organization_id, system, value)
    ) WITHOUT ROWID;
    CREATE INDEX patient_identifier_owners_by_patient ON patient_identifier_owners(patient_id);
  `,
};

/**
 * Scan times (docs/api.md "Scan times"): when the file was made, as a client says on create or
 * upload, on the document and on each version. Null for what was stored before: those documents
 * count by their last upload, as documents no client dates do.
 */
export const SCANNED_AT_MIGRATION: Migration = {
  name: '011-scanned-at',
  sql: `
    ALTER TABLE documents ADD COLUMN scanned_at TEXT;
    ALTER TABLE document_versions ADD COLUMN scanned_at TEXT;
  `,
};
