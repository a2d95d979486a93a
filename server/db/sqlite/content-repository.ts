/**
 * Document content: committed versions (the history kept for audit), the current version on the
 * document row, thumbnails and deletion. Each state change writes its outbox events in the same
 * transaction; the version commit is a compare-and-set on the document's version, so two uploads
 * racing past every other check still cannot both win.
 */
import {
  markAuditEntry,
  NO_THUMBNAIL,
  type AuditAction,
  type DocumentContentRepository,
  type DocumentRecord,
  type DocumentVersionRecord,
  type LostContent,
  type MarkAudit,
  type OutboxEvent,
  type RestoredContent,
  type ThumbnailStatus,
} from '../types.js';
import type { SqliteAudit } from './audit.js';
import type { SqliteDatabase } from './database.js';
import { DOCUMENT_COLUMNS, documentFromColumns } from './document-repository.js';
import type { Migration } from './migrations.js';
import type { SqliteOutbox } from './outbox.js';

export const CONTENT_MIGRATION: Migration = {
  name: '002-content',
  sql: `
    CREATE TABLE document_versions (
      document_id TEXT NOT NULL REFERENCES documents(id),
      version INTEGER NOT NULL,
      file_type TEXT NOT NULL,
      original_file_name TEXT,
      file_size INTEGER NOT NULL,
      sha256 TEXT NOT NULL,
      content_key TEXT NOT NULL,
      content_type TEXT NOT NULL,
      thumbnail_key TEXT,
      thumbnail_status TEXT NOT NULL,
      thumbnail_error TEXT,
      uploaded_at TEXT NOT NULL,
      uploaded_by TEXT NOT NULL,
      PRIMARY KEY (document_id, version)
    ) WITHOUT ROWID;
    CREATE INDEX document_versions_by_content_key ON document_versions(content_key);
    CREATE INDEX document_versions_by_thumbnail_key ON document_versions(thumbnail_key) WHERE thumbnail_key IS NOT NULL;
    -- Thumbnails still to render after a restart.
    CREATE INDEX document_versions_pending ON document_versions(uploaded_at) WHERE thumbnail_status = 'pending';
    ALTER TABLE documents ADD COLUMN deleted_by TEXT;
  `,
};

/**
 * How many processes started a version's thumbnail render, and the last of them: a render that takes
 * the server down is not started again and again (domain/thumbnail-jobs.ts).
 */
export const THUMBNAIL_RENDERS_MIGRATION: Migration = {
  name: '012-thumbnail-renders',
  sql: `
    ALTER TABLE document_versions ADD COLUMN thumbnail_render_starts INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE document_versions ADD COLUMN thumbnail_render_by TEXT;
  `,
};

/**
 * A version whose stored file was found missing or damaged and marked so (admin `verify
 * --mark-lost`): verify lists it apart from new problems, and its document, when it was the
 * current version, no longer counts as having content.
 */
export const CONTENT_LOST_MIGRATION: Migration = {
  name: '008-content-lost',
  sql: `
    ALTER TABLE document_versions ADD COLUMN content_lost_at TEXT;
    ALTER TABLE document_versions ADD COLUMN content_lost_reason TEXT;
  `,
};

interface VersionRow {
  document_id: string;
  version: number;
  file_type: string;
  original_file_name: string | null;
  file_size: number;
  sha256: string;
  content_key: string;
  content_type: string;
  thumbnail_key: string | null;
  thumbnail_status: ThumbnailStatus;
  thumbnail_error: string | null;
  uploaded_at: string;
  uploaded_by: string;
  content_lost_at: string | null;
  scanned_at: string | null;
}

function versionFromRow(row: VersionRow): DocumentVersionRecord {
  return {
    documentId: row.document_id,
    version: row.version,
    fileType: row.file_type,
    originalFileName: row.original_file_name,
    fileSize: row.file_size,
    sha256: row.sha256,
    contentKey: row.content_key,
    contentType: row.content_type,
    thumbnailKey: row.thumbnail_key,
    thumbnailStatus: row.thumbnail_status,
    thumbnailError: row.thumbnail_error,
    uploadedAt: row.uploaded_at,
    uploadedBy: row.uploaded_by,
    contentLostAt: row.content_lost_at ?? null,
    scannedAt: row.scanned_at ?? null,
  };
}

