/**
 * The engine behind a real nginx whose body-size limit IT changes while the app runs: nginx's default
 * 1 MiB limit makes the resumable upload's pieces smaller (1 MiB); once IT raises the limit and
 * reloads nginx, a later upload tries larger pieces again and keeps them, with nobody restarting
 * the app. A proxy that keeps its limit costs one refused piece per probe, and the probes grow
 * further apart; no byte is lost either way.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certificateAuthorities, parseCaCertificate } from '../electron/sync/tls-trust.js';
import { exampleSite, nginxPort, startNginx, type Nginx } from './helpers/nginx.js';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { makeTestCertificates } from './helpers/tls.js';
import { allDocuments, startEngine, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

const MiB = 1024 * 1024;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
/** nginx's own default: the example's `client_max_body_size 0;` left out. */
const NGINX_DEFAULT_LIMIT: [RegExp, string] = [/\n\s*client_max_body_size 0;/, ''];
/** Short for the test; the app waits 5 minutes, doubling to an hour. */
const PROBE_AFTER_MS = 1500;

describe('behind nginx whose body-size limit IT raises while the app runs', () => {
  const certs = makeTestCertificates('proxy-pieces', ['DNS:localhost', 'IP:127.0.0.1']);
  const certFile = path.join(certs.dir, 'leaf.pem');
  const keyFile = path.join(certs.dir, 'leaf.key');
  let server: ServerProcess;
  let nginx: Nginx;
  let sut: EngineUnderTest;
  let site: (changes?: Array<[string | RegExp, string]>) => string;

  beforeAll(async () => {
    fs.writeFileSync(certFile, certs.cert);
    fs.writeFileSync(keyFile, certs.key);
    const port = await nginxPort();
    server = await startServerProcess({ PATIENT_DOCS_PUBLIC_URL: `https://localhost:${port}` });
    site = (changes = []) => exampleSite({ port, certFile, keyFile, upstream: server.url }, changes);
    nginx = await startNginx(site([NGINX_DEFAULT_LIMIT]), port);
    const ca = certificateAuthorities(parseCaCertificate(fs.readFileSync(certs.caFile)), {});
    sut = await startEngine(nginx.url, {
      tuning: { settleMs: 200 },
      backoffMs: 200,
      resumableThreshold: 2 * MiB,
      pieceProbe: { afterMs: PROBE_AFTER_MS, maxMs: 60_000 },
      ...(ca ? { certificateAuthority: ca } : {}),
    });
  });
  afterAll(async () => {
    await sut?.close();
    await nginx?.close();
    await server?.stop();
    fs.rmSync(certs.dir, { recursive: true, force: true });
  });

  const record = (name: string) => sut.journal.byPair(sut.pair.id).find((candidate) => candidate.relativePath === name);
  const document = async (name: string) => (await allDocuments(sut.api)).find((candidate) => candidate.fileName === name);
  /** The statuses nginx logged for the PATCHes (the pieces) of one file's resumable upload, in order. */
  const pieces = async (name: string) => {
    const id = (await document(name))!.id;
    const line = new RegExp(`"PATCH /storage/v1/documents/${id}/uploads/\\S+ HTTP/1\\.1" (\\d{3}) `, 'g');
    return [...nginx.accessLog().matchAll(line)].map((match) => Number(match[1]));
  };
  const synced = async (name: string, bytes: Buffer) => {
    writeFile(sut.folder, name, bytes);
    await waitFor(`${name} synced`, () => record(name)?.state === 'synced', 60_000);
    expect((await document(path.posix.basename(name)))?.sha256, `${name} arrived whole`).toBe(sha256(bytes));
  };
  const probeDue = () => waitFor('a larger piece is due to be tried', () => {
    const state = sut.api.uploadPieces();
    return state.nextProbeAt !== null && Date.now() >= state.nextProbeAt;
  }, 30_000, 50);

  it('under nginx’s 1 MiB limit: 1 MiB pieces; a larger piece is tried after a while, refused once, and not tried again at once', async () => {
    await synced('case-1/cbct.dcm', Buffer.alloc(6 * MiB + 17, 1));
    const first = await pieces('cbct.dcm');
    expect(first.filter((status) => status === 413).length, 'nginx refused the large pieces').toBeGreaterThan(0);
    expect(first.filter((status) => status < 300), '1 MiB pieces').toHaveLength(7);
    expect(sut.api.uploadPieces().bytes).toBe(MiB);

    await probeDue();
    const probedAt = Date.now();
    await synced('case-2/cbct-2.dcm', Buffer.alloc(6 * MiB, 2));
    const second = await pieces('cbct-2.dcm');
    expect(second.filter((status) => status === 413), 'one probe, refused').toHaveLength(1);
    expect(second.filter((status) => status < 300)).toHaveLength(6);
    const after = sut.api.uploadPieces();
    expect(after.bytes).toBe(MiB);
    // The next probe waits twice as long: a proxy that keeps its limit is not asked at every piece.
    expect(after.nextProbeAt!).toBeGreaterThanOrEqual(probedAt + 2 * PROBE_AFTER_MS);
  }, 90_000);

  it('IT raises the limit and reloads nginx: the next upload grows its pieces again, with no 413 and no restart', async () => {
    await nginx.reload(site());
    await probeDue();
    await synced('case-3/full-arch.ply', Buffer.alloc(24 * MiB + 5, 3));
    const third = await pieces('full-arch.ply');
    expect(third.filter((status) => status === 413), 'nothing refused').toHaveLength(0);
    // 4 MiB, then 16 MiB, then the rest: 3 pieces instead of 25 of 1 MiB.
    expect(third.filter((status) => status < 300)).toHaveLength(3);
    expect(sut.api.uploadPieces().bytes).toBeGreaterThanOrEqual(16 * MiB);
  }, 90_000);
});
