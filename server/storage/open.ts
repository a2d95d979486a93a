/** The content storage the configuration names, alone (the admin CLI's verify, backup): the AWS SDK loads only for an object store. */
import path from 'node:path';
import type { ServerConfig } from '../config.js';
import { LocalDiskStorage } from './local-disk.js';
import type { ContentStorage } from './types.js';

/** Where content is kept, as the configuration says: an object store, or the local disk in the data dir. */
export type StorageConfig = Pick<ServerConfig, 'dataDir' | 'storageUrl' | 's3Endpoint'>;

/** `create: false` makes no local folder (a disk not mounted stays missing). */
export async function contentStorageFor(config: StorageConfig, options: { create?: boolean } = {}): Promise<ContentStorage> {
  if (!config.storageUrl) return new LocalDiskStorage(path.join(config.dataDir, 'content'), options);
  const { createS3Client, parseStorageUrl, S3ContentStorage } = await import('./s3.js');
  return new S3ContentStorage(createS3Client(config.s3Endpoint), parseStorageUrl(config.storageUrl), config.s3Endpoint);
}
