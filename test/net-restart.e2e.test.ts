/**
 * The back-office server is restarted (killed: an update, a power cut) while a scan is going up,
 * behind the clinic's proxy, which answers 502 pages until it is back. One-shot and resumable
 * uploads alike end synced once, as version 1, with the right bytes, and no row stays "uploading".
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNetProxy, type NetProxy } from './helpers/net-proxy.js';
import { freePort, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { tempDir } from './helpers/server.js';
import { allDocuments, startEngine, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

const MiB = 1024 * 1024;

describe('server restarted in the middle of an upload', () => {
  const dataDir = tempDir('net-restart-data');
  let port: number;
  let proxy: NetProxy;
  let server: ServerProcess;
  let sut: EngineUnderTest;
  let restarts = 0;

  const start = async () => {
    server = await startServerProcess({ PORT: String(port), PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_PUBLIC_URL: proxy.url });
    proxy.target = server.url;
  };
  /** Kills the server once the upload's body has started through the proxy, then starts it again. */
  const restartDuring = (isUpload: (method: string, url: string) => boolean) => {
    let fired = false;
    proxy.intercept = (request) => {
      if (fired || !isUpload(request.method ?? '', request.url ?? '')) return null;
      fired = true;
      let seen = 0;
      let killed = false;
      request.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen < 256 * 1024 || killed) return;
        killed = true;
        server.child.kill('SIGKILL');
        restarts += 1;
        void new Promise((resolve) => server.child.once('exit', resolve)).then(start);
      });
      return null;
    };
  };

  beforeAll(async () => {
    port = await freePort();
    proxy = await startNetProxy();
    await start();
    sut = await startEngine(proxy.url, { tuning: { settleMs: 200 }, resumableThreshold: 8 * MiB, backoffMs: 100 });
  });
  afterAll(async () => {
    await sut?.close();
    await server?.stop();
    await proxy?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const check = async (name: string, bytes: Buffer) => {
    await waitFor(`${name} synced`, () => sut.journal.byPair(sut.pair.id).find((row) => row.relativePath === name)?.state === 'synced', 60_000, 100);
    const documents = (await allDocuments(sut.api)).filter((document) => document.fileName === name);
    expect(documents).toHaveLength(1);
    expect(documents[0]!.version).toBe(1);
    expect(documents[0]!.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(sut.journal.byPair(sut.pair.id).filter((row) => row.state === 'uploading' || row.state === 'creating' || row.state === 'verifying')).toEqual([]);
  };

  it('a one-shot upload cut by a server restart ends synced once', async () => {
    const bytes = Buffer.alloc(4 * MiB, 5);
    restartDuring((method, url) => method === 'POST' && url.endsWith('/file'));
    writeFile(sut.folder, 'oneshot.stl', bytes);
    await check('oneshot.stl', bytes);
    expect(restarts).toBe(1);
  });

  it('a resumable upload cut by a server restart resumes and ends synced once', async () => {
    const bytes = Buffer.alloc(24 * MiB, 6);
    restartDuring((method) => method === 'PATCH');
    writeFile(sut.folder, 'resumable.ply', bytes);
    await check('resumable.ply', bytes);
    expect(restarts).toBe(2);
    // Resumed from the server's offset on the same upload, not begun again.
    expect(proxy.seen.filter((line) => /^POST \S*\/uploads$/.test(line))).toHaveLength(1);
  });
});
