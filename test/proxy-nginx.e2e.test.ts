/**
 * The server behind a real nginx running exactly docs/nginx.conf.example (TLS with a certificate of
 * the clinic's own CA), as IT deploys it, and a plain HTTPS client (an integrator's script): every URL
 * the server hands out (token issuer and discovery, storageUrl, the tus Location, download and
 * thumbnail links) is the public https address and works through nginx; a 128 MiB scan goes up and
 * comes back through nginx intact (nginx's default proxy_buffering); and with
 * PATIENT_DOCS_TRUSTED_PROXIES set, someone elsewhere naming a workstation's client id cannot lock
 * it out of tokens (without it every request seems to come from nginx's own address).
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleSite, nginxPort, startNginx, type Nginx } from './helpers/nginx.js';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { ADMIN_TOKEN, CLIENT, ORG, PATIENT } from './helpers/server.js';
import { waitFor } from './helpers/sync.js';
import { makeAsciiStl } from './fixtures/scans.js';
import { makeTestCertificates } from './helpers/tls.js';

const MiB = 1024 * 1024;
const RATE_LIMIT = 5;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

describe('behind nginx as docs/nginx.conf.example sets it up', () => {
  const certs = makeTestCertificates('proxy-nginx', ['DNS:localhost', 'IP:127.0.0.1']);
  const ca = fs.readFileSync(certs.caFile);
  let server: ServerProcess;
  let nginx: Nginx;
  let publicUrl: string;

  /** A plain HTTPS client (what an integrator's script is), trusting the clinic CA, from a chosen local address. */
  const request = (method: string, url: string, options: { headers?: Record<string, string>; body?: Buffer | string; from?: string } = {}): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const outgoing = https.request(url, { method, ca, headers: options.headers, ...(options.from ? { localAddress: options.from } : {}) }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
        response.on('error', reject);
      });
      outgoing.on('error', reject);
      outgoing.end(options.body);
    });
  const json = (answer: Answer) => JSON.parse(answer.body.toString('utf8')) as any;
  const tokenFor = async (secret: string, from?: string, forwardedFor?: string) =>
    request('POST', `${publicUrl}/oauth2/token`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: secret }).toString(),
      ...(from ? { from } : {}),
    });
  let bearer: Record<string, string>;

  beforeAll(async () => {
    const certFile = path.join(certs.dir, 'leaf.pem');
    const keyFile = path.join(certs.dir, 'leaf.key');
    fs.writeFileSync(certFile, certs.cert);
    fs.writeFileSync(keyFile, certs.key);
    const port = await nginxPort();
    publicUrl = `https://localhost:${port}`;
    server = await startServerProcess({ PATIENT_DOCS_PUBLIC_URL: publicUrl, PATIENT_DOCS_TRUSTED_PROXIES: '127.0.0.1', PATIENT_DOCS_TOKEN_RATE_LIMIT: String(RATE_LIMIT) });
    nginx = await startNginx(exampleSite({ port, certFile, keyFile, upstream: server.url }), port);
    const token = json(await tokenFor(CLIENT.secret)).access_token as string;
    bearer = { authorization: `Bearer ${token}`, 'organization-id': ORG };
  });
  afterAll(async () => {
    await nginx?.close();
    await server?.stop();
    fs.rmSync(certs.dir, { recursive: true, force: true });
  });

  it('hands out the public https address in every URL, and each works through nginx', async () => {
    const discovery = json(await request('GET', `${publicUrl}/.well-known/openid-configuration`));
    expect(discovery).toMatchObject({ issuer: publicUrl, token_endpoint: `${publicUrl}/oauth2/token`, jwks_uri: `${publicUrl}/.well-known/jwks.json` });
    expect((await request('GET', discovery.jwks_uri)).status).toBe(200);
    const claims = JSON.parse(Buffer.from(bearer.authorization!.split('.')[1]!, 'base64url').toString('utf8')) as { iss: string };
    expect(claims.iss).toBe(publicUrl);

    // One-shot upload (multipart form of SPEC §4.2) to the storageUrl of a new placeholder.
    const created = json(await request('POST', `${publicUrl}/v1/patients/${PATIENT}/documents`, { headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ fileName: 'arch.stl', path: '/nginx' }) }));
    expect(created.storageUrl).toBe(`${publicUrl}/storage/v1/documents/${created.id}`);
    const boundary = 'patient-docs-proxy-test';
    const form = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="Id"\r\n\r\n${created.id}\r\n--${boundary}\r\nContent-Disposition: form-data; name="FileName"\r\n\r\narch.stl\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="arch.stl"\r\nContent-Type: application/octet-stream\r\n\r\n`),
      makeAsciiStl({ triangles: 500 }),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const uploaded = await request('POST', `${created.storageUrl}/file`, { headers: { authorization: bearer.authorization!, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: form });
    expect(uploaded.status).toBe(201);
    const found = json(await request('POST', `${publicUrl}/v1/patients/${PATIENT}/documents/search`, { headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ id: [created.id], hasContent: true, offset: 0, limit: 1 }) }));
    const arch = found.documents[0];
    expect(arch.storageUrl).toBe(created.storageUrl);
    expect(arch.storageDownloadUri.startsWith(`${publicUrl}/storage/v1/documents/${arch.id}/content?`)).toBe(true);
    const download = await request('GET', arch.storageDownloadUri);
    expect(download.status).toBe(200);
    expect(sha256(download.body)).toBe(arch.sha256);
    // The thumbnail is rendered in the background: its link works once it is there.
    const thumbnail = await waitFor('the thumbnail through nginx', async () => {
      const again = json(await request('POST', `${publicUrl}/v1/patients/${PATIENT}/documents/search`, { headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ id: [arch.id], offset: 0, limit: 1 }) }));
      const link = again.documents[0]?.thumbnailDownloadUri as string | undefined;
      if (!link) return undefined;
      expect(link.startsWith(`${publicUrl}/storage/v1/documents/${arch.id}/thumbnail?`)).toBe(true);
      const answer = await request('GET', link);
      return answer.status === 200 ? answer : undefined;
    });
    expect(thumbnail.headers['content-type']).toBe('image/png');
  });

  it('a 128 MiB scan goes up (tus, one PATCH) and comes back through nginx intact', async () => {
    const bytes = randomBytes(128 * MiB);
    const created = json(await request('POST', `${publicUrl}/v1/patients/${PATIENT}/documents`, { headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ fileName: 'full-skull.dcm', path: '/nginx' }) }));
    expect(created.storageUrl).toBe(`${publicUrl}/storage/v1/documents/${created.id}`);
    const tus = { authorization: bearer.authorization!, 'tus-resumable': '1.0.0' };
    const start = await request('POST', `${created.storageUrl}/uploads`, { headers: { ...tus, 'upload-length': String(bytes.length), 'upload-metadata': `filename ${Buffer.from('full-skull.dcm').toString('base64')}` } });
    expect(start.status).toBe(201);
    const location = String(start.headers.location);
    expect(location.startsWith(`${created.storageUrl}/uploads/`)).toBe(true);
    const patched = await request('PATCH', location, { headers: { ...tus, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream', 'content-length': String(bytes.length) }, body: bytes });
    expect(patched.status).toBe(204);
    expect(patched.headers['upload-offset']).toBe(String(bytes.length));
    const found = json(await request('POST', `${publicUrl}/v1/patients/${PATIENT}/documents/search`, { headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ id: [created.id], hasContent: true, offset: 0, limit: 1 }) }));
    expect(found.documents[0]).toMatchObject({ fileSize: bytes.length, sha256: sha256(bytes) });
    const download = await request('GET', found.documents[0].storageDownloadUri);
    expect(download.status).toBe(200);
    expect(download.body.length).toBe(bytes.length);
    expect(sha256(download.body)).toBe(sha256(bytes));
  }, 60_000);

  it('someone elsewhere naming the workstation’s client id cannot lock it out of tokens (PATIENT_DOCS_TRUSTED_PROXIES)', async () => {
    // 127.0.0.2 plays an address on the internet: nginx passes it on in X-Forwarded-For, in place
    // of the one the outsider forges to pass for the workstation.
    const refused: number[] = [];
    for (let attempt = 0; attempt <= RATE_LIMIT; attempt += 1) refused.push((await tokenFor('a-guessed-secret-0123456789', '127.0.0.2', '127.0.0.1')).status);
    expect(refused.at(-1)).toBe(429);
    const workstation = await tokenFor(CLIENT.secret, '127.0.0.1');
    expect(workstation.status).toBe(200);
    const claims = JSON.parse(Buffer.from((json(workstation).access_token as string).split('.')[1]!, 'base64url').toString('utf8')) as { ipaddr: string };
    expect(claims.ipaddr).toBe('127.0.0.1');
    // The outsider's own address is the one held back (and named in the token it would get).
    expect((await tokenFor(CLIENT.secret, '127.0.0.2')).status).toBe(429);
  });

  it('the audit log names the workstation’s address nginx vouches for, not nginx’s or a forged one', async () => {
    const search = await request('POST', `${publicUrl}/v1/patients/${PATIENT}/documents/search`, {
      headers: { ...bearer, 'content-type': 'application/json', 'x-forwarded-for': '10.9.9.9' },
      body: JSON.stringify({ path: '/proxy-audit' }),
      from: '127.0.0.2',
    });
    expect(search.status).toBe(200);
    // The admin API writes what the log holds in memory before it answers.
    const audit = await fetch(`${server.url}/admin/v1/audit?${new URLSearchParams({ patientId: PATIENT, action: 'search' })}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const entries = ((await audit.json()) as { entries: Array<{ remoteAddress: string | null; detail: Record<string, unknown> | null }> }).entries;
    const entry = entries.find((candidate) => JSON.stringify(candidate.detail).includes('/proxy-audit'));
    expect(entry?.remoteAddress).toBe('127.0.0.2');
    expect(entry?.detail?.forwardedFor).toBeUndefined();
  });
});
