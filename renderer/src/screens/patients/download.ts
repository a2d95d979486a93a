import type { BridgeClient } from '../../../../shared/bridge.js';
import type { DocumentDto } from '../../../../shared/schemas.js';
import { BridgeError } from '../../bridge/errors.js';

/** Signed links expire (15 minutes): ask for the document again so the link is fresh. */
export async function freshDocument(client: BridgeClient, patientId: string, documentId: string): Promise<DocumentDto> {
  const answer = await client.searchDocuments(patientId, { id: [documentId], limit: 1, offset: 0 });
  const document = answer.documents[0];
  if (!document) throw new BridgeError('NOT_FOUND', 'The file is no longer on the server.');
  return document;
}

/**
 * Desktop: the engine shows a save dialog and writes the file. Headless: the browser downloads the
 * signed storageDownloadUri (SPEC §4.3 rule 5) — fetched into a blob so the saved name is the
 * document's, or, where the server does not allow cross-origin reads, opened directly (its
 * Content-Disposition names the file).
 */
export async function downloadDocument(client: BridgeClient, patientId: string, document: DocumentDto): Promise<string | null> {
  let saved: string | null = null;
  try {
    saved = await client.saveDocument(patientId, document.id);
  } catch (error) {
    if (!(error instanceof BridgeError && error.code === 'UNAVAILABLE')) throw error;
  }
  if (saved !== null) return saved;
  const current = await freshDocument(client, patientId, document.id);
  if (!current.storageDownloadUri) throw new BridgeError('NOT_FOUND', 'This file has no content on the server yet.');
  try {
    const response = await fetch(current.storageDownloadUri);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    saveBlob(await response.blob(), current.fileName);
  } catch {
    const link = window.document.createElement('a');
    link.href = current.storageDownloadUri;
    link.rel = 'noopener';
    link.click();
  }
  return null;
}

export function saveBlob(blob: Blob, fileName: string): void {
  const url = URL.createObjectURL(blob);
  const link = window.document.createElement('a');
  link.href = url;
  link.download = fileName;
  window.document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
