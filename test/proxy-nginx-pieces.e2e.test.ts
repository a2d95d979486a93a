/**
 * The engine behind a real nginx whose body-size limit IT changes while the app runs: nginx's default
 * 1 MiB limit makes the resumable upload's pieces smaller (1 MiB); once IT raises the limit and
 * reloads nginx, a later upload tries larger pieces again and keeps them, with nobody restarting
 * the app. A proxy that keeps its limit costs one refused piece per probe, and the probes grow
 * further apart; no byte is lost either way.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { engineBehindNginx } from './helpers/nginx-engine.js';
import { waitFor, writeFile } from './helpers/sync.js';

const MiB = 1024 * 1024;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
/** nginx's own default: the example's `client_max_body_size 0;` left out. */
const NGINX_DEFAULT_LIMIT: [RegExp, string] = [/\n\s*client_max_body_size 0;/, ''];
/** Short for the test; the app waits 5 minutes, doubling to an hour. */
const PROBE_AFTER_MS = 1500;

describe('behind nginx whose body-size limit IT raises while the app runs', () => {
  const setup = engineBehindNginx('proxy-pieces', {
    site: [NGINX_DEFAULT_LIMIT],
    engine: { resumableThreshold: 2 * MiB, pieceProbe: { afterMs: PROBE_AFTER_MS, maxMs: 60_000 } },
  });
  const { record, document } = setup;
  /** The statuses nginx logged for the PATCHes (the pieces) of one file's resumable upload, in order. */
  const pieces = async (name: string) => {
    const id = (await document(name))!.id;
    const line = new RegExp(`"PATCH /storage/v1/documents/${id}/uploads/\\S+ HTTP/1\\.1" (\\d{3}) `, 'g');
    return [...setup.nginx.accessLog().matchAll(line)].map((match) => Number(match[1]));
  };
  const synced = async (name: string, bytes: Buffer) => {
    writeFile(setup.sut.folder, name, bytes);
    await waitFor(`${name} synced`, () => record(name)?.state === 'synced', 60_000);
    expect((await document(path.posix.basename(name)))?.sha256, `${name} arrived whole`).toBe(sha256(bytes));
  };
  const probeDue = () => waitFor('a larger piece is due to be tried', () => {
    const state = setup.sut.api.uploadPieces();
    return state.nextProbeAt !== null && Date.now() >= state.nextProbeAt;
  }, 30_000, 50);

  it('under nginx’s 1 MiB limit: 1 MiB pieces; a larger piece is tried after a while, refused once, and not tried again at once', async () => {
    await synced('case-1/cbct.dcm', Buffer.alloc(6 * MiB + 17, 1));
    const first = await pieces('cbct.dcm');
    expect(first.filter((status) => status === 413).length, 'nginx refused the large pieces').toBeGreaterThan(0);
    expect(first.filter((status) => status < 300), '1 MiB pieces').toHaveLength(7);
    expect(setup.sut.api.uploadPieces().bytes).toBe(MiB);

    await probeDue();
    const probedAt = Date.now();
    await synced('case-2/cbct-2.dcm', Buffer.alloc(6 * MiB, 2));
    const second = await pieces('cbct-2.dcm');
    expect(second.filter((status) => status === 413), 'one probe, refused').toHaveLength(1);
    expect(second.filter((status) => status < 300)).toHaveLength(6);
    const after = setup.sut.api.uploadPieces();
    expect(after.bytes).toBe(MiB);
    // The next probe waits twice as long: a proxy that keeps its limit is not asked at every piece.
    expect(after.nextProbeAt!).toBeGreaterThanOrEqual(probedAt + 2 * PROBE_AFTER_MS);
  }, 90_000);

  it('IT raises the limit and reloads nginx: the next upload grows its pieces again, with no 413 and no restart', async () => {
    await setup.nginx.reload(setup.site());
    await probeDue();
    await synced('case-3/full-arch.ply', Buffer.alloc(24 * MiB + 5, 3));
    const third = await pieces('full-arch.ply');
    expect(third.filter((status) => status === 413), 'nothing refused').toHaveLength(0);
    // 4 MiB, then 16 MiB, then the rest: 3 pieces instead of 25 of 1 MiB.
    expect(third.filter((status) => status < 300)).toHaveLength(3);
    expect(setup.sut.api.uploadPieces().bytes).toBeGreaterThanOrEqual(16 * MiB);
  }, 90_000);
});
