/**
 * The headless UI in a real browser, the server behind HTTPS with the clinic's own CA: the browser
 * trusts only the system's CAs, so it cannot load the server's signed links itself (thumbnails,
 * 3D and PDF preview, downloads). The engine, which trusts the CA, serves them on loopback instead,
 * for the UI only (a token of its own) and for the connected server's links only.
 */
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SearchResponse } from '../shared/schemas.js';
import { launchHeadless, type HeadlessApp } from '../electron/headless/main.js';
import { startNetProxy, type NetProxy } from './helpers/net-proxy.js';
import { ROOT, runCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { closeContexts, useBrowser } from './helpers/renderer-page.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { makeTestCertificates } from './helpers/tls.js';

describe('signed links of a server with the clinic’s CA, in the headless UI', () => {
  const certs = makeTestCertificates('net-ui');
  const scratch = tempDir('net-ui');
  const home = path.join(scratch, 'home');
  let proxy: NetProxy;
  let server: ServerProcess;
  let headless: HeadlessApp;
  let browser: Browser;
  /** One page for the file's two screens (each test loads the app anew). */
  let page: Page;
  let direct: string;

  const bridge = async <T>(method: string, args: unknown[]): Promise<T> => {
    const response = await fetch(`${headless.http.url}/bridge/call/${method}`, { method: 'POST', headers: { authorization: `Bearer ${headless.token}`, 'content-type': 'application/json' }, body: JSON.stringify(args) });
    expect(response.status).toBe(200);
    const envelope = (await response.json()) as { ok: boolean; value?: T; error?: unknown };
    if (!envelope.ok) throw new Error(`bridge ${method}: ${JSON.stringify(envelope.error)}`);
    return envelope.value as T;
  };

  beforeAll(async () => {
    // Chromium starts meanwhile: it needs none of the rest.
    const launching = useBrowser();
    try {
      await startEverything();
    } finally {
      browser = await launching;
    }
    page = await browser.newPage();
  });

  async function startEverything(): Promise<void> {
    proxy = await startNetProxy({ key: certs.key, cert: certs.cert, prefix: '/patient-docs' });
    server = await startServerProcess({ PATIENT_DOCS_PUBLIC_URL: proxy.url });
    proxy.target = server.url;
    expect((await runCli(home, ['connect', '--server', proxy.url, '--client-id', CLIENT.id, '--organization', ORG, '--ca-file', certs.caFile], { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret })).code).toBe(0);
    // The built UI (npm run build / the test run's build step), as a clinic's browser gets it.
    headless = await launchHeadless({ home, firstRun: 'choose', rendererDir: path.join(ROOT, 'dist/renderer'), log: () => undefined });
    const api = headless.app.apiClient();
    const created = await api.createDocument(PATIENT, 'scan.pdf', '/ui');
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');
    fs.writeFileSync(path.join(scratch, 'scan.pdf'), pdf);
    await api.upload({ patientId: PATIENT, storageUrl: created.storageUrl, documentId: created.id, filePath: path.join(scratch, 'scan.pdf'), fileName: 'scan.pdf', fileType: 'PDF', size: pdf.length, ifMatch: null });
    direct = (await api.search(PATIENT, { offset: 0, limit: 1, path: '/ui', hasContent: true })).documents[0]!.storageDownloadUri!;
  }
  afterAll(async () => {
    await closeContexts(browser);
    await headless?.stop();
    await server?.stop();
    await proxy?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
    fs.rmSync(certs.dir, { recursive: true, force: true });
  });

  it('hands the UI loopback links the browser can read, where the server’s own links fail', async () => {
    const answer = await bridge<SearchResponse>('searchDocuments', [PATIENT, { offset: 0, limit: 1, path: '/ui', hasContent: true }]);
    const link = answer.documents[0]!.storageDownloadUri!;
    expect(link.startsWith(`${headless.http.url}/server-content?`)).toBe(true);

    await page.goto(`${headless.http.url}/`);
    const read = (url: string) =>
      page.evaluate(async (target) => {
        try {
          const response = await fetch(target);
          return { status: response.status, text: await response.text(), disposition: response.headers.get('content-disposition') };
        } catch (error) {
          return { status: 0, text: String(error), disposition: null };
        }
      }, url);
    // The browser does not trust the clinic's CA: the server's own link does not load.
    expect((await read(direct)).status).toBe(0);
    const through = await read(link);
    expect(through.status).toBe(200);
    expect(through.text).toContain('%PDF-1.4');
    // A download as signed: the PDF preview reads these bytes and shows them from a blob.
    expect(through.disposition).toMatch(/^attachment/);
  });

  it('Settings takes a renewed CA certificate file and shows its fingerprint; a key file is refused', async () => {
    const renewed = makeTestCertificates('net-ui-renewed');
    try {
      // The app anew: the page is at the app's address without its token, so the token's fragment alone would load nothing.
      await page.goto('about:blank');
      await page.goto(headless.openUrl);
      await page.getByRole('button', { name: 'Settings', exact: true }).click();
      await page.getByText('Patient Docs net-ui test CA').waitFor();
      await page.setInputFiles('#settings-server-ca', path.join(renewed.dir, 'leaf.key'));
      await page.getByRole('button', { name: 'Save settings' }).click();
      await page.getByText('holds a private key, not a certificate').waitFor();
      await page.setInputFiles('#settings-server-ca', renewed.caFile);
      await page.getByRole('button', { name: 'Save settings' }).click();
      await page.getByText('Patient Docs net-ui-renewed test CA').waitFor();
      await page.getByText(new X509Certificate(fs.readFileSync(renewed.caFile)).fingerprint256, { exact: false }).waitFor();
      expect(fs.readFileSync(path.join(home, 'server-ca.pem'), 'utf8')).toBe(fs.readFileSync(renewed.caFile, 'utf8').trim() + '\n');
    } finally {
      // Back to the CA the proxy's certificate is from.
      await bridge('updateSettings', [{ caCertificate: fs.readFileSync(certs.caFile, 'utf8') }]);
      fs.rmSync(renewed.dir, { recursive: true, force: true });
    }
  });

  it('serves the connected server’s links only, and only with its token', async () => {
    const link = new URL((await bridge<SearchResponse>('searchDocuments', [PATIENT, { offset: 0, limit: 1, path: '/ui', hasContent: true }])).documents[0]!.storageDownloadUri!);
    const elsewhere = new URL(link);
    elsewhere.searchParams.set('url', 'https://example.org/secret');
    expect((await fetch(elsewhere)).status).toBe(403);
    const outside = new URL(link);
    outside.searchParams.set('url', direct.replace('/patient-docs/', '/other-app/'));
    expect((await fetch(outside)).status).toBe(403);
    const noToken = new URL(link);
    noToken.searchParams.set('t', 'wrong');
    expect((await fetch(noToken)).status).toBe(401);
  });
});
