/**
 * The server behind the clinic's HTTPS proxy with a certificate from the clinic's own CA, as IT
 * sets it up: `connect` says plainly that the certificate is not trusted (and shows what the server
 * presented), `--ca-file` makes it trusted for token, API and resumable uploads alike, and a wrong
 * name, an expired certificate or a key file given as the CA each get their own message. There is
 * no switch that turns certificate checks off.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../electron/sync/api/connection.js';
import { parseCaCertificate } from '../electron/sync/api/tls-trust.js';
import { startNetProxy, type NetProxy } from './helpers/net-proxy.js';
import { runCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { makeTestCertificates, type TestCertificates } from './helpers/tls.js';

const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: '100' };

/** A leaf of `certs`' CA that expired in 2020 (`openssl x509 -req` cannot back-date; `openssl ca` can). */
function expiredLeaf(certs: TestCertificates): { key: Buffer; cert: Buffer } {
  const dir = certs.dir;
  fs.writeFileSync(path.join(dir, 'index.txt'), '');
  fs.writeFileSync(path.join(dir, 'serial'), '1000\n');
  fs.writeFileSync(
    path.join(dir, 'ca.cnf'),
    `[ca]\ndefault_ca=test\n[test]\ndatabase=index.txt\nserial=serial\nnew_certs_dir=.\ndefault_md=sha256\npolicy=any\nunique_subject=no\ncopy_extensions=copy\n[any]\ncommonName=supplied\n[ext]\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n`,
  );
  execFileSync('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'old.key', '-out', 'old.csr', '-subj', '/CN=localhost'], { cwd: dir, stdio: 'pipe' });
  execFileSync('openssl', ['ca', '-batch', '-config', 'ca.cnf', '-cert', 'ca.pem', '-keyfile', 'ca.key', '-in', 'old.csr', '-out', 'old.pem', '-startdate', '20200101000000Z', '-enddate', '20200201000000Z', '-extensions', 'ext'], { cwd: dir, stdio: 'pipe' });
  return { key: fs.readFileSync(path.join(dir, 'old.key')), cert: fs.readFileSync(path.join(dir, 'old.pem')) };
}

describe('a server with the clinic’s own certificate authority', () => {
  const scratch = tempDir('net-tls');
  const certs = makeTestCertificates('net-tls');
  const fingerprint = execFileSync('openssl', ['x509', '-in', certs.caFile, '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' }).split('=')[1]!.trim();
  let proxy: NetProxy;
  let server: ServerProcess;
  let homes = 0;
  const home = () => path.join(scratch, `home-${(homes += 1)}`);
  const connect = (dir: string, extra: string[] = [], url = proxy.url, more: Record<string, string> = {}) =>
    runCli(dir, ['connect', '--server', url, '--client-id', CLIENT.id, '--organization', ORG, ...extra], { ...env, ...more });

  beforeAll(async () => {
    // Under a path prefix, as IT publishes it next to other services: https://clinic.example/patient-docs/.
    proxy = await startNetProxy({ key: certs.key, cert: certs.cert, prefix: '/patient-docs' });
    server = await startServerProcess({ PATIENT_DOCS_PUBLIC_URL: proxy.url });
    proxy.target = server.url;
  });
  afterAll(async () => {
    await proxy?.close();
    await server?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
    fs.rmSync(certs.dir, { recursive: true, force: true });
  });

  it('refuses an untrusted certificate in plain words, showing what the server presented, and sends nothing', async () => {
    const before = proxy.seen.length;
    const refused = await connect(home());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('does not trust the server’s certificate');
    expect(refused.stderr).toContain('--ca-file');
    expect(refused.stderr).toMatch(/the server presented a certificate for 'localhost'.*issued by 'Patient Docs net-tls test CA'/);
    expect(refused.stderr).not.toContain('cannot be reached');
    // The TLS handshake failed: no request (and so no secret) reached the proxy.
    expect(proxy.seen.length).toBe(before);
  });

  it('trusts the CA given with --ca-file for token, API and resumable uploads, and keeps it in the sync home', async () => {
    const dir = home();
    const connected = await connect(dir, ['--ca-file', certs.caFile]);
    expect(connected.stderr).not.toContain('patient-docs-sync:');
    expect(connected.code).toBe(0);
    expect(connected.stdout).toContain(`SHA-256 ${fingerprint}`);
    expect(fs.readFileSync(path.join(dir, 'server-ca.pem'), 'utf8')).toContain('BEGIN CERTIFICATE');
    expect((await runCli(dir, ['config', '--settle-ms', '200'], env)).code).toBe(0);
    const scans = path.join(scratch, 'scans');
    fs.mkdirSync(scans);
    fs.writeFileSync(path.join(scans, 'small.stl'), Buffer.alloc(2000, 7));
    fs.writeFileSync(path.join(scans, 'large.ply'), Buffer.alloc(300_000, 9));
    expect((await runCli(dir, ['add-pair', '--folder', scans, '--patient', PATIENT, '--path', '/tls'], env)).code).toBe(0);
    // A later run reads the CA from the sync home; files over 100 kB take the resumable (tus) route.
    const run = await runCli(dir, ['run', '--once', '--timeout', '60'], { ...env, PATIENT_DOCS_SYNC_RESUMABLE_THRESHOLD: '100000' });
    expect(run.stdout).toContain('every file is synced and verified');
    expect(run.code).toBe(0);
    expect(proxy.seen.some((line) => line.startsWith('PATCH '))).toBe(true);
    const status = JSON.parse((await runCli(dir, ['status', '--json'], env)).stdout) as { pairs: Array<{ files: Array<{ state: string }> }> };
    expect(status.pairs[0]!.files.map((file) => file.state)).toEqual(['synced', 'synced']);
  });

  it('downloads a scan through the engine’s client, trusting the same CA (the desktop’s Save)', async () => {
    const ca = parseCaCertificate(fs.readFileSync(certs.caFile, 'utf8'));
    const connection = { serverUrl: proxy.url, tokenUrl: `${proxy.url}/oauth2/token`, clientId: CLIENT.id, organizationId: ORG };
    const api = createApiClient(connection, CLIENT.secret, { ca });
    const found = await api.search(PATIENT, { offset: 0, limit: 10, path: '/tls', hasContent: true });
    const document = found.documents.find((candidate) => candidate.fileName === 'large.ply');
    expect(document?.storageDownloadUri).toMatch(/^https:\/\/127\.0\.0\.1:/);
    const destination = path.join(scratch, 'saved.ply');
    await api.download(document!.storageDownloadUri!, destination);
    expect(fs.readFileSync(destination).equals(Buffer.alloc(300_000, 9))).toBe(true);
    // Without the CA the same link is refused as untrusted, and nothing is left under the name.
    const untrusting = createApiClient(connection, CLIENT.secret);
    const failed = path.join(scratch, 'failed.ply');
    await expect(untrusting.download(document!.storageDownloadUri!, failed)).rejects.toMatchObject({ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
    expect(fs.readdirSync(scratch).filter((name) => name.startsWith('failed.ply'))).toEqual([]);
  });

  it('honours NODE_EXTRA_CA_CERTS without --ca-file', async () => {
    const connected = await connect(home(), [], proxy.url, { NODE_EXTRA_CA_CERTS: certs.caFile });
    expect(connected.code).toBe(0);
  });

  it('says so when the certificate is for another name, and when the CA file is a private key', async () => {
    // IT made the certificate for the back office's name; the workstation was given its address.
    const other = makeTestCertificates('net-tls-name', ['DNS:backoffice.clinic.example']);
    const named = await startNetProxy({ key: other.key, cert: other.cert });
    named.target = server.url;
    try {
      const wrongName = await connect(home(), ['--ca-file', other.caFile], named.url);
      expect(wrongName.code).toBe(1);
      expect(wrongName.stderr).toContain('certificate was made for a different name');
      expect(wrongName.stderr).toContain('backoffice.clinic.example');
    } finally {
      await named.close();
      fs.rmSync(other.dir, { recursive: true, force: true });
    }
    const keyFile = path.join(certs.dir, 'leaf.key');
    const wrongFile = await connect(home(), ['--ca-file', keyFile]);
    expect(wrongFile.code).toBe(1);
    expect(wrongFile.stderr).toContain('holds a private key, not a certificate');
  });

  it('says the certificate expired (and to check the clock) instead of "cannot be reached"', async () => {
    const old = expiredLeaf(certs);
    const expired = await startNetProxy({ ...old });
    expired.target = server.url;
    try {
      const refused = await connect(home(), ['--ca-file', certs.caFile], expired.url);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('certificate has expired or is not valid yet');
      expect(refused.stderr).toContain('date and time');
    } finally {
      await expired.close();
    }
  });
});
