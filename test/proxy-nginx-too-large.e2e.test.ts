/**
 * An upload over the server's limit, sent through nginx with the site of docs/nginx.conf.example
 * (request buffering off: nginx passes the body on as it arrives), reaches the client as the
 * server's 413 problem, never as nginx's 502. The server refuses such an upload before reading its
 * body; if it then closed the connection while nginx was still sending that body, nginx would take
 * the reset for an upstream failure and answer 502, and a client would take a permanent refusal
 * for a transient fault.
 */
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleSite, nginxPort, startNginx, type Nginx } from './helpers/nginx.js';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT } from './helpers/server.js';
import { makeTestCertificates } from './helpers/tls.js';

const LIMIT = 1024 * 1024;
const TRIES = 12;
const certs = makeTestCertificates('too-large', ['DNS:localhost', 'IP:127.0.0.1']);
// A connection per request: whether nginx keeps a client's connection after refusing its body is nginx's own matter.
const agent = new https.Agent({ keepAlive: false, ca: fs.readFileSync(certs.caFile) });
let server: ServerProcess;
let nginx: Nginx;
let token: string;

interface Answer {
  status: number;
  type: string | undefined;
  location: string | undefined;
  body: string;
}

/** A request through nginx whose body is sent in 64 KiB writes as the socket takes them (as a workstation sends a scan). */
function send(method: string, route: string, headers: Record<string, string>, body: Buffer | undefined): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = https.request(`${nginx.url}${route}`, { method, agent, headers: { authorization: `Bearer ${token}`, 'organization-id': ORG, ...headers } });
    request.once('error', (error) => reject(new Error(`${method} ${route}: ${error.message}`, { cause: error })));
    request.once('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.once('end', () => resolve({ status: response.statusCode ?? 0, type: response.headers['content-type'], location: response.headers.location, body: text }));
    });
    if (!body) {
      request.end();
      return;
    }
    let offset = 0;
    const next = (): void => {
      while (offset < body.length) {
        const piece = body.subarray(offset, offset + 64 * 1024);
        offset += piece.length;
        // Once the answer came and the connection closed, the rest is not ours to send.
        if (request.destroyed) return;
        if (!request.write(piece)) {
          request.once('drain', next);
          return;
        }
      }
      request.end();
    };
    next();
  });
}

async function createDocument(): Promise<string> {
  const answer = await send('POST', `/v1/patients/${PATIENT}/documents`, { 'content-type': 'application/json' }, Buffer.from(JSON.stringify({ fileName: `large-${randomUUID()}.stl`, path: '/too-large' })));
  expect(answer.status, answer.body).toBe(201);
  return JSON.parse(answer.body).id;
}

function multipart(bytes: Buffer): { body: Buffer; type: string } {
  const boundary = `----too-large-${randomUUID()}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="scan.stl"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  return { body: Buffer.concat([Buffer.from(head), bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]), type: `multipart/form-data; boundary=${boundary}` };
}

function expectTooLarge(answers: Answer[]): void {
  const upstreamErrors = () => nginx.errorLog().split('\n').filter((line) => /\[error\]/.test(line)).join('\n');
  expect(answers.map((answer) => answer.status), upstreamErrors()).toEqual(answers.map(() => 413));
  for (const answer of answers) {
    expect(answer.type).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 413 });
  }
}

beforeAll(async () => {
  const certFile = path.join(certs.dir, 'leaf.pem');
  const keyFile = path.join(certs.dir, 'leaf.key');
  fs.writeFileSync(certFile, certs.cert);
  fs.writeFileSync(keyFile, certs.key);
  const port = await nginxPort();
  server = await startServerProcess({ PATIENT_DOCS_PUBLIC_URL: `https://localhost:${port}`, PATIENT_DOCS_TRUSTED_PROXIES: '127.0.0.1', PATIENT_DOCS_MAX_UPLOAD_BYTES: String(LIMIT) });
  nginx = await startNginx(exampleSite({ port, certFile, keyFile, upstream: server.url }), port);
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }).toString();
  const answer = await send('POST', '/oauth2/token', { 'content-type': 'application/x-www-form-urlencoded' }, Buffer.from(form));
  token = JSON.parse(answer.body).access_token;
});

afterAll(async () => {
  agent.destroy();
  await nginx?.close();
  await server?.stop();
  fs.rmSync(certs.dir, { recursive: true, force: true });
});

describe('an upload over the limit through nginx', () => {
  const large = Buffer.alloc(8 * LIMIT, 7);

  it(`answers 413 problem+json every time (${TRIES} tries), a one-shot upload refused by its Content-Length before the body is read`, async () => {
    const answers: Answer[] = [];
    for (let attempt = 0; attempt < TRIES; attempt += 1) {
      const form = multipart(large);
      answers.push(await send('POST', `/storage/v1/documents/${await createDocument()}/file`, { 'content-type': form.type, 'content-length': String(form.body.length) }, form.body));
    }
    expectTooLarge(answers);
  }, 60_000);

  it('answers 413 problem+json to a one-shot upload sent without a Content-Length, refused once the limit is passed', async () => {
    const answers: Answer[] = [];
    for (let attempt = 0; attempt < TRIES; attempt += 1) {
      const form = multipart(large);
      answers.push(await send('POST', `/storage/v1/documents/${await createDocument()}/file`, { 'content-type': form.type, 'transfer-encoding': 'chunked' }, form.body));
    }
    expectTooLarge(answers);
  }, 60_000);

  it('answers 413 problem+json to a tus piece that would end past its Upload-Length', async () => {
    const answers: Answer[] = [];
    for (let attempt = 0; attempt < TRIES; attempt += 1) {
      const created = await send('POST', `/storage/v1/documents/${await createDocument()}/uploads`, { 'tus-resumable': '1.0.0', 'upload-length': String(LIMIT) }, undefined);
      expect(created.status, created.body).toBe(201);
      const upload = new URL(created.location!).pathname;
      answers.push(await send('PATCH', upload, { 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream', 'content-length': String(large.length) }, large));
    }
    expectTooLarge(answers);
  }, 60_000);

  it('answers 413 problem+json to a JSON body over PATIENT_DOCS_MAX_JSON_BYTES, with or without a Content-Length', async () => {
    const json = Buffer.from(JSON.stringify({ fileName: 'padded.stl', padding: 'x'.repeat(2 * 1024 * 1024) }));
    const answers: Answer[] = [];
    for (let attempt = 0; attempt < TRIES; attempt += 1) {
      const length: Record<string, string> = attempt % 2 === 0 ? { 'content-length': String(json.length) } : { 'transfer-encoding': 'chunked' };
      answers.push(await send('POST', `/v1/patients/${PATIENT}/documents`, { 'content-type': 'application/json', ...length }, json));
    }
    expectTooLarge(answers);
  }, 60_000);
});
