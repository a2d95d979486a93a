/**
 * The clinic's server behind nginx (docs/nginx.conf.example) is restarted for updates: meanwhile
 * nginx answers 502, and scans found then wait out a retry delay that grows. Once the server is
 * back, the first file that goes through proves it, and the files nginx turned away go at once
 * (a Retry-After the server itself sent is kept: see electron/sync/upload/failure.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../electron/sync/api/api-client.js';
import { SyncEngine } from '../electron/sync/engine/engine.js';
import type { Journal } from '../electron/sync/journal/journal.js';
import { openJournal } from '../electron/sync/journal/open-journal.js';
import { certificateAuthorities, parseCaCertificate } from '../electron/sync/api/tls-trust.js';
import { exampleSite, nginxPort, startNginx, type Nginx } from './helpers/nginx.js';
import { freePort, type ServerProcess, startServerProcess, stopProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { makeTestCertificates } from './helpers/tls.js';
import { waitFor, writeFile } from './helpers/sync.js';

/** Retry delays of 30 s and more: far longer than the few seconds the files may take once the server is back. */
const LONG_BACKOFF_MS = 60_000;

describe('catching up behind nginx when the server is back', () => {
  const certs = makeTestCertificates('catchup-nginx', ['DNS:localhost', 'IP:127.0.0.1']);
  const scratch = tempDir('catchup-behind-nginx');
  const dataDir = path.join(scratch, 'server-data');
  const folder = path.join(scratch, 'scans');
  let serverPort: string;
  let publicUrl: string;
  let server: ServerProcess | undefined;
  let nginx: Nginx;
  let journal: Journal;
  let engine: SyncEngine;

  const startServer = async () => {
    server = await startServerProcess({ PORT: serverPort, PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_PUBLIC_URL: publicUrl });
  };
  const stopServer = async () => {
    // The same data directory is used again: stop the process without removing it.
    await stopProcess(server!.child);
    server = undefined;
  };

  beforeAll(async () => {
    fs.mkdirSync(folder, { recursive: true });
    const certFile = path.join(certs.dir, 'leaf.pem');
    const keyFile = path.join(certs.dir, 'leaf.key');
    fs.writeFileSync(certFile, certs.cert);
    fs.writeFileSync(keyFile, certs.key);
    const port = await nginxPort();
    serverPort = String(await freePort());
    publicUrl = `https://localhost:${port}`;
    await startServer();
    nginx = await startNginx(exampleSite({ port, certFile, keyFile, upstream: `http://127.0.0.1:${serverPort}` }), port);
    const ca = certificateAuthorities(parseCaCertificate(fs.readFileSync(certs.caFile)), {});
    const api = new ApiClient({
      serverUrl: nginx.url,
      organizationId: ORG,
      credentials: { tokenUrl: `${nginx.url}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret },
      ...(ca ? { certificateAuthority: ca } : {}),
    });
    journal = openJournal(path.join(scratch, 'journal.db'));
    engine = new SyncEngine({
      journal,
      api,
      tuning: { concurrency: 2, settleMs: 200, rescanMinutes: 0, ignorePatterns: [] },
      backoff: { baseMs: LONG_BACKOFF_MS, maxMs: LONG_BACKOFF_MS },
      publishEveryMs: 50,
      idlePollMs: 500,
    });
    await engine.start([{ id: 'pair-1', folder, patientId: PATIENT, patientName: 'Jane Roe', remoteBasePath: '/catchup-nginx', paused: false }]);
  });
  afterAll(async () => {
    await engine?.stop();
    journal?.close();
    await nginx?.close();
    await server?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
    fs.rmSync(certs.dir, { recursive: true, force: true });
  });

  const state = (name: string) => journal.find('pair-1', name);

  it('files nginx turned away with 502 go as soon as one request gets through, not when their delays run out', async () => {
    writeFile(folder, 'thu-upper.stl', 'solid thursday');
    await waitFor('the first scan synced through nginx', () => state('thu-upper.stl')?.state === 'synced', 20_000);

    await stopServer();
    const weekend = ['fri-upper.stl', 'sat-bite.stl', 'sun-cbct.pdf'];
    for (const name of weekend) writeFile(folder, name, `solid ${name}`);
    await waitFor('every weekend scan to wait for the server', () => weekend.every((name) => state(name)?.state === 'waiting'), 20_000);
    for (const name of weekend) {
      expect(state(name)).toMatchObject({ errorCode: 'SERVER_ERROR' });
      expect(state(name)!.errorDetail).toMatch(/502/);
      expect(state(name)!.nextAttemptAt! - Date.now()).toBeGreaterThan(20_000);
    }

    await startServer();
    // Monday's first scan is queued, not waiting: it is what finds the server back.
    writeFile(folder, 'mon-upper.stl', 'solid monday');
    const back = Date.now();
    await waitFor('every scan synced', () => [...weekend, 'mon-upper.stl'].every((name) => state(name)?.state === 'synced'), 15_000);
    expect(Date.now() - back).toBeLessThan(15_000);
  });
});
