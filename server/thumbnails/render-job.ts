import { readFile } from 'node:fs/promises';
import { malformed, tooLarge } from './errors.js';
import { renderImageThumbnail } from './image.js';
import { isMeshType, renderMeshThumbnail } from './mesh/index.js';
import { renderPdfThumbnail } from './pdf.js';
import { encodePng } from './png.js';
import type { WorkerJob } from './protocol.js';

/** Does one job start to finish. Runs inside the worker; safe to call in-process for debugging. */
export async function renderJob(job: WorkerJob): Promise<Buffer> {
  const type = job.fileType;
  const bytes = 'shared' in job ? fromShared(job.shared, job.length, isMeshType(type), job.maxInputBytes) : await readBounded(job.filePath, job.maxInputBytes);
  if (isMeshType(type)) return encodePng(renderMeshThumbnail(bytes, type, job.size));
  if (type === 'PDF') return renderPdfThumbnail(bytes, job.size);
  return renderImageThumbnail(bytes, job.size);
}

/** The size is checked again here: the file may have grown since the caller looked. */
async function readBounded(filePath: string, maxBytes: number): Promise<Buffer> {
  const bytes = await readFile(filePath).catch((error: unknown) => {
    throw malformed(`cannot read the file (${error instanceof Error ? error.message : String(error)})`);
  });
  return bounded(bytes, maxBytes);
}

/**
 * Content the pool put in this worker's shared buffer. The mesh parsers only read it, in place; a
 * PDF or an image gets a copy of its own, as its libraries may keep or hand on what they are given
 * (the shared buffer takes the next job's bytes).
 */
function fromShared(shared: SharedArrayBuffer, length: number, inPlace: boolean, maxBytes: number): Buffer {
  const view = Buffer.from(shared, 0, length);
  return bounded(inPlace ? view : Buffer.from(view), maxBytes);
}

function bounded(bytes: Buffer, maxBytes: number): Buffer {
  if (bytes.length > maxBytes) throw tooLarge(`the file is larger than ${maxBytes} bytes`);
  if (bytes.length === 0) throw malformed('the file is empty');
  return bytes;
}
