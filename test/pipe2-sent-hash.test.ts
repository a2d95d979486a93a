/** The sha256 of the bytes as sent: whole-file hash however the chunks arrive (resent, resumed). */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileChunks } from '../electron/sync/bandwidth.js';
import type { UploadRequest } from '../electron/sync/document-api.js';
import { SentBytesHash } from '../electron/sync/upload-check.js';
import { tempDir } from './helpers/server.js';

describe('SentBytesHash', () => {
  const dir = tempDir('pipe2-sent-hash');
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'scan.ply');
  const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, index) => (index * 7) % 251));
  fs.writeFileSync(file, bytes);
  const expected = createHash('sha256').update(bytes).digest('hex');

  function request(seen: string[], order: string[]): UploadRequest {
    return {
      patientId: 'p', storageUrl: 'u', documentId: 'd', fileName: 'scan.ply', fileType: 'PLY', filePath: file, size: bytes.length, ifMatch: null,
      onSentSha256: (sha) => {
        seen.push(sha);
        order.push('hash');
      },
    };
  }

  async function drain(chunks: AsyncIterable<Buffer>, order: string[]): Promise<void> {
    for await (const chunk of chunks) order.push(`chunk ${chunk.length}`);
  }

  it('reports the whole file once, before the last chunk is passed on', async () => {
    const [seen, order]: [string[], string[]] = [[], []];
    await drain(SentBytesHash.wrap(request(seen, order), 0, fileChunks(file, { end: bytes.length })), order);
    expect(seen).toEqual([expected]);
    expect(order.indexOf('hash')).toBe(order.length - 2);
  });

  it('hashes resent bytes once and reads bytes an earlier process sent from disk', async () => {
    const [seen, order]: [string[], string[]] = [[], []];
    const req = request(seen, order);
    const hash = new SentBytesHash(req);
    // Resumed at 100,000 (sent before a restart), a piece to 200,000, then a resend from 150,000.
    await drain(SentBytesHash.wrap(req, 100_000, fileChunks(file, { start: 100_000, end: 200_000 }), hash), order);
    expect(seen).toEqual([]);
    await drain(SentBytesHash.wrap(req, 150_000, fileChunks(file, { start: 150_000, end: bytes.length }), hash), order);
    expect(seen).toEqual([expected]);
  });

  it('passes chunks through untouched when nobody asks for the hash', async () => {
    const chunks = fileChunks(file, { end: bytes.length });
    const { onSentSha256: _unused, ...plain } = request([], []);
    expect(SentBytesHash.wrap(plain, 0, chunks)).toBe(chunks);
  });
});
