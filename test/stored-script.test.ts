/**
 * Stored script on the server's origin: a client uploads HTML, SVG or XML with a script in it and
 * hands the signed link, with `disposition=inline` added, to someone whose browser opens it. The
 * server must refuse a link with anything added to it, save (never show) a stored file, and mark
 * every content and thumbnail response so a browser neither sniffs it nor runs anything in it.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePdf, makePng } from './fixtures/scans.js';
import { useBrowser } from './helpers/renderer-page.js';
import { expectProblem, PATIENT, startTestServer, type TestServer } from './helpers/server.js';

const SCRIPT = "document.title = 'script ran on ' + location.origin";
const HOSTILE: Array<{ fileName: string; type?: string; body: string }> = [
  { fileName: 'report.xml', body: `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><script>${SCRIPT}</script></html>` },
  { fileName: 'report.html', body: `<!doctype html><title>report</title><script>${SCRIPT}</script>` },
  { fileName: 'report.svg', body: `<svg xmlns="http://www.w3.org/2000/svg"><script>${SCRIPT}</script></svg>` },
  // Typed by the client as XML: the type the server serves it with comes from the client.
  { fileName: 'scan.stl', type: 'XML', body: `<html xmlns="http://www.w3.org/1999/xhtml"><script>${SCRIPT}</script></html>` },
];

let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  server = await startTestServer();
  browser = await useBrowser();
});
afterAll(async () => {
  await server?.close();
});

async function uploaded(fileName: string, body: Buffer, type?: string): Promise<{ storageDownloadUri: string; thumbnailDownloadUri: string | null }> {
  const created = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName, path: `/stored-script/${Math.random().toString(36).slice(2)}` } });
  expect(created.status).toBe(201);
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(body)]), fileName);
  if (type) form.append('Type', type);
  const response = await fetch(`${created.body.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${await server.token()}` }, body: form });
  expect(response.status).toBe(201);
  return (await response.json()) as { storageDownloadUri: string; thumbnailDownloadUri: string | null };
}

async function refused(link: string): Promise<string> {
  const response = await fetch(link);
  return expectProblem({ status: response.status, body: await response.json(), headers: response.headers }, 403).detail as string;
}

function expectSafetyHeaders(headers: Headers): void {
  expect(headers.get('x-content-type-options')).toBe('nosniff');
  expect(headers.get('content-security-policy')).toBe("sandbox; default-src 'none'");
}

describe('stored script on the server’s origin', () => {
  it.each(HOSTILE)('$fileName (type $type) is refused inline, saved as a download, and never runs in a browser', async ({ fileName, type, body }) => {
    const { storageDownloadUri: link } = await uploaded(fileName, Buffer.from(body), type);

    // The attack: the link as handed out, with disposition=inline added.
    expect(await refused(`${link}&disposition=inline`)).toMatch(/"disposition" is not part of its signature/);
    expect(await refused(`${link}&disposition=attachment`)).toMatch(/not part of its signature/);

    const served = await fetch(link);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-disposition')).toMatch(/^attachment; /);
    expectSafetyHeaders(served.headers);
    expect(await served.text()).toBe(body);

    // A real browser opening either address: a download (or the refusal), never a page that runs.
    const context = await browser.newContext({ acceptDownloads: true });
    try {
      const page = await context.newPage();
      const [download] = await Promise.all([page.waitForEvent('download'), page.goto(link).catch(() => null)]);
      expect(download.suggestedFilename()).toBe(fileName);
      const tampered = await page.goto(`${link}&disposition=inline`);
      expect(tampered?.status()).toBe(403);
      expect(await page.title()).not.toMatch(/script ran/);
    } finally {
      await context.close();
    }
  });

  it('refuses a link whose any signed parameter was changed, removed or added to', async () => {
    const { storageDownloadUri: link } = await uploaded('signed.pdf', makePdf('signed'));
    const url = new URL(link);
    expect([...url.searchParams.keys()].sort()).toEqual(['client', 'expires', 'org', 'sig', 'v']);
    for (const name of ['v', 'expires', 'client', 'org', 'sig']) {
      const changed = new URL(link);
      const value = changed.searchParams.get(name)!;
      changed.searchParams.set(name, name === 'v' || name === 'expires' ? String(Number(value) + 1) : name === 'org' ? value.replace(/.$/, (last) => (last === '0' ? '1' : '0')) : `${value}x`);
      await refused(changed.toString());
      const removed = new URL(link);
      removed.searchParams.delete(name);
      await refused(removed.toString());
    }
    for (const extra of ['x=1', 'response-content-type=text/html', 'v=1']) await refused(`${link}&${extra}`);
    expect((await fetch(link)).status).toBe(200);
  });

  it('marks a thumbnail as an inline image that sniffs nothing and runs nothing', async () => {
    const { thumbnailDownloadUri } = await uploaded('preview.png', makePng(64, 48));
    // Event-driven: the render finishes when the server's thumbnail jobs are idle.
    await server.server.context.content.thumbnails.idle();
    const response = await fetch(thumbnailDownloadUri!);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(response.headers.get('content-disposition')).toMatch(/^inline; /);
    expectSafetyHeaders(response.headers);
    expect(await refused(`${thumbnailDownloadUri!}&disposition=attachment`)).toMatch(/not part of its signature/);
  });
});
