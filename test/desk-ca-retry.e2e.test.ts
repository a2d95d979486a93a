/**
 * IT renews the server's certificate from a new clinic CA before telling the workstations: new scans
 * wait ("does not trust the server's certificate") with a retry delay that grows. Once IT saves the
 * new CA — in Settings of the running app, or with `patient-docs-sync connect --ca-file` next to a
 * running `run` service — the waiting files go at once, not after their delay (or, for a running
 * `run`, never: it kept the old CA until restarted).
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SyncApp } from '../electron/sync/app/sync-app.js';
import { openSyncHome } from '../electron/sync/home/sync-home.js';
import { startNetProxy, type NetProxy } from './helpers/net-proxy.js';
import { runCli, spawnCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { waitFor, writeFile } from './helpers/sync.js';
import { makeTestCertificates } from './helpers/tls.js';

/** A first retry 30–60 s out: far longer than the few seconds the files may take once the CA is saved. */
const LONG_BACKOFF_MS = 60_000;

describe('files waiting on an untrusted certificate', () => {
  const scratch = tempDir('desk-ca-retry');
  const oldCa = makeTestCertificates('desk-ca-old');
  const newCa = makeTestCertificates('desk-ca-new');
  let proxy: NetProxy;
  let server: ServerProcess;
  let homes = 0;

  /** A sync home connected to the proxy trusting the old CA, with one folder paired. */
  async function connectedApp(backoffMs: number): Promise<{ app: SyncApp; home: string; folder: string; pairId: string }> {
    const home = path.join(scratch, `home-${(homes += 1)}`);
    const folder = path.join(scratch, `scans-${homes}`);
    fs.mkdirSync(folder, { recursive: true });
    const opened = await openSyncHome(home);
    const app = new SyncApp({
      home,
      settings: opened.settings,
      secrets: opened.secrets,
      shell: 'headless',
      version: 'test',
      webhooks: false,
      caCheckMs: 200,
      engine: { backoff: { baseMs: backoffMs, maxMs: backoffMs }, idlePollMs: 500 },
    });
    await app.setupRemote({ serverUrl: proxy.url, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG, caCertificate: fs.readFileSync(oldCa.caFile, 'utf8') });
    await app.updateSettings({ settleMs: 200, webhook: { port: 0 } });
    const pair = await app.addPair({ folder, patientId: PATIENT, remoteBasePath: `/ca-retry-${homes}` });
    return { app, home, folder, pairId: pair.id };
  }

  beforeAll(async () => {
    proxy = await startNetProxy({ key: oldCa.key, cert: oldCa.cert });
    server = await startServerProcess({ PATIENT_DOCS_PUBLIC_URL: proxy.url });
    proxy.target = server.url;
  });
  afterAll(async () => {
    await proxy?.close();
    await server?.stop();
    for (const certs of [oldCa, newCa]) fs.rmSync(certs.dir, { recursive: true, force: true });
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('Settings: saving the new CA sends the waiting file within seconds, whatever its retry delay', async () => {
    proxy.setCertificate(oldCa.key, oldCa.cert);
    const { app, folder, pairId } = await connectedApp(LONG_BACKOFF_MS);
    try {
      await app.start();
      proxy.setCertificate(newCa.key, newCa.cert);
      writeFile(folder, 'renewed.stl', 'solid renewed\nendsolid renewed\n');
      const waiting = await waitFor('the file to wait on the certificate', () => app.engine.fileViews(pairId).find((file) => file.state === 'waiting'));
      expect(waiting.error?.code).toBe('CERT_UNTRUSTED');
      expect(waiting.nextAttemptAt! - Date.now()).toBeGreaterThan(20_000);

      await app.updateSettings({ caCertificate: fs.readFileSync(newCa.caFile, 'utf8') });
      const saved = Date.now();
      await waitFor('the file to be verified', () => app.engine.fileViews(pairId).find((file) => file.state === 'synced'), 15_000);
      expect(Date.now() - saved).toBeLessThan(15_000);
    } finally {
      await app.stop();
    }
  });

  it('CLI: `connect --ca-file` next to a running `run` sends the waiting file within seconds', async () => {
    proxy.setCertificate(oldCa.key, oldCa.cert);
    const { app, home, folder } = await connectedApp(LONG_BACKOFF_MS);
    await app.stop();
    const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: String(LONG_BACKOFF_MS) };
    proxy.setCertificate(newCa.key, newCa.cert);
    const run = spawnCli(home, ['run'], env);
    let output = '';
    run.child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await waitFor('run to watch', () => output.includes('watching 1 folder'), 30_000);
      writeFile(folder, 'renewed.ply', 'ply\nformat ascii 1.0\nend_header\n');
      // Read straight from the journal `run` writes (what `status` shows), without a process per look.
      const journal = new Database(path.join(home, 'journal.db'), { readonly: true });
      try {
        await waitFor('the file to wait on the certificate', () => journal.prepare("SELECT 1 FROM files WHERE state = 'waiting' AND error_code = 'CERT_UNTRUSTED'").get() !== undefined, 30_000);
      } finally {
        journal.close();
      }

      const connected = await runCli(home, ['connect', '--server', proxy.url, '--client-id', CLIENT.id, '--organization', ORG, '--ca-file', newCa.caFile], env);
      expect(connected.code).toBe(0);
      const saved = Date.now();
      await waitFor('run to verify the file', () => output.includes('synced   renewed.ply'), 15_000);
      expect(Date.now() - saved).toBeLessThan(15_000);
    } finally {
      run.child.kill('SIGTERM');
      await run.done;
    }
  });
});
