/**
 * kill -9 (a power-cycled server box) in the middle of a tus upload, a batch of creates and the
 * thumbnail renders: after the restart on the same data directory nothing claims bytes it lacks,
 * the tus upload continues from what reached the disk, and pending thumbnails are rendered.
 * (The one-shot upload and webhook deliveries have their own kill -9 tests: content-process,
 * webhooks.)
 */
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeArchStl } from './fixtures/scans.js';
import { freePort, startKillableServer, type KillableServer } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';

const MiB = 1024 * 1024;
const children: ChildProcess[] = [];
const dataDir = tempDir('srv-crash');

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function start(port: number): Promise<KillableServer> {
  return startKillableServer(port, { PATIENT_DOCS_DATA_DIR: dataDir }, children);
}

async function token(url: string): Promise<string> {
  const response = await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) });
  return ((await response.json()) as { access_token: string }).access_token;
}

function api(url: string, bearer: string, method: string, route: string, body?: unknown): Promise<Response> {
  return fetch(`${url}${route}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function until<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('kill -9 and restart on the same data directory', () => {
  it('a tus upload resumes from what reached the disk; a batch of creates and the thumbnails leave nothing half done', async () => {
    const port = await freePort();
    const first = await start(port);
    const bearer = await token(first.url);

    // Thumbnails still to render when the power goes.
    const stl = makeArchStl({ triangles: 60_000 });
    const scans: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const created = (await (await api(first.url, bearer, 'POST', `/v1/patients/${PATIENT}/documents`, { fileName: `crash-scan-${index}.stl`, path: '/crash' })).json()) as { id: string; storageUrl: string };
      const form = new FormData();
      form.append('Id', created.id);
      form.append('Type', 'STL');
      form.append('file', new Blob([new Uint8Array(stl)]), `crash-scan-${index}.stl`);
      const stored = await fetch(`${created.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` }, body: form });
      expect(stored.status).toBe(201);
      scans.push(created.id);
    }

    // A tus upload of 8 MiB, cut after a few MiB have reached the disk.
    const document = (await (await api(first.url, bearer, 'POST', `/v1/patients/${PATIENT}/documents`, { fileName: 'crash-tus.stl', path: '/crash' })).json()) as { id: string; storageUrl: string };
    const length = 8 * MiB;
    const bytes = Buffer.alloc(length);
    for (let index = 0; index < length; index += 4) bytes.writeUInt32LE((index * 2654435761) >>> 0, index);
    const created = await fetch(`${document.storageUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'tus-resumable': '1.0.0', 'upload-length': String(length) } });
    expect(created.status).toBe(201);
    const location = created.headers.get('location')!;
    const uploadId = location.split('/').pop()!;
    const patch = http.request(location, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${bearer}`, 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream', 'content-length': String(length) },
    });
    patch.on('error', () => undefined);
    patch.write(bytes.subarray(0, 3 * MiB));
    const binFile = path.join(dataDir, 'content', 'uploads', `${uploadId}.bin`);
    await until(() => (fs.statSync(binFile).size >= 2 * MiB ? true : undefined), 'the first chunk on the disk');

    // A batch of creates in flight.
    const batch = Array.from({ length: 40 }, (_, index) => api(first.url, bearer, 'POST', `/v1/patients/${PATIENT}/documents`, { fileName: `crash-batch-${index}.pdf`, path: '/crash/batch' }).then((response) => response.status, () => 0));
    await first.kill();
    await Promise.all(batch);
    patch.destroy();

    const second = await start(port);
    const fresh = await token(second.url);

    // tus: the offset is what reached the disk, and the rest completes the same upload.
    const head = await fetch(location, { method: 'HEAD', headers: { authorization: `Bearer ${fresh}`, 'tus-resumable': '1.0.0' } });
    expect(head.status).toBe(200);
    const offset = Number(head.headers.get('upload-offset'));
    expect(offset).toBeGreaterThan(0);
    expect(offset).toBeLessThanOrEqual(3 * MiB);
    const rest = await fetch(location, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${fresh}`, 'tus-resumable': '1.0.0', 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' },
      body: new Uint8Array(bytes.subarray(offset)),
    });
    expect(rest.status).toBe(204);
    const resumed = (await (await api(second.url, fresh, 'GET', `/v1/patients/${PATIENT}/documents/${document.id}`)).json()) as { hasContent: boolean; sha256: string; storageDownloadUri: string };
    expect(resumed).toMatchObject({ hasContent: true, sha256: createHash('sha256').update(bytes).digest('hex') });
    const download = Buffer.from(await (await fetch(resumed.storageDownloadUri)).arrayBuffer());
    expect(download.equals(bytes)).toBe(true);

    // The batch: every document created is a placeholder, none claims content.
    const search = (await (await api(second.url, fresh, 'POST', `/v1/patients/${PATIENT}/documents/search`, { path: '/crash/batch', offset: 0, limit: 100 })).json()) as { documents: Array<{ hasContent: boolean }> };
    expect(search.documents.every((found) => !found.hasContent)).toBe(true);

    // Thumbnails: each one rendered (resumed at start if the kill came first), none failed.
    for (const id of scans) {
      const status = await until(async () => {
        const { versions } = (await (await api(second.url, fresh, 'GET', `/v1/patients/${PATIENT}/documents/${id}/versions`)).json()) as { versions: Array<{ thumbnailStatus: string }> };
        const current = versions[0]?.thumbnailStatus;
        return current === 'pending' ? undefined : current;
      }, `the thumbnail of ${id}`);
      expect(status).toBe('ready');
    }
    // No temp files from the cut requests.
    expect(fs.readdirSync(path.join(dataDir, 'content', 'tmp'))).toEqual([]);
    second.child.kill('SIGTERM');
  }, 60_000);
});
