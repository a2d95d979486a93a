// Which step of the connection test fails, for servers that answer but are not what they should be.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAIN_MESSAGES } from '../../../shared/bridge-errors.js';
import { testConnection } from './connection.js';

let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    const url = request.url ?? '/';
    if (url === '/oauth2/token' && request.method === 'POST') {
      // A web server that is not Patient Docs: GET only, HTML errors.
      response.writeHead(405, { 'content-type': 'text/html', allow: 'GET' }).end('<html><body>405 Not Allowed</body></html>');
    } else if (url === '/oidc/token') {
      response.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_client', error_description: 'client authentication failed' }));
    } else if (url === '/html-404/token') {
      response.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not Found</h1>');
    } else {
      response.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Welcome to nginx!</h1>');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const input = (tokenUrl?: string) => ({ serverUrl: base, ...(tokenUrl ? { tokenUrl } : {}), clientId: 'scanner-pc-1', clientSecret: 'a secret', organizationId: '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01' });

describe('the connection test against an address that is not a Patient Docs server', () => {
  it('a 405 HTML page from the token address is a wrong address, not wrong credentials', async () => {
    const result = await testConnection(input());
    expect(result).toMatchObject({ ok: false, step: 'reach', error: { code: 'NOT_PATIENT_DOCS', message: PLAIN_MESSAGES.NOT_PATIENT_DOCS } });
    expect(result.error?.detail).toContain('answered 405');
  });

  it('so is a 404 from a token address given by hand', async () => {
    expect(await testConnection(input(`${base}/html-404/token`))).toMatchObject({ ok: false, step: 'reach', error: { code: 'NOT_PATIENT_DOCS' } });
  });

  it('an OAuth refusal is still the credentials', async () => {
    expect(await testConnection(input(`${base}/oidc/token`))).toMatchObject({ ok: false, step: 'authenticate', error: { code: 'BAD_CREDENTIALS', detail: 'client authentication failed' } });
  });
});
