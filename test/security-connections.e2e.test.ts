/**
 * Issue 23, item 8: requests that hold the server open by sending slowly. A real server process
 * with short limits (2 s) so each case is over in seconds; raw sockets on loopback, each case from
 * its own source address so the per-address cap stays out of the others' way.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT } from './helpers/server.js';

interface Raw {
  socket: net.Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves with the milliseconds from connect to close. */
  closed: Promise<number>;
}

function connect(url: string, localAddress: string): Promise<Raw> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port), localAddress });
    let text = '';
    const started = performance.now();
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    const closed = new Promise<number>((done) => socket.once('close', () => done(performance.now() - started)));
    socket.once('error', () => undefined);
    socket.once('connect', () => resolve({ socket, received: () => text, closed }));
    socket.once('error', reject);
  });
}

/** Sends `body` a little at a time until the socket closes or `limitMs` passes; the time it closed, or undefined. */
async function trickle(raw: Raw, head: string, body: Buffer, chunk: number, everyMs: number, limitMs: number): Promise<number | undefined> {
  raw.socket.write(head);
  let sent = 0;
  const timer = setInterval(() => {
    if (raw.socket.destroyed || sent >= body.length) return;
    raw.socket.write(body.subarray(sent, sent + chunk));
    sent += chunk;
  }, everyMs);
  const outcome = await Promise.race([raw.closed, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), limitMs))]);
  clearInterval(timer);
  raw.socket.destroy();
  return outcome;
}