export class SqliteDocumentContent implements DocumentContentRepository {
  private readonly statements;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly outbox: SqliteOutbox,
    private readonly audit: SqliteAudit,
  ) {
    this.statements = {
      find: db.prepare(`SELECT ${DOCUMENT_COLUMNS} FROM documents WHERE id = ? AND deleted_at IS NULL`).raw(),
      setCurrent: db.prepare(
        `UPDATE documents SET has_content = 1, file_size = @fileSize, sha256 = @sha256, version = @version, content_key = @contentKey,
           content_type = @contentType, file_type = @fileType, thumbnail_key = NULL, last_modified_at = @uploadedAt, scanned_at = @scannedAt
         WHERE id = @documentId AND version = @expectedVersion AND deleted_at IS NULL`,
      ),
      insertVersion: db.prepare(
        `INSERT INTO document_versions (document_id, version, file_type, original_file_name, file_size, sha256, content_key, content_type,
           thumbnail_key, thumbnail_status, thumbnail_error, uploaded_at, uploaded_by, scanned_at)
         VALUES (@documentId, @version, @fileType, @originalFileName, @fileSize, @sha256, @contentKey, @contentType,
           @thumbnailKey, @thumbnailStatus, @thumbnailError, @uploadedAt, @uploadedBy, @scannedAt)`,
      ),
      versions: db.prepare('SELECT * FROM document_versions WHERE document_id = ? ORDER BY version DESC'),
      version: db.prepare('SELECT * FROM document_versions WHERE document_id = ? AND version = ?'),
      setVersionThumbnail: db.prepare(
        `UPDATE document_versions SET thumbnail_status = @status, thumbnail_key = @key, thumbnail_error = @error,
           thumbnail_render_starts = 0, thumbnail_render_by = NULL
         WHERE document_id = @documentId AND version = @version`,
      ),
      startRender: db.prepare(
        `UPDATE document_versions SET thumbnail_render_starts = thumbnail_render_starts + (thumbnail_render_by IS NOT @by), thumbnail_render_by = @by
         WHERE document_id = @documentId AND version = @version AND thumbnail_status = 'pending'
         RETURNING thumbnail_render_starts AS starts`,
      ),
      setDocumentThumbnail: db.prepare('UPDATE documents SET thumbnail_key = @key WHERE id = @documentId AND version = @version'),
      pending: db.prepare(`SELECT * FROM document_versions WHERE thumbnail_status = 'pending' ORDER BY uploaded_at LIMIT +?`),
      remove: db.prepare('UPDATE documents SET deleted_at = @at, deleted_by = @by WHERE id = @id AND patient_id = @patientId AND deleted_at IS NULL'),
      // Also a deleted document's: its versions (and their marks) stay, and so does whose they are.
      owner: db.prepare('SELECT patient_id, organization_id FROM documents WHERE id = ?'),
      keyInUse: db.prepare('SELECT 1 FROM document_versions WHERE content_key = @key OR thumbnail_key = @key LIMIT 1'),
      markVersionLost: db.prepare(
        `UPDATE document_versions SET content_lost_at = @at, content_lost_reason = @reason
         WHERE document_id = @documentId AND version = @version AND content_key = @contentKey AND content_lost_at IS NULL`,
      ),
      // Back to a placeholder, keeping its id, name, path and version number: the next upload is the
      // next version. The triggers bump the patient's change counter, so no cached search page survives.
      unsetCurrent: db.prepare(
        `UPDATE documents SET has_content = 0, file_size = NULL, sha256 = NULL, content_key = NULL, content_type = NULL, thumbnail_key = NULL
         WHERE id = @documentId AND version = @version AND content_key = @contentKey AND has_content = 1 AND deleted_at IS NULL`,
      ),
      markVersionRestored: db.prepare(
        `UPDATE document_versions SET content_lost_at = NULL, content_lost_reason = NULL
         WHERE document_id = @documentId AND version = @version AND content_key = @contentKey AND sha256 = @sha256 AND content_lost_at IS NOT NULL`,
      ),
      // The content the lost mark took away, back from the version row; only while the document still
      // stands where the mark left it (same version, no content: nothing uploaded since). Its thumbnail
      // as the version holds it (a file missing from the disk is rendered again when asked for). The
      // triggers bump the patient's change counter, so no cached search page survives.
      setCurrentRestored: db.prepare(
        `UPDATE documents SET has_content = 1, file_size = v.file_size, sha256 = v.sha256, content_key = v.content_key, content_type = v.content_type,
           file_type = v.file_type, scanned_at = v.scanned_at,
           thumbnail_key = CASE v.thumbnail_status WHEN 'ready' THEN v.thumbnail_key WHEN 'failed' THEN '${NO_THUMBNAIL}' ELSE NULL END
         FROM (SELECT * FROM document_versions WHERE document_id = @documentId AND version = @version AND content_key = @contentKey) AS v
         WHERE documents.id = @documentId AND documents.version = @version AND documents.has_content = 0 AND documents.content_key IS NULL
           AND documents.deleted_at IS NULL`,
      ),
    };
  }

  async find(id: string): Promise<DocumentRecord | undefined> {
    const row = this.statements.find.get(id.toLowerCase()) as unknown[] | undefined;
    return row ? documentFromColumns(row) : undefined;
  }

  async commitVersion(version: DocumentVersionRecord, expectedVersion: number, events: OutboxEvent[]): Promise<boolean> {
    return this.db
      .transaction(() => {
        const row = { ...version, scannedAt: version.scannedAt ?? null };
        const changed = this.statements.setCurrent.run({ ...row, expectedVersion }).changes;
        if (changed === 0) return false;
        this.statements.insertVersion.run(row);
        this.outbox.appendInTransaction(events);
        return true;
      })
      .immediate();
  }

  async versions(documentId: string): Promise<DocumentVersionRecord[]> {
    return (this.statements.versions.all(documentId.toLowerCase()) as VersionRow[]).map(versionFromRow);
  }

  async version(documentId: string, version: number): Promise<DocumentVersionRecord | undefined> {
    const row = this.statements.version.get(documentId.toLowerCase(), version) as VersionRow | undefined;
    return row ? versionFromRow(row) : undefined;
  }

  async setThumbnail(documentId: string, version: number, result: { status: ThumbnailStatus; key: string | null; error: string | null }): Promise<void> {
    this.db
      .transaction(() => {
        this.statements.setVersionThumbnail.run({ documentId, version, ...result });
        // Only the current version's thumbnail is the document's; an older render changes nothing.
        if (result.key) this.statements.setDocumentThumbnail.run({ documentId, version, key: result.key });
        else if (result.status === 'failed') this.statements.setDocumentThumbnail.run({ documentId, version, key: NO_THUMBNAIL });
      })
      .immediate();
  }

  async pendingThumbnails(limit: number): Promise<DocumentVersionRecord[]> {
    return (this.statements.pending.all(limit) as VersionRow[]).map(versionFromRow);
  }

  async startThumbnailRender(documentId: string, version: number, by: string): Promise<number | undefined> {
    const row = this.statements.startRender.get({ documentId, version, by }) as { starts: number } | undefined;
    return row?.starts;
  }

  async remove(patientId: string, id: string, deletion: { at: string; by: string }, events: OutboxEvent[]): Promise<boolean> {
    return this.db
      .transaction(() => {
        const changed = this.statements.remove.run({ id: id.toLowerCase(), patientId, at: deletion.at, by: deletion.by }).changes;
        if (changed === 0) return false;
        this.outbox.appendInTransaction(events);
        return true;
      })
      .immediate();
  }

  async markLost(lost: LostContent, events: OutboxEvent[], audit: MarkAudit): Promise<{ version: boolean; current: boolean }> {
    return this.db
      .transaction(() => {
        const version = this.statements.markVersionLost.run(lost).changes > 0;
        const current = this.statements.unsetCurrent.run(lost).changes > 0;
        if (current) this.outbox.appendInTransaction(events);
        if (version || current) this.recordMark('mark-lost', lost, current, audit);
        return { version, current };
      })
      .immediate();
  }

  async markRestored(restored: RestoredContent, events: OutboxEvent[], audit: MarkAudit): Promise<{ version: boolean; current: boolean }> {
    return this.db
      .transaction(() => {
        const version = this.statements.markVersionRestored.run(restored).changes > 0;
        // Only what this call un-marked: a second run, or a version restored meanwhile, changes nothing.
        const current = version && this.statements.setCurrentRestored.run(restored).changes > 0;
        if (current) this.outbox.appendInTransaction(events);
        if (version) this.recordMark('mark-restored', restored, current, audit);
        return { version, current };
      })
      .immediate();
  }

  /** The mark's audit entry (inside its transaction): the document's patient and organization, no client, no HTTP status. */
  private recordMark(action: AuditAction, mark: { documentId: string; version: number }, current: boolean, audit: MarkAudit): void {
    const owner = this.statements.owner.get(mark.documentId) as { patient_id: string; organization_id: string } | undefined;
    this.audit.appendInTransaction([markAuditEntry(action, owner, mark, current, audit)]);
  }

  async isKeyReferenced(key: string): Promise<boolean> {
    return this.statements.keyInUse.get({ key }) !== undefined;
  }
}
