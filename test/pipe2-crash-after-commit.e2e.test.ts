/**
 * kill -9 after the server committed an upload and before the journal heard of it: the row stays
 * `uploading` while the server holds the file's bytes. A file changed before the restart goes up
 * as a new version of that document (the journal kept the sha256 of the bytes it sent), while
 * content another workstation put under the same name still fails as a conflict.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { UploadRequest } from '../electron/sync/document-api.js';
import type { PipelineDeps, PipelineJournal, PipelineOutcome } from '../electron/sync/pipeline.js';
import { statIfPresent } from '../electron/sync/stability.js';
import { usePipelineBench, writeFile } from './helpers/sync.js';

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

describe.each([
  { route: 'one request', resumableThreshold: undefined },
  { route: 'resumable (tus)', resumableThreshold: 1 },
])('a kill -9 between the server commit and the journal write ($route)', ({ route, resumableThreshold }) => {
  const bench = usePipelineBench({ remoteBasePath: '/crash-commit', ...(resumableThreshold ? { resumableThreshold } : {}) });

  /** The process "dies" once the upload has returned: no journal write after it lands. */
  function killedAfterUpload(before?: (request: UploadRequest) => Promise<void>): Partial<PipelineDeps> {
    let dead = false;
    const journal: PipelineJournal = {
      get: (id) => bench.journal.get(id),
      transition: (...args) => {
        if (dead) throw new Error('the process was killed');
        return bench.journal.transition(...args);
      },
    };
    const api = bench.withUpload(async (request) => {
      await before?.(request);
      await bench.sut.api.upload(request).catch(() => null);
      dead = true;
      throw new Error('the process was killed');
    });
    return { journal, api };
  }

  async function observe(relativePath: string): Promise<number> {
    const stat = (await statIfPresent(`${bench.pair.folder}/${relativePath}`))!;
    const name = relativePath.split('/').pop()!;
    return bench.journal.observe(bench.pair.id, relativePath, { size: stat.size, mtimeMs: stat.mtimeMs, remotePath: `/crash-commit/${route}`, fileName: name }).id;
  }

  /** Runs the pipeline as the restarted engine does until the row rests (a change requeues it first). */
  async function runUntilRest(id: number): Promise<PipelineOutcome> {
    for (let run = 0; ; run += 1) {
      const outcome = await bench.run(id, { settleMs: 0 });
      if (outcome.result !== 'queued' || run > 3) return outcome;
    }
  }

  it('uploads the changed file as a new version of its own content', async () => {
    const relativePath = `${route}/upper.stl`;
    const path = writeFile(bench.pair.folder, relativePath, 'solid upper v1\nendsolid upper\n');
    const id = await observe(relativePath);
    await expect(bench.run(id, killedAfterUpload())).rejects.toThrow(/killed/);
    const crashed = bench.journal.get(id)!;
    expect(crashed.state).toBe('uploading');
    const server = (await bench.sut.api.search(bench.pair.patientId, { id: [crashed.documentId!], offset: 0, limit: 1 })).documents[0]!;
    expect(server.sha256).toBe(sha256('solid upper v1\nendsolid upper\n'));

    // Re-exported while the engine was down: other bytes, other size.
    fs.writeFileSync(path, 'solid upper v2, re-exported after the crash\nendsolid upper\n');
    const outcome = await runUntilRest(id);
    expect(outcome.result, JSON.stringify(outcome.record)).toBe('synced');
    const after = (await bench.sut.api.search(bench.pair.patientId, { id: [crashed.documentId!], offset: 0, limit: 1 })).documents[0]!;
    expect(after.sha256).toBe(sha256(fs.readFileSync(path)));
    expect(after.version).toBe(2);
  });

  it('still fails as a conflict over content another workstation put there', async () => {
    const relativePath = `${route}/lower.stl`;
    const path = writeFile(bench.pair.folder, relativePath, 'solid lower, this workstation\nendsolid lower\n');
    const id = await observe(relativePath);
    const other = writeFile(bench.pair.folder, `elsewhere/${route}-lower.stl`, 'solid lower, the other workstation\n');
    // The other workstation's upload to the shared placeholder wins the race; ours is refused.
    const theirs = killedAfterUpload(async (request) => {
      const { size, mtimeMs } = fs.statSync(other);
      const { patientId, storageUrl, documentId, fileName, fileType } = request;
      await bench.sut.api.upload({ patientId, storageUrl, documentId, fileName, fileType, filePath: other, size, mtimeMs, ifMatch: null });
    });
    await expect(bench.run(id, theirs)).rejects.toThrow(/killed/);
    const crashed = bench.journal.get(id)!;
    expect(crashed.state).toBe('uploading');

    fs.writeFileSync(path, 'solid lower, changed here after the crash\nendsolid lower\n');
    const outcome = await runUntilRest(id);
    expect(outcome.result).toBe('failed');
    expect(outcome.record.errorCode).toBe('CONFLICT');
    const after = (await bench.sut.api.search(bench.pair.patientId, { id: [crashed.documentId!], offset: 0, limit: 1 })).documents[0]!;
    expect(after.sha256).toBe(sha256(fs.readFileSync(other)));
    expect(after.version).toBe(1);
  });
});
