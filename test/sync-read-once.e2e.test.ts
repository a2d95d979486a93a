/**
 * A file is read once on its way up: hashed as its bytes are sent, its stamp (size, mtime, ctime,
 * file id) deciding whether those bytes are still the file's. Against the real server process and
 * real files: a file left alone is synced without a second read; a file rewritten during or right
 * after its upload (same size, mtime put back with utimes: only its ctime tells) or replaced by a
 * rename is caught, and its new bytes go up as a new version, never recorded under the old hash.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256File } from '../electron/sync/upload/hash.js';
import { statIfPresent } from '../electron/sync/watch/stability.js';
import { fileStamp, stampIsQuiet } from '../electron/sync/upload/upload-check.js';
import { PATIENT } from './helpers/server.js';
import { usePipelineBench, waitFor, writeFile } from './helpers/sync.js';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/**
 * Writes the file with an mtime of whole seconds (so utimes can put it back to the nanosecond),
 * then waits (bounded) until it has been left alone long enough for its stamp to count.
 */
async function quietFile(folder: string, name: string, bytes: Buffer): Promise<string> {
  const file = writeFile(folder, name, bytes);
  const wholeSeconds = Math.floor(Date.now() / 1000) - 60;
  fs.utimesSync(file, wholeSeconds, wholeSeconds);
  await waitFor('the file to be left alone', async () => stampIsQuiet((await fileStamp(file))!), 10_000, 100);
  return file;
}

/** Rewrites the file in place with other bytes of the same length and puts its mtime back: size and mtime as before, to the nanosecond. */
function rewriteKeepingSizeAndMtime(file: string): Buffer {
  const before = fs.statSync(file, { bigint: true });
  const bytes = randomBytes(Number(before.size));
  fs.writeFileSync(file, bytes);
  putBackMtime(file, before.mtimeNs);
  return bytes;
}

/** Sets the mtime to `mtimeNs` (whole seconds, as quietFile writes them) and checks it took exactly. */
function putBackMtime(file: string, mtimeNs: bigint): void {
  const seconds = Number(mtimeNs / 1_000_000_000n);
  fs.utimesSync(file, seconds, seconds);
  expect(fs.statSync(file, { bigint: true }).mtimeNs).toBe(mtimeNs);
}

describe('a file is read once on its way up, and a change during the upload is still caught', () => {
  const bench = usePipelineBench({ resumableThreshold: 1_000_000, remoteBasePath: '/read-once' });

  const observe = async (name: string, file: string) => bench.journal.observe('pair-1', name, { ...(await statIfPresent(file))!, remotePath: '/read-once', fileName: name });
  const serverDocument = async (id: string) => (await bench.sut.api.search(PATIENT, { id: [id], hasContent: true, offset: 0, limit: 1 })).documents[0];
  /** The real hash from disk, counted. */
  const countingHash = () => {
    const calls: string[] = [];
    return { calls, hash: (file: string, signal?: AbortSignal) => (calls.push(file), sha256File(file, signal)) };
  };

  for (const [route, size] of [
    ['one-shot', 300_000],
    ['resumable', 1_500_000],
  ] as const) {
    it(`${route}: a file left alone is synced and verified without being read a second time`, async () => {
      const name = `quiet-${route}.stl`;
      const bytes = randomBytes(size);
      const file = await quietFile(bench.sut.folder, name, bytes);
      const row = await observe(name, file);
      const counted = countingHash();

      const outcome = await bench.run(row.id, { hash: counted.hash });

      expect(outcome.result).toBe('synced');
      expect(counted.calls).toEqual([]);
      expect(outcome.record.sha256).toBe(sha256(bytes));
      expect(await serverDocument(outcome.record.documentId!)).toMatchObject({ version: 1, fileSize: size, sha256: sha256(bytes) });
    });

    it(`${route}: bytes rewritten during the upload with size and mtime kept never become the content; the new bytes go up next`, async () => {
      const name = `rewritten-during-${route}.stl`;
      const file = await quietFile(bench.sut.folder, name, randomBytes(size));
      const row = await observe(name, file);
      let rewritten: Buffer | undefined;
      const api = bench.withUpload((request) =>
        bench.sut.api.upload({
          ...request,
          onProgress: (bytesDone) => {
            if (!rewritten && bytesDone > 0) rewritten = rewriteKeepingSizeAndMtime(file);
            request.onProgress?.(bytesDone);
          },
        }),
      );

      const first = await bench.run(row.id, { api, settleMs: 0 });
      expect(rewritten).toBeDefined();
      expect(first.result).toBe('queued');
      expect(first.record.state).toBe('queued');
      const [placeholder] = (await bench.sut.api.search(PATIENT, { id: [first.record.documentId!], offset: 0, limit: 1 })).documents;
      expect(placeholder!.hasContent).toBe(false);

      // The rewrite is seconds old at most: no settle wait, so the run takes the new bytes at once.
      const second = await bench.run(row.id, { settleMs: 0 });
      expect(second.result).toBe('synced');
      expect(second.record.sha256).toBe(sha256(rewritten!));
      expect(await serverDocument(second.record.documentId!)).toMatchObject({ fileSize: size, sha256: sha256(rewritten!) });
    });

    it(`${route}: bytes rewritten once all were sent, size and mtime kept, are caught and go up as a new version`, async () => {
      const name = `rewritten-after-${route}.stl`;
      const original = randomBytes(size);
      const file = await quietFile(bench.sut.folder, name, original);
      const row = await observe(name, file);
      let rewritten: Buffer | undefined;
      const api = bench.withUpload(async (request) => {
        const document = await bench.sut.api.upload(request);
        rewritten = rewriteKeepingSizeAndMtime(file);
        return document;
      });

      const first = await bench.run(row.id, { api, settleMs: 0 });
      expect(first.result).toBe('queued');
      expect(first.record.state).toBe('queued');
      expect(await serverDocument(first.record.documentId!)).toMatchObject({ version: 1, sha256: sha256(original) });

      // The rewrite is seconds old at most: no settle wait, so the run takes the new bytes at once.
      const second = await bench.run(row.id, { settleMs: 0 });
      expect(second.result).toBe('synced');
      expect(second.record.sha256).toBe(sha256(rewritten!));
      expect(await serverDocument(second.record.documentId!)).toMatchObject({ version: 2, fileSize: size, sha256: sha256(rewritten!) });
    });
  }

  it('a file replaced by a rename during its upload (same size and mtime: another file id) is caught', async () => {
    const name = 'replaced.stl';
    const file = await quietFile(bench.sut.folder, name, randomBytes(300_000));
    const row = await observe(name, file);
    const replacement = randomBytes(300_000);
    const api = bench.withUpload(async (request) => {
      const document = await bench.sut.api.upload(request);
      const { mtimeNs } = fs.statSync(file, { bigint: true });
      const staged = path.join(path.dirname(file), '.replacement.tmp');
      fs.writeFileSync(staged, replacement);
      putBackMtime(staged, mtimeNs);
      fs.renameSync(staged, file);
      return document;
    });

    const first = await bench.run(row.id, { api, settleMs: 0 });
    expect(first.result).toBe('queued');

    // The rewrite is seconds old at most: no settle wait, so the run takes the new bytes at once.
    const second = await bench.run(row.id, { settleMs: 0 });
    expect(second.result).toBe('synced');
    expect(await serverDocument(second.record.documentId!)).toMatchObject({ version: 2, sha256: sha256(replacement) });
  });
});
