/** Builds the content side of the server (storage, resumable uploads, thumbnails, GC) from configuration. */
import type { Store, WorkLeases } from '../db/types.js';
import type { AccessGuard } from '../domain/access.js';
import { ContentService } from '../domain/content-service.js';
import type { DocumentService } from '../domain/document-service.js';
import type { Links } from '../domain/links.js';
import { DEFAULT_THUMBNAIL_OPTIONS, ThumbnailJobs, type ThumbnailRenderer } from '../domain/thumbnail-jobs.js';
import { RESUMABLE_LIFETIME_MS } from '../routes/tus.js';
import { StorageJanitor } from './janitor.js';
import { contentFolders, renderScratch } from './folders.js';
import type { StorageConfig } from './open.js';
import { DiskResumableStore } from './resumable-disk.js';
import type { ContentStorage, ResumableStore } from './types.js';

export interface ContentParts {
  storage: ContentStorage;
  resumable: ResumableStore;
  thumbnails: ThumbnailJobs;
  janitor: StorageJanitor;
  service: ContentService;
}

/**
 * The content storage and its resumable uploads the configuration names (also what a test's
 * clean-up after a crash runs on). Instances sharing the content (PostgreSQL) coordinate each
 * upload's writes by leases in the database (store.leases).
 */
export async function storageAndUploads(config: StorageConfig, leases: WorkLeases | undefined): Promise<{ storage: ContentStorage; resumable: ResumableStore }> {
  if (config.storageUrl) {
    // Loaded only here: a server on the local folder does without the S3 client (the AWS SDK).
    const [{ createS3Client, parseStorageUrl, S3ContentStorage }, { S3ResumableStore }] = await Promise.all([import('./s3.js'), import('./s3-resumable.js')]);
    const storage = new S3ContentStorage(createS3Client(config.s3Endpoint), parseStorageUrl(config.storageUrl), config.s3Endpoint);
    return { storage, resumable: new S3ResumableStore(storage, RESUMABLE_LIFETIME_MS, undefined, leases) };
  }
  const { storage, uploads } = contentFolders(config.dataDir);
  // Same file system as tmp/, so a finished upload becomes a temp object by rename.
  return { storage, resumable: new DiskResumableStore(uploads, storage, RESUMABLE_LIFETIME_MS, undefined, leases) };
}

export async function createContentParts(config: StorageConfig, store: Store, collaborators: { documents: DocumentService; access: AccessGuard; links: Links; renderer: ThumbnailRenderer | undefined }): Promise<ContentParts> {
  const dataDir = config.dataDir;
  const { storage, resumable } = await storageAndUploads(config, store.leases);
  const thumbnails = new ThumbnailJobs(store, storage, collaborators.renderer, { ...DEFAULT_THUMBNAIL_OPTIONS, scratchDir: renderScratch(dataDir) }, store.leases);
  const janitor = new StorageJanitor(storage, resumable, (key) => store.content.isKeyReferenced(key), undefined, undefined, store.leases);
  const service = new ContentService(store, storage, collaborators.documents, collaborators.access, collaborators.links, thumbnails);
  return { storage, resumable, thumbnails, janitor, service };
}
