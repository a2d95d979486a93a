/**
 * The engine behind a real nginx that terminates TLS (a certificate of the clinic's own CA) and
 * keeps its request-body limit, as IT leaves it: with nginx's default `client_max_body_size` (1 MiB)
 * a scan goes up in pieces that pass; with a limit too small even for the smallest piece (64 KiB)
 * the file waits with a message saying what IT must change, and goes up by itself once IT raises the
 * limit and reloads nginx (the site of docs/nginx.conf.example).
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PROXY_TOO_LARGE_MESSAGE } from '../electron/sync/upload/failure.js';
import { engineBehindNginx } from './helpers/nginx-engine.js';
import { waitFor, writeFile } from './helpers/sync.js';

const MiB = 1024 * 1024;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
/** nginx's own default: the example's `client_max_body_size 0;` left out. */
const NGINX_DEFAULT_LIMIT: [RegExp, string] = [/\n\s*client_max_body_size 0;/, ''];

describe('behind nginx with its body-size limit', () => {
  // Files from 2 MiB take the resumable route (its first piece is the whole file here). A waiting
  // file is tried again after 3–6 s, not 0.1–2 s: a retry sent while nginx reloads can still meet the
  // old limit (a kept-alive connection to an old worker), and the engine then rightly keeps 64 KiB
  // pieces until its next probe (minutes later; test/proxy-nginx-pieces covers that way back).
  const setup = engineBehindNginx('proxy-limit', { site: [NGINX_DEFAULT_LIMIT], engine: { resumableThreshold: 2 * MiB, backoffMs: 6000 } });
  const { record, document } = setup;

  it('passes nginx’s default 1 MiB limit in pieces, one-shot and resumable alike, bytes intact', async () => {
    const small = Buffer.alloc(1.5 * MiB, 3);
    const large = Buffer.alloc(5 * MiB + 17, 9);
    writeFile(setup.sut.folder, 'default/intraoral.stl', small);
    writeFile(setup.sut.folder, 'default/cbct.dcm', large);
    await waitFor('both synced', () => record('default/intraoral.stl')?.state === 'synced' && record('default/cbct.dcm')?.state === 'synced', 60_000);
    expect((await document('intraoral.stl'))?.sha256).toBe(sha256(small));
    expect((await document('cbct.dcm'))?.sha256).toBe(sha256(large));
    // Real nginx refused the large bodies itself (the server never saw them).
    expect(setup.nginx.errorLog()).toContain('client intended to send too large body');
    expect(setup.nginx.accessLog()).toMatch(/"PATCH [^"]+" 413 /);
  }, 90_000);

  it('a limit too small even for 64 KiB pieces: the file waits saying what IT must change, then goes up once IT raises the limit', async () => {
    await setup.nginx.reload(setup.site([['client_max_body_size 0;', 'client_max_body_size 32k;']]));
    const bytes = Buffer.alloc(200_000, 5);
    writeFile(setup.sut.folder, 'tiny/scan.ply', bytes);
    const waiting = await waitFor('waiting with the proxy’s reason', () => {
      const row = record('tiny/scan.ply');
      return row?.state === 'failed' || (row?.state === 'waiting' && row.errorCode === 'TOO_LARGE') ? row : undefined;
    }, 60_000);
    expect(waiting.state).toBe('waiting');
    expect(waiting.errorMessage).toBe(PROXY_TOO_LARGE_MESSAGE);
    expect(waiting.errorDetail).toContain('client_max_body_size');
    expect(waiting.errorDetail).not.toContain('<');

    // IT puts the recommended site in place and reloads nginx; nobody touches the workstation.
    await setup.nginx.reload(setup.site());
    await waitFor('synced by itself', () => record('tiny/scan.ply')?.state === 'synced', 60_000);
    expect((await document('scan.ply'))?.sha256).toBe(sha256(bytes));

    // The next small scan tries one request again (the proxy no longer limits it), and later ones go so too.
    const notes = Buffer.alloc(100_000, 6);
    writeFile(setup.sut.folder, 'tiny/notes.pdf', notes);
    await waitFor('the next small scan synced', () => record('tiny/notes.pdf')?.state === 'synced', 60_000);
    const stored = await document('notes.pdf');
    expect(stored?.sha256).toBe(sha256(notes));
    expect(setup.nginx.accessLog()).toContain(`"POST /storage/v1/documents/${stored!.id}/file HTTP/1.1" 201 `);
    expect(setup.sut.api.uploadPieces()).toEqual({ bytes: 64 * MiB, nextProbeAt: null });
  }, 120_000);
});
