/**
 * Document content on PostgreSQL: committed versions, the current version on the document row,
 * thumbnails, deletion and the admin CLI's lost/restored marks, as in SQLite. The version commit
 * is a compare-and-set on the document's version: an UPDATE under READ COMMITTED waits for a
 * concurrent one on the same row and re-checks its WHERE against the committed row, so two uploads
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
import type { PostgresAudit } from './audit.js';
import type { PostgresDatabase, Queryable } from './database.js';
import { DOCUMENT_COLUMNS, documentFromRow } from './document-repository.js';
import { takeOutboxWriterLock, type PostgresOutbox } from './outbox.js';

const VERSION_COLUMNS = `document_id AS "documentId", version, file_type AS "fileType", original_file_name AS "originalFileName", file_size AS "fileSize",
  sha256, content_key AS "contentKey", content_type AS "contentType", thumbnail_key AS "thumbnailKey", thumbnail_status AS "thumbnailStatus",
  thumbnail_error AS "thumbnailError", uploaded_at AS "uploadedAt", uploaded_by AS "uploadedBy", content_lost_at AS "contentLostAt",
  scanned_at AS "scannedAt"`;

export class PostgresDocumentContent implements DocumentContentRepository {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly outbox: PostgresOutbox,
    private readonly audit: PostgresAudit,
  ) {}

  async find(id: string): Promise<DocumentRecord | undefined> {
    const row = await this.db.row<DocumentRecord>(`SELECT ${DOCUMENT_COLUMNS} FROM documents WHERE id = $1 AND deleted_at IS NULL`, [id.toLowerCase()]);
    return row ? documentFromRow(row) : undefined;
  }

  async commitVersion(version: DocumentVersionRecord, expectedVersion: number, events: OutboxEvent[]): Promise<boolean> {
    const committed = await this.db.transaction(async (tx) => {
      await takeOutboxWriterLock(tx);
      const changed = await tx.run(
        `UPDATE documents SET has_content = true, file_size = $1, sha256 = $2, version = $3, content_key = $4, content_type = $5, file_type = $6,
           thumbnail_key = NULL, last_modified_at = $7, scanned_at = $10
         WHERE id = $8 AND version = $9 AND deleted_at IS NULL`,
        [
          version.fileSize,
          version.sha256,
          version.version,
          version.contentKey,
          version.contentType,
          version.fileType,
          version.uploadedAt,
          version.documentId,
          expectedVersion,
          version.scannedAt ?? null,
        ],
      );
      if (changed === 0) return false;
      await tx.run(
        `INSERT INTO document_versions (document_id, version, file_type, original_file_name, file_size, sha256, content_key, content_type,
           thumbnail_key, thumbnail_status, thumbnail_error, uploaded_at, uploaded_by, scanned_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
        [
          version.documentId,
          version.version,
          version.fileType,
          version.originalFileName,
          version.fileSize,
          version.sha256,
          version.contentKey,
          version.contentType,
          version.thumbnailKey,
          version.thumbnailStatus,
          version.thumbnailError,
          version.uploadedAt,
          version.uploadedBy,
          version.scannedAt ?? null,
        ],
      );
      await this.outbox.appendInTransaction(tx, events);
      return true;
    });
    if (committed) this.outbox.committed(events);
    return committed;
  }

  async versions(documentId: string): Promise<DocumentVersionRecord[]> {
    return this.db.rows<DocumentVersionRecord>(`SELECT ${VERSION_COLUMNS} FROM document_versions WHERE document_id = $1 ORDER BY version DESC`, [documentId.toLowerCase()]);
  }

  async version(documentId: string, version: number): Promise<DocumentVersionRecord | undefined> {
    return this.db.row<DocumentVersionRecord>(`SELECT ${VERSION_COLUMNS} FROM document_versions WHERE document_id = $1 AND version = $2`, [documentId.toLowerCase(), version]);
  }

  async setThumbnail(documentId: string, version: number, result: { status: ThumbnailStatus; key: string | null; error: string | null }): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.run(
        `UPDATE document_versions SET thumbnail_status = $1, thumbnail_key = $2, thumbnail_error = $3, thumbnail_render_starts = 0, thumbnail_render_by = NULL
         WHERE document_id = $4 AND version = $5`,
        [result.status, result.key, result.error, documentId, version],
      );
      // Only the current version's thumbnail is the document's; an older render changes nothing.
      const key = result.key ? result.key : result.status === 'failed' ? NO_THUMBNAIL : undefined;
      if (key !== undefined) await tx.run('UPDATE documents SET thumbnail_key = $1 WHERE id = $2 AND version = $3', [key, documentId, version]);
    });
  }

  async pendingThumbnails(limit: number): Promise<DocumentVersionRecord[]> {
    return this.db.rows<DocumentVersionRecord>(`SELECT ${VERSION_COLUMNS} FROM document_versions WHERE thumbnail_status = 'pending' ORDER BY uploaded_at LIMIT $1`, [limit]);
  }

  async startThumbnailRender(documentId: string, version: number, by: string): Promise<number | undefined> {
    const row = await this.db.row<{ starts: number }>(
      `UPDATE document_versions SET thumbnail_render_starts = thumbnail_render_starts + (CASE WHEN thumbnail_render_by IS NOT DISTINCT FROM $3 THEN 0 ELSE 1 END),
         thumbnail_render_by = $3
       WHERE document_id = $1 AND version = $2 AND thumbnail_status = 'pending'
       RETURNING thumbnail_render_starts AS starts`,
      [documentId, version, by],
    );
    return row?.starts;
  }

  async remove(patientId: string, id: string, deletion: { at: string; by: string }, events: OutboxEvent[]): Promise<boolean> {
    const removed = await this.db.transaction(async (tx) => {
      await takeOutboxWriterLock(tx);
      const changed = await tx.run('UPDATE documents SET deleted_at = $1, deleted_by = $2 WHERE id = $3 AND patient_id = $4 AND deleted_at IS NULL', [deletion.at, deletion.by, id.toLowerCase(), patientId]);
      if (changed === 0) return false;
      await this.outbox.appendInTransaction(tx, events);
      return true;
    });
    if (removed) this.outbox.committed(events);
    return removed;
  }

  async markLost(lost: LostContent, events: OutboxEvent[], audit: MarkAudit): Promise<{ version: boolean; current: boolean }> {
    const outcome = await this.db.transaction(async (tx) => {
      await takeOutboxWriterLock(tx);
      const version =
        (await tx.run(
          `UPDATE document_versions SET content_lost_at = $1, content_lost_reason = $2
           WHERE document_id = $3 AND version = $4 AND content_key = $5 AND content_lost_at IS NULL`,
          [lost.at, lost.reason, lost.documentId, lost.version, lost.contentKey],
        )) > 0;
      // Back to a placeholder, keeping its id, name, path and version number: the next upload is the
      // next version. The trigger bumps the patient's change counter, so no cached search page survives.
      const current =
        (await tx.run(
          `UPDATE documents SET has_content = false, file_size = NULL, sha256 = NULL, content_key = NULL, content_type = NULL, thumbnail_key = NULL
           WHERE id = $1 AND version = $2 AND content_key = $3 AND has_content AND deleted_at IS NULL`,
          [lost.documentId, lost.version, lost.contentKey],
        )) > 0;
      if (version || current) await this.recordMark(tx, 'mark-lost', lost, current, audit);
      if (current) await this.outbox.appendInTransaction(tx, events);
      return { version, current };
    });
    if (outcome.current) this.outbox.committed(events);
    return outcome;
  }

  async markRestored(restored: RestoredContent, events: OutboxEvent[], audit: MarkAudit): Promise<{ version: boolean; current: boolean }> {
    const outcome = await this.db.transaction(async (tx) => {
      await takeOutboxWriterLock(tx);
      const version =
        (await tx.run(
          `UPDATE document_versions SET content_lost_at = NULL, content_lost_reason = NULL
           WHERE document_id = $1 AND version = $2 AND content_key = $3 AND sha256 = $4 AND content_lost_at IS NOT NULL`,
          [restored.documentId, restored.version, restored.contentKey, restored.sha256],
        )) > 0;
      // Only what this call un-marked, and only while the document stands where the lost mark left
      // it (same version, no content: nothing uploaded since, not deleted).
      const current =
        version &&
        (await tx.run(
          `UPDATE documents SET has_content = true, file_size = v.file_size, sha256 = v.sha256, content_key = v.content_key, content_type = v.content_type,
             file_type = v.file_type, scanned_at = v.scanned_at,
             thumbnail_key = CASE v.thumbnail_status WHEN 'ready' THEN v.thumbnail_key WHEN 'failed' THEN '${NO_THUMBNAIL}' ELSE NULL END
           FROM document_versions v
           WHERE v.document_id = $1 AND v.version = $2 AND v.content_key = $3
             AND documents.id = $1 AND documents.version = $2 AND NOT documents.has_content AND documents.content_key IS NULL AND documents.deleted_at IS NULL`,
          [restored.documentId, restored.version, restored.contentKey],
        )) > 0;
      if (version) await this.recordMark(tx, 'mark-restored', restored, current, audit);
      if (current) await this.outbox.appendInTransaction(tx, events);
      return { version, current };
    });
    if (outcome.current) this.outbox.committed(events);
    return outcome;
  }

  /** The mark's audit entry (inside its transaction): the document's patient and organization, no client, no HTTP status. */
  private async recordMark(tx: Queryable, action: AuditAction, mark: { documentId: string; version: number }, current: boolean, audit: MarkAudit): Promise<void> {
    const owner = await tx.row<{ patient_id: string; organization_id: string }>('SELECT patient_id, organization_id FROM documents WHERE id = $1', [mark.documentId]);
    await this.audit.appendInTransaction(tx, [markAuditEntry(action, owner, mark, current, audit)]);
  }

  async isKeyReferenced(key: string): Promise<boolean> {
    return (await this.db.row('SELECT 1 FROM document_versions WHERE content_key = $1 OR thumbnail_key = $1 LIMIT 1', [key])) !== undefined;
  }
}
