/**
 * Thumbnails of real scans (issue 3), rendered by a real server in the background: a binary STL of
 * 20,000 triangles and a PDF, served as signed PNG links. The render runs under the server's render
 * timeout, so this file runs alone (vitest.config.ts, ALONE), with the machine to itself; the rest of
 * the content routes are test/content.e2e.test.ts's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeArchStl, makePdf } from './fixtures/scans.js';
import { contentRoutes } from './helpers/content.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const ARTIFACTS = path.resolve(import.meta.dirname, 'artifacts/tmp/content');

let t: TestServer;
const { createDocument, upload, waitForThumbnail } = contentRoutes(() => t);

beforeAll(async () => {
  t = await startTestServer();
  fs.mkdirSync(ARTIFACTS, { recursive: true });
});

afterAll(async () => {
  await t?.close();
});

describe('thumbnails', () => {
  it('renders a real binary STL and a real PDF in the background, as signed PNG links', async () => {
    const stl = await createDocument('arch.stl', '/thumbs');
    const pdf = await createDocument('report.pdf', '/thumbs');
    const uploadedStl = await upload(stl, makeArchStl({ triangles: 20_000 }));
    expect(uploadedStl.status).toBe(201);
    // The link comes with the upload's answer, while the render still runs, and waits for it.
    expect(uploadedStl.body.thumbnailDownloadUri).toMatch(/\/thumbnail\?v=1&expires=\d+&sig=/);
    const early = await fetch(uploadedStl.body.thumbnailDownloadUri);
    expect(early.status).toBe(200);
    expect(early.headers.get('content-type')).toBe('image/png');
    expect((await upload(pdf, makePdf('Patient Docs thumbnail test'), { type: 'PDF', fileName: 'report.pdf' })).status).toBe(201);
    for (const [document, name] of [
      [stl, 'thumbnail-stl.png'],
      [pdf, 'thumbnail-pdf.png'],
    ] as const) {
      const current = await waitForThumbnail(document.id);
      expect(current.thumbnailDownloadUri).toMatch(/\/thumbnail\?v=1&expires=\d+&sig=/);
      const response = await fetch(current.thumbnailDownloadUri);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/png');
      const png = Buffer.from(await response.arrayBuffer());
      const image = PNG.sync.read(png);
      expect(image.width).toBeGreaterThan(16);
      // Not a blank canvas: the render has more than a handful of distinct colours.
      const colours = new Set<number>();
      for (let index = 0; index < image.data.length; index += 4) colours.add(image.data.readUInt32BE(index));
      expect(colours.size).toBeGreaterThan(20);
      fs.writeFileSync(path.join(ARTIFACTS, name), png);
    }
  });
});
