/** Builds the content side of the server (storage, resumable uploads, thumbnails, GC) from configuration. */
import type { Store } from '../db/types.js';
import type { AccessGuard } from '../domain/access.js';
import { ContentService } from '../domain/content-service.js';
import type { DocumentService } from '../domain/document-service.js';
import type { Links } from '../domain/links.js';
import { DEFAULT_THUMBNAIL_OPTIONS, ThumbnailJobs, type ThumbnailRenderer } from '../domain/thumbnail-jobs.js';
import { RESUMABLE_LIFETIME_MS } from '../routes/tus.js';
import { StorageJanitor } from './janitor.js';
import { contentFolders, renderScratch } from './folders.js';
import { DiskResumableStore } from './resumable-disk.js';
import type { ContentStorage, ResumableStore } from './types.js';

export interface ContentParts {
  storage: ContentStorage;
  resumable: ResumableStore;
  thumbnails: ThumbnailJobs;
  janitor: StorageJanitor;
  service: ContentService;
}

export function createContentParts(dataDir: string, store: Store, collaborators: { documents: DocumentService; access: AccessGuard; links: Links; renderer: ThumbnailRenderer | undefined }): ContentParts {
  const { storage, uploads } = contentFolders(dataDir);
  // Same file system as tmp/, so a finished upload becomes a temp object by rename.
  // Instances sharing the folder (PostgreSQL) coordinate by leases in the database (store.leases).
  const resumable = new DiskResumableStore(uploads, storage, RESUMABLE_LIFETIME_MS, undefined, store.leases);
  const thumbnails = new ThumbnailJobs(store, storage, collaborators.renderer, { ...DEFAULT_THUMBNAIL_OPTIONS, scratchDir: renderScratch(dataDir) }, store.leases);
  const janitor = new StorageJanitor(storage, resumable, (key) => store.content.isKeyReferenced(key), undefined, undefined, store.leases);
  const service = new ContentService(store, storage, collaborators.documents, collaborators.access, collaborators.links, thumbnails);
  return { storage, resumable, thumbnails, janitor, service };
}