function multipart(boundary: string, documentId: string, bytes: Buffer): Buffer {
  const part = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  return Buffer.concat([
    Buffer.from(`${part('Id', documentId)}${part('Type', 'STL')}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="scan.stl"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
}

const WINDOW_MS = 2000;

describe('slow requests (item 8)', () => {
  let server: ServerProcess;
  let bearer: string;
  let host: string;
  const createDocument = async (fileName: string): Promise<string> => {
    const response = await fetch(`${server.url}/v1/patients/${PATIENT}/documents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG, 'content-type': 'application/json' },
      body: JSON.stringify({ fileName, path: '/slow' }),
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: string }).id;
  };

  beforeAll(async () => {
    server = await startServerProcess({
      PATIENT_DOCS_HEADERS_TIMEOUT: '2s',
      PATIENT_DOCS_BODY_MIN_RATE: '1KiB',
      PATIENT_DOCS_BODY_RATE_WINDOW: '2s',
      PATIENT_DOCS_MAX_CONNECTIONS_PER_ADDRESS: '20',
    });
    host = new URL(server.url).host;
    const token = await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) });
    bearer = ((await token.json()) as { access_token: string }).access_token;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('cuts off bodies trickled a byte at a time on create, upload, search and the token endpoint, answered or not', async () => {
    const documentId = await createDocument('trickled.stl');
    const json = Buffer.from(JSON.stringify({ fileName: 'x.stl', path: '/slow', padding: 'p'.repeat(2000) }));
    const form = Buffer.from(new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: `${CLIENT.secret}${'x'.repeat(2000)}` }).toString());
    const upload = multipart('b0undary', documentId, Buffer.alloc(4000, 1));
    const auth = `Authorization: Bearer ${bearer}\r\nOrganization-ID: ${ORG}\r\n`;
    const cases = [
      { name: 'create', head: `POST /v1/patients/${PATIENT}/documents HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n`, body: json },
      { name: 'search', head: `POST /v1/patients/${PATIENT}/documents/search HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n`, body: json },
      { name: 'upload', head: `POST /storage/v1/documents/${documentId}/file HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${bearer}\r\nContent-Type: multipart/form-data; boundary=b0undary\r\nContent-Length: ${upload.length}\r\n\r\n`, body: upload },
      // Refused before its body is read (no token): the rest of the body must not hold the connection either.
      { name: 'unauthenticated create', head: `POST /v1/patients/${PATIENT}/documents HTTP/1.1\r\nHost: ${host}\r\nOrganization-ID: ${ORG}\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n`, body: json, answer: 'HTTP/1.1 401 Unauthorized' },
      { name: 'token', head: `POST /oauth2/token HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}\r\n\r\n`, body: form },
    ];
    const outcomes = await Promise.all(
      cases.map(async ({ name, head, body, answer: expected }, index) => {
        const raw = await connect(server.url, `127.0.5.${index + 1}`);
        // One byte every 500 ms: 2 bytes a second, against a floor of 1 KiB a second. Watched for
        // at most 15 s (without the limit such a request stays open for minutes).
        const closedAfter = await trickle(raw, head, body, 1, 500, 15_000);
        return { name, closedAfter, answer: raw.received().split('\r\n')[0], expected: expected ?? 'HTTP/1.1 408 Request Timeout' };
      }),
    );
    for (const outcome of outcomes) {
      expect(outcome.closedAfter, `${outcome.name} was still open after 15 s`).toBeDefined();
      // Cut at the end of the first window or the next (checks run a few times per window).
      expect(outcome.closedAfter!, outcome.name).toBeLessThan(3 * WINDOW_MS + 4000);
      expect(outcome.answer, outcome.name).toBe(outcome.expected);
    }
  });

  it('never cuts an upload that keeps moving at a modest rate, however long it takes', async () => {
    const documentId = await createDocument('steady.stl');
    const bytes = Buffer.alloc(36 * 1024, 3);
    const body = multipart('st3ady', documentId, bytes);
    const raw = await connect(server.url, '127.0.5.20');
    const head = `POST /storage/v1/documents/${documentId}/file HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${bearer}\r\nContent-Type: multipart/form-data; boundary=st3ady\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    // 1.5 KiB every 500 ms (3 KiB/s, three times the floor): about 12 s, six windows.
    const started = performance.now();
    await trickle(raw, head, body, 1536, 500, 40_000);
    expect(performance.now() - started).toBeGreaterThan(3 * WINDOW_MS);
    expect(raw.received().split('\r\n')[0]).toBe('HTTP/1.1 201 Created');
  });

  it('closes connections whose headers do not arrive in time', async () => {
    const partial = await connect(server.url, '127.0.5.30');
    partial.socket.write(`POST /v1/patients/${PATIENT}/documents HTTP/1.1\r\nHost: ${host}\r\n`);
    const silent = await connect(server.url, '127.0.5.31');
    const bound = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 15_000));
    const [partialClosed, silentClosed] = await Promise.all([Promise.race([partial.closed, bound]), Promise.race([silent.closed, bound])]);
    partial.socket.destroy();
    silent.socket.destroy();
    // 2 s, checked every second, with room for a loaded machine (Node's default is 60 s).
    expect(partialClosed).toBeDefined();
    expect(partialClosed!).toBeLessThan(8000);
    expect(silentClosed).toBeDefined();
    expect(silentClosed!).toBeLessThan(8000);
  });

  it('holds at most the configured connections per address, and serves other addresses meanwhile', async () => {
    const held: Raw[] = [];
    const answered: boolean[] = [];
    try {
      for (let index = 0; index < 25; index += 1) {
        const raw = await connect(server.url, '127.0.5.40');
        held.push(raw);
        raw.socket.write(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
        // Kept alive after the answer, or closed at once when over the cap.
        const outcome = await Promise.race([
          raw.closed.then(() => false),
          new Promise<boolean>((resolve) => {
            const check = setInterval(() => {
              if (raw.received().includes('\r\n\r\n')) {
                clearInterval(check);
                resolve(true);
              }
            }, 20);
            void raw.closed.then(() => clearInterval(check));
          }),
        ]);
        answered.push(outcome && raw.received().startsWith('HTTP/1.1 200'));
      }
      expect(answered.filter(Boolean)).toHaveLength(20);
      expect(answered.slice(20)).toEqual([false, false, false, false, false]);
      const other = await fetch(`${server.url}/healthz`);
      expect(other.status).toBe(200);
    } finally {
      for (const raw of held) raw.socket.destroy();
    }
  });
});
