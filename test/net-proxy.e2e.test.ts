/**
 * The server under a path prefix behind a clinic's reverse proxy, and what such a proxy answers
 * when things go wrong: HTML 502/503/504 pages while the server restarts (waited out, with a plain
 * reason and no HTML in it), nginx's 1 MB `client_max_body_size` (files go up in pieces that pass
 * instead of failing), a limit too small even for that (the file waits saying so, not "cannot be
 * reached", and goes up once the limit is raised), and a redirect (the file fails naming where the address leads).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { testConnection } from '../electron/sync/api/connection.js';
import { htmlPage, startNetProxy, type NetProxy } from './helpers/net-proxy.js';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG } from './helpers/server.js';
import { allDocuments, startEngine, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

const MiB = 1024 * 1024;
const uploadLength = (request: { method?: string | undefined; headers: Record<string, string | string[] | undefined> }) =>
  request.method === 'POST' || request.method === 'PATCH' || request.method === 'PUT' ? Number(request.headers['content-length'] ?? 0) : 0;

describe('behind a reverse proxy under /patient-docs', () => {
  let proxy: NetProxy;
  let server: ServerProcess;
  let sut: EngineUnderTest;

  beforeAll(async () => {
    proxy = await startNetProxy({ prefix: '/patient-docs' });
    server = await startServerProcess({ PATIENT_DOCS_PUBLIC_URL: proxy.url });
    proxy.target = server.url;
    sut = await startEngine(proxy.url, { tuning: { settleMs: 200 }, backoffMs: 100 });
  });
  afterAll(async () => {
    await sut?.close();
    await server?.stop();
    await proxy?.close();
  });
  beforeEach(() => {
    proxy.intercept = null;
  });

  const record = (name: string) => sut.journal.byPair(sut.pair.id).find((candidate) => candidate.relativePath === name);

  it('waits out HTML 502/503/504 pages with a plain reason, then syncs once the server answers again', async () => {
    const pages = [htmlPage(502, 'Bad Gateway'), htmlPage(503, 'Service Temporarily Unavailable'), htmlPage(504, 'Gateway Time-out')];
    let refused = 0;
    proxy.intercept = (request) => (request.url?.includes('/documents') ? pages[refused++ % pages.length]! : null);
    writeFile(sut.folder, 'gateway/arch.stl', Buffer.alloc(5000, 1));
    const waiting = await waitFor('the file waits with the proxy’s reason', () => {
      const row = record('gateway/arch.stl');
      return row?.state === 'waiting' && row.errorCode === 'SERVER_ERROR' && refused >= 2 ? row : undefined;
    });
    expect(waiting.errorDetail).toMatch(/the server answered 50[234] \((Bad Gateway|Service Temporarily Unavailable|Gateway Time-out)\)/);
    expect(waiting.errorDetail).not.toContain('<');
    proxy.intercept = null;
    await waitFor('synced after the proxy recovers', () => record('gateway/arch.stl')?.state === 'synced');
    const documents = (await allDocuments(sut.api)).filter((document) => document.fileName === 'arch.stl');
    expect(documents).toHaveLength(1);
  });

  it('sends a file in pieces under nginx’s default 1 MB body limit instead of failing it', async () => {
    proxy.intercept = (request) => (uploadLength(request) > MiB ? htmlPage(413, 'Request Entity Too Large') : null);
    const bytes = Buffer.alloc(3 * MiB + 123, 7);
    writeFile(sut.folder, 'limit/cbct.dcm', bytes);
    await waitFor('synced in pieces', () => record('limit/cbct.dcm')?.state === 'synced');
    const document = (await allDocuments(sut.api)).find((candidate) => candidate.fileName === 'cbct.dcm');
    expect(document?.fileSize).toBe(bytes.length);
    expect(proxy.seen.filter((line) => line.startsWith('PATCH ')).length).toBeGreaterThanOrEqual(4);
  });

  it('keeps a file the proxy refuses however small the piece waiting, saying it is the proxy’s limit', async () => {
    proxy.intercept = (request) => (uploadLength(request) > 10_000 ? htmlPage(413, 'Request Entity Too Large') : null);
    writeFile(sut.folder, 'tiny-limit/scan.ply', Buffer.alloc(200_000, 3));
    // The code stays on the row into its next attempt (uploading): wait for both together.
    const waiting = await waitFor('waiting', () => {
      const file = record('tiny-limit/scan.ply');
      return file?.state === 'waiting' && file.errorCode === 'TOO_LARGE' ? file : undefined;
    });
    expect(waiting!.errorMessage).toContain('client_max_body_size');
    expect(waiting!.errorDetail).toContain('client_max_body_size');
    expect(waiting!.errorDetail).not.toContain('<');
    // IT raises the limit: the file goes up by itself.
    proxy.intercept = null;
    await waitFor('synced once the limit is raised', () => record('tiny-limit/scan.ply')?.state === 'synced');
  });

  it('fails a redirected request naming where the address leads; the connection test says the same', async () => {
    proxy.intercept = (request) => (request.url?.includes('/documents') ? { status: 301, headers: { location: 'https://clinic.example/patient-docs/' }, body: htmlPage(301, 'Moved Permanently').body! } : null);
    writeFile(sut.folder, 'moved/scan.pdf', Buffer.alloc(3000, 4));
    const failed = await waitFor('failed', () => (record('moved/scan.pdf')?.state === 'failed' ? record('moved/scan.pdf') : undefined));
    expect(failed!.errorCode).toBe('NOT_PATIENT_DOCS');
    expect(failed!.errorDetail).toContain('redirect');
    expect(failed!.errorDetail).toContain('https://clinic.example/patient-docs/');

    proxy.intercept = (request) => (request.url?.includes('/oauth2/token') ? { status: 301, headers: { location: 'https://clinic.example/patient-docs/oauth2/token' } } : null);
    const tested = await testConnection({ serverUrl: proxy.url, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG });
    expect(tested.ok).toBe(false);
    expect(tested.error?.code).toBe('NOT_PATIENT_DOCS');
    expect(tested.error?.detail).toContain('redirects to https://clinic.example/patient-docs/oauth2/token');
  });
});
