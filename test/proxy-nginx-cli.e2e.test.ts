/**
 * A workstation's sync CLI against the server behind a real nginx running exactly
 * docs/nginx.conf.example (TLS with a certificate of the clinic's own CA): `connect --ca-file`,
 * `add-pair` and `run --once` sync a scan one-shot and another resumable (tus) through nginx.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeAsciiStl } from './fixtures/scans.js';
import { exampleSite, nginxPort, startNginx, type Nginx } from './helpers/nginx.js';
import { runCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { makeTestCertificates } from './helpers/tls.js';

const MiB = 1024 * 1024;

describe('the sync CLI behind nginx', () => {
  const certs = makeTestCertificates('proxy-cli', ['DNS:localhost', 'IP:127.0.0.1']);
  const scratch = tempDir('proxy-cli');
  let server: ServerProcess;
  let nginx: Nginx;
  let publicUrl: string;

  beforeAll(async () => {
    const certFile = path.join(certs.dir, 'leaf.pem');
    const keyFile = path.join(certs.dir, 'leaf.key');
    fs.writeFileSync(certFile, certs.cert);
    fs.writeFileSync(keyFile, certs.key);
    const port = await nginxPort();
    publicUrl = `https://localhost:${port}`;
    server = await startServerProcess({ PATIENT_DOCS_PUBLIC_URL: publicUrl, PATIENT_DOCS_TRUSTED_PROXIES: '127.0.0.1' });
    nginx = await startNginx(exampleSite({ port, certFile, keyFile, upstream: server.url }), port);
  });
  afterAll(async () => {
    await nginx?.close();
    await server?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
    fs.rmSync(certs.dir, { recursive: true, force: true });
  });

  it('the sync CLI connects with --ca-file and syncs through nginx, one-shot and resumable', async () => {
    const home = path.join(scratch, 'home');
    const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: '100', PATIENT_DOCS_SYNC_RESUMABLE_THRESHOLD: String(2 * MiB) };
    const connected = await runCli(home, ['connect', '--server', publicUrl, '--client-id', CLIENT.id, '--organization', ORG, '--ca-file', certs.caFile], env);
    expect(connected.stderr).not.toContain('patient-docs-sync:');
    expect(connected.code).toBe(0);
    const scans = path.join(scratch, 'scans');
    fs.mkdirSync(scans);
    fs.writeFileSync(path.join(scans, 'arch.stl'), makeAsciiStl({ triangles: 500 }));
    fs.writeFileSync(path.join(scans, 'cbct.dcm'), Buffer.alloc(3 * MiB, 1));
    expect((await runCli(home, ['add-pair', '--folder', scans, '--patient', PATIENT, '--path', '/nginx'], env)).code).toBe(0);
    const run = await runCli(home, ['run', '--once', '--timeout', '60'], env);
    expect(run.stdout).toContain('every file is synced and verified');
    expect(run.code).toBe(0);
    expect(nginx.accessLog()).toMatch(/"PATCH \/storage\/v1\/documents\/[^"]+\/uploads\/[^"]+" 204 /);
    expect(nginx.accessLog()).toMatch(/"POST \/storage\/v1\/documents\/[^"]+\/file HTTP\/1\.1" 201 /);
  }, 60_000);
});
