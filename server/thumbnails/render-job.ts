import { readFile } from 'node:fs/promises';
import { malformed, tooLarge } from './errors.js';
import { renderImageThumbnail } from './image.js';
import { isMeshType, renderMeshThumbnail } from './mesh/index.js';
import { renderPdfThumbnail } from './pdf.js';
import { encodePng } from './png.js';
import type { ThumbnailJob } from './protocol.js';

/** Does one job start to finish. Runs inside the worker; safe to call in-process for debugging. */
export async function renderJob(job: ThumbnailJob): Promise<Buffer> {
  const bytes = await readBounded(job.filePath, job.maxInputBytes);
  const type = job.fileType;
  if (isMeshType(type)) return encodePng(renderMeshThumbnail(bytes, type, job.size));
  if (type === 'PDF') return renderPdfThumbnail(bytes, job.size);
  return renderImageThumbnail(bytes, job.size);
}

/** The size is checked again here: the file may have grown since the caller looked. */
async function readBounded(filePath: string, maxBytes: number): Promise<Buffer> {
  const bytes = await readFile(filePath).catch((error: unknown) => {
    throw malformed(`cannot read the file (${error instanceof Error ? error.message : String(error)})`);
  });
  if (bytes.length > maxBytes) throw tooLarge(`the file is larger than ${maxBytes} bytes`);
  if (bytes.length === 0) throw malformed('the file is empty');
  return bytes;
}
