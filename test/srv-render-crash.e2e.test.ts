/**
 * A file whose render takes the server down (kill -9 mid-render stands for a parser that aborts the
 * process, or the machine out of memory) must not become a crash loop: the render is counted before
 * it starts, and a file two server processes died rendering is not rendered again. After the third
 * start its thumbnail is failed, saying why, and the server serves and renders other files.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { makeArchStl, slowPdf } from './fixtures/scans.js';
import { clientToken, freePort, startKillableServer, type KillableServer } from './helpers/processes.js';
import { ORG, PATIENT, tempDir } from './helpers/server.js';
import { waitFor } from './helpers/sync.js';

const children: ChildProcess[] = [];
const dataDir = tempDir('srv-render-crash');

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** How many server processes have started the version's render, as the database holds it (read-only, beside the server). */
function renderStarts(documentId: string): number {
  const db = new Database(path.join(dataDir, 'patient-docs.sqlite'), { readonly: true });
  try {
    const row = db.prepare('SELECT thumbnail_render_starts AS starts FROM document_versions WHERE document_id = ? AND version = 1').get(documentId) as { starts: number } | undefined;
    return row?.starts ?? 0;
  } finally {
    db.close();
  }
}

describe('a render that takes the server down', () => {
  it('is started by two server processes at most; after the third start the thumbnail is failed, saying why, and the server serves on', async () => {
    const port = await freePort();
    const start = (): Promise<KillableServer> => startKillableServer(port, { PATIENT_DOCS_DATA_DIR: dataDir }, children);
    let server = await start();
    const bearer = await clientToken(server.url);
    const api = (route: string, init: RequestInit = {}): Promise<Response> =>
      fetch(`${server.url}/v1/patients/${PATIENT}${route}`, { ...init, headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG, ...init.headers } });
    const upload = async (fileName: string, bytes: Buffer): Promise<string> => {
      const created = (await (await api('/documents', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ fileName, path: '/render' }) })).json()) as {
        id: string;
        storageUrl: string;
      };
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(bytes)]), fileName);
      expect((await fetch(`${created.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` }, body: form })).status).toBe(201);
      return created.id;
    };
    const thumbnailStatus = async (id: string): Promise<string> => {
      const { versions } = (await (await api(`/documents/${id}/versions`)).json()) as { versions: Array<{ thumbnailStatus: string }> };
      return versions[0]!.thumbnailStatus;
    };

    const poison = await upload('slow.pdf', slowPdf());
    // Handed out while the render runs: the link a viewer already holds.
    const link = ((await (await api(`/documents/${poison}`)).json()) as { thumbnailDownloadUri: string | null }).thumbnailDownloadUri;
    expect(link).not.toBeNull();

    // Killed mid-render, twice: at the first start after the upload, and at the start that resumed it.
    await waitFor('the first render to start', () => renderStarts(poison) === 1);
    await server.kill();
    server = await start();
    await waitFor('the resumed render to start', () => renderStarts(poison) === 2);
    await server.kill();
    expect(await thumbnailStatus(poison).catch(() => 'no server')).toBe('no server');

    // The third start gives it up instead of rendering it again.
    server = await start();
    await waitFor('the thumbnail to be given up', async () => (await thumbnailStatus(poison)) === 'failed', 10_000);
    const document = (await (await api(`/documents/${poison}`)).json()) as { thumbnailDownloadUri: string | null };
    expect(document.thumbnailDownloadUri).toBeNull();
    const refused = await fetch(link!);
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/rendering this file stopped the server 2 times; it is not tried again/);

    // The server serves on, and renders other files.
    const scan = await upload('arch.stl', makeArchStl({ triangles: 2_000 }));
    await waitFor('the next scan to render', async () => (await thumbnailStatus(scan)) === 'ready');
    const scanLink = ((await (await api(`/documents/${scan}`)).json()) as { thumbnailDownloadUri: string }).thumbnailDownloadUri;
    const thumbnail = await fetch(scanLink);
    expect(thumbnail.status).toBe(200);
    expect(thumbnail.headers.get('content-type')).toBe('image/png');
    await server.kill();
  }, 120_000);
});
