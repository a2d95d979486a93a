/**
 * `patient-docs-admin verify` on PostgreSQL: the same check as on the embedded database
 * (sqlite/backup.ts checkVersions), over the versions read in pages of VERIFY_PAGE by their key, so
 * that a large deployment is neither read into memory at once nor held in one long statement
 * while the instances keep writing. A version committed during the run may or may not be seen;
 * none is reported missing because it was half written (its record commits after its file).
 */
import { checkVersions, type VerifiedVersion, type VerifyReport } from '../sqlite/backup.js';
import type { ContentStorage } from '../../storage/types.js';
import type { Queryable } from './database.js';

const VERIFY_PAGE = 1000;

async function* versionPages(db: Queryable): AsyncGenerator<VerifiedVersion> {
  let after: { documentId: string; version: number } | undefined;
  for (;;) {
    const rows = await db.rows<VerifiedVersion>(
      `SELECT document_id, version, content_key, file_size, sha256, content_lost_at FROM document_versions
       WHERE ($1::text IS NULL OR (document_id, version) > ($1::text COLLATE "C", $2::integer))
       ORDER BY document_id, version LIMIT $3`,
      [after?.documentId ?? null, after?.version ?? 0, VERIFY_PAGE],
    );
    yield* rows;
    const last = rows.at(-1);
    if (!last || rows.length < VERIFY_PAGE) return;
    after = { documentId: last.document_id, version: last.version };
  }
}

export async function verifyPostgresContent(db: Queryable, storage: ContentStorage, options: { hashes: boolean }): Promise<VerifyReport> {
  const { n } = (await db.row<{ n: number }>('SELECT count(*) AS n FROM audit_log'))!;
  return checkVersions(versionPages(db), n, storage, options);
}
