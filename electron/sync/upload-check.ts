/** The check both upload routes run before the last bytes of a file leave. */
import { stat } from 'node:fs/promises';
import { FileChangedDuringUploadError } from './api-errors.js';
import type { UploadRequest } from './document-api.js';

/**
 * Checked before the last bytes leave: a file that changed since the upload began (a scanner still
 * writing) fails the upload before the server can make the half-written bytes the document's
 * content. A file deleted meanwhile is not a change: the open file reads on, whole.
 */
export function unchangedSinceStart(request: UploadRequest): (() => Promise<void>) | undefined {
  const mtimeMs = request.mtimeMs;
  if (mtimeMs === undefined) return undefined;
  return async () => {
    const now = await stat(request.filePath).catch(() => undefined);
    if (now && (now.size !== request.size || now.mtimeMs !== mtimeMs)) {
      throw new FileChangedDuringUploadError(`the file changed during the upload (${request.size} bytes announced, ${now.size} now)`);
    }
  };
}
