/** Where the content storage and its resumable uploads live in the data directory (made, private, at each start). */
import path from 'node:path';
import { LocalDiskStorage } from './local-disk.js';

export function contentFolders(dataDir: string): { storage: LocalDiskStorage; uploads: string } {
  const storage = new LocalDiskStorage(path.join(dataDir, 'content'));
  return { storage, uploads: path.join(storage.root, 'uploads') };
}

/** Where thumbnail renders copy the content they read (storage may be an object store: the renderer reads a file of its own). */
export function renderScratch(dataDir: string): string {
  return path.join(dataDir, 'content', 'render');
}
