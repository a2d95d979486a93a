/**
 * Document content through a test server's routes, as the content files call them: create a
 * placeholder, upload its file in one multipart request, check it by SPEC §4.3 rule 4, wait for its
 * thumbnail. Shared by test/content.e2e.test.ts and test/content-renders.e2e.test.ts (the timed
 * renders, which run alone).
 */
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { PATIENT, type TestServer } from './server.js';

export const sha256 = (bytes: Buffer | Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

export interface UploadOptions {
  fields?: Array<[string, string]>;
  /** Put the file before the text fields. */
  fileFirst?: boolean;
  ifMatch?: string;
  token?: string;
  omitFile?: boolean;
  fileName?: string;
  type?: string;
}

export interface Placeholder {
  id: string;
  storageUrl: string;
}

/** The routes of the server `current()` gives when called (a file's server, made in its beforeAll). */
export function contentRoutes(current: () => TestServer) {
  async function createDocument(fileName: string, folder = '/scans'): Promise<Placeholder> {
    const response = await current().api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName, path: folder } });
    expect(response.status).toBe(201);
    return response.body;
  }

  async function upload(document: Placeholder, bytes: Buffer | Blob, options: UploadOptions = {}) {
    const form = new FormData();
    const fields = options.fields ?? [
      ['FileName', options.fileName ?? 'scan.stl'],
      ['Type', options.type ?? 'STL'],
      ['Id', document.id],
    ];
    const file = bytes instanceof Blob ? bytes : new Blob([new Uint8Array(bytes)]);
    if (options.fileFirst && !options.omitFile) form.append('file', file, options.fileName ?? 'scan.stl');
    for (const [name, value] of fields) form.append(name, value);
    if (!options.fileFirst && !options.omitFile) form.append('file', file, options.fileName ?? 'scan.stl');
    const headers: Record<string, string> = { authorization: `Bearer ${options.token ?? (await current().token())}` };
    if (options.ifMatch) headers['if-match'] = options.ifMatch;
    const response = await fetch(`${document.storageUrl}/file`, { method: 'POST', headers, body: form });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  }

  /** SPEC §4.3 rule 4: search by id with hasContent true and limit 1, then fileSize and a download that hashes right. */
  async function checkUpload(id: string, original: Buffer): Promise<any> {
    const search = await current().api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { id: [id], hasContent: true, offset: 0, limit: 1 } });
    expect(search.status).toBe(200);
    expect(search.body.total).toBe(1);
    const [document] = search.body.documents;
    expect(document.hasContent).toBe(true);
    expect(document.fileSize).toBe(original.length);
    expect(document.sha256).toBe(sha256(original));
    expect(document.storageDownloadUri).toMatch(/\/content\?v=\d+&expires=\d+&sig=/);
    const download = await fetch(document.storageDownloadUri);
    expect(download.status).toBe(200);
    expect(sha256(Buffer.from(await download.arrayBuffer()))).toBe(sha256(original));
    return document;
  }

  /** The document once every thumbnail render the server started has ended. */
  async function waitForThumbnail(id: string): Promise<any> {
    await current().server.context.content.thumbnails.idle();
    const response = await current().api('GET', `/v1/patients/${PATIENT}/documents/${id}`);
    return response.body;
  }

  return { createDocument, upload, checkUpload, waitForThumbnail };
}
