/**
 * nginx's timeouts, scaled down from docs/nginx.conf.example to 2 s so they run out within a test:
 * a bandwidth-limited upload keeps bytes flowing and never trips them; a server that stalls longer
 * than them mid-upload (nginx answers 504) leaves the file waiting with the proxy's reason, and it
 * resumes and syncs intact once the server answers again; a download read slowly by the client
 * (with pauses longer than proxy_read_timeout, past proxy_max_temp_file_size) arrives intact.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { BandwidthLimiter } from '../electron/sync/upload/bandwidth.js';
import { engineBehindNginx } from './helpers/nginx-engine.js';
import { allDocuments, waitFor, writeFile } from './helpers/sync.js';

const MiB = 1024 * 1024;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('nginx timeouts', () => {
  const limiter = new BandwidthLimiter(0);
  const setup = engineBehindNginx('proxy-timeouts', {
    site: [
      ['client_body_timeout 120s;', 'client_body_timeout 2s;'],
      ['proxy_send_timeout  120s;', 'proxy_send_timeout 2s;'],
      // Downloads bigger than what nginx may keep on its disk (1 GiB by default, 1 MiB here).
      ['proxy_read_timeout  300s;', 'proxy_read_timeout 2s; proxy_max_temp_file_size 1m;'],
    ],
    engine: { resumableThreshold: MiB, limiter },
  });
  // Registered after the setup's, so it runs before the setup stops the server (vitest's hook stack).
  afterAll(() => {
    if (setup.server?.child.exitCode === null) setup.server.child.kill('SIGCONT');
  });
  const { record, document } = setup;

  it('a bandwidth-limited upload (longer than every timeout) passes', async () => {
    limiter.setLimit(200_000);
    const bytes = randomBytes(600_000);
    writeFile(setup.sut.folder, 'slow/arch.stl', bytes);
    await waitFor('synced', () => record('slow/arch.stl')?.state === 'synced', 30_000);
    expect((await document('arch.stl'))?.sha256).toBe(sha256(bytes));
    expect(setup.nginx.errorLog()).not.toContain('timed out');
  });

  it('a server stalled past nginx’s timeouts mid-upload: the file waits with the proxy’s 504, then resumes and syncs intact', async () => {
    limiter.setLimit(2 * MiB);
    const bytes = randomBytes(8 * MiB);
    writeFile(setup.sut.folder, 'stall/cbct.dcm', bytes);
    await waitFor('uploading', () => record('stall/cbct.dcm')?.state === 'uploading', 30_000, 20);
    await delay(500);
    // The server stops answering (a hung disk, a debugger) for longer than nginx waits.
    setup.server.child.kill('SIGSTOP');
    try {
      const waiting = await waitFor('waiting on the proxy’s 504', () => (record('stall/cbct.dcm')?.state === 'waiting' ? record('stall/cbct.dcm') : undefined), 30_000);
      expect(waiting.errorCode).toBe('SERVER_ERROR');
      expect(waiting.errorDetail).toContain('504');
    } finally {
      setup.server.child.kill('SIGCONT');
    }
    await waitFor('synced after the stall', () => record('stall/cbct.dcm')?.state === 'synced', 60_000);
    const stored = (await allDocuments(setup.sut.api)).filter((candidate) => candidate.fileName === 'cbct.dcm');
    expect(stored).toHaveLength(1);
    expect(stored[0]!.sha256).toBe(sha256(bytes));
    expect(setup.nginx.errorLog()).toMatch(/upstream timed out/);
  }, 90_000);

  type StoredScan = Awaited<ReturnType<typeof document>>;
  /**
   * Downloads a stored scan through nginx, pausing 3 s (longer than proxy_read_timeout) after 2 MiB;
   * `whilePaused` runs during the pause. The scan is looked up first unless the caller did.
   */
  async function slowDownload(
    whilePaused: () => void = () => undefined,
    known?: StoredScan,
  ): Promise<{ received: { length: number; sha256: string }; stored: { fileSize: number | null; sha256: string | null } }> {
    const stored = known ?? (await document('cbct.dcm'));
    const ca = fs.readFileSync(setup.caFile);
    const received = await new Promise<{ length: number; sha256: string }>((resolve, reject) => {
      https
        // A new connection each time: after a reload, a kept-alive one may still reach an old nginx worker.
        .get(stored!.storageDownloadUri!, { ca, agent: false }, (response) => {
          expect(response.statusCode).toBe(200);
          const hash = createHash('sha256');
          let length = 0;
          let paused = false;
          response.on('data', (chunk: Buffer) => {
            hash.update(chunk);
            length += chunk.length;
            if (!paused && length > 2 * MiB) {
              paused = true;
              response.pause();
              void delay(2500)
                .then(whilePaused)
                .then(() => delay(500))
                .then(() => response.resume(), reject);
            }
          });
          response.on('end', () => resolve({ length, sha256: hash.digest('hex') }));
          response.on('error', reject);
        })
        .on('error', reject);
    });
    return { received, stored: stored! };
  }

  it('a download read slowly, pausing longer than proxy_read_timeout, arrives intact', async () => {
    const { received, stored } = await slowDownload();
    expect(received).toEqual({ length: stored.fileSize, sha256: stored.sha256 });
  });

  it('with proxy_max_temp_file_size 0 (scans kept off the proxy’s disk, as docs/operations.md advises) a slow download arrives intact and nginx writes nothing to its disk', async () => {
    // Looked up before the reload: the engine's kept-alive connections may still reach an old nginx
    // worker just after it, which closes them mid-request ("socket hang up").
    const scan = await document('cbct.dcm');
    await setup.nginx.reload(setup.site([
      ['client_body_timeout 120s;', 'client_body_timeout 2s;'],
      ['proxy_send_timeout  120s;', 'proxy_send_timeout 2s;'],
      ['proxy_read_timeout  300s;', 'proxy_read_timeout 2s; proxy_max_temp_file_size 0;'],
    ]));
    const proxyTemp = path.join(setup.nginx.dir, 'proxy');
    const filesIn = (dir: string): string[] => (fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }).map(String).filter((name) => fs.statSync(path.join(dir, name)).isFile()) : []);
    let duringPause: string[] | undefined;
    const logBefore = setup.nginx.errorLog().length;
    const { received, stored } = await slowDownload(() => {
      duringPause = filesIn(proxyTemp);
    }, scan);
    expect(received).toEqual({ length: stored.fileSize, sha256: stored.sha256 });
    expect(duringPause).toEqual([]);
    expect(setup.nginx.errorLog().slice(logBefore)).not.toMatch(/an upstream response is buffered to a temporary file|timed out/);
  });
});
