/**
 * The client secret never travels in clear text: `connect` to a plain-http server elsewhere on the
 * network is refused before anything is sent, with the reason; plain http stays fine for a server
 * on this computer (the bundled one, every other test).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConnection } from '../electron/sync/api/connection.js';
import { runCli } from './helpers/processes.js';
import { CLIENT, ORG, startTestServer, tempDir, type TestServer } from './helpers/server.js';

/** This machine's own non-loopback address, so the "remote" server is real and we see what reaches it. */
function networkAddress(): string | undefined {
  return Object.values(os.networkInterfaces())
    .flat()
    .find((entry) => entry && entry.family === 'IPv4' && !entry.internal)?.address;
}

describe('client secret over plain http', () => {
  const received: string[] = [];
  let capture: http.Server;
  let remoteUrl: string;
  let server: TestServer;

  beforeAll(async () => {
    const host = networkAddress() ?? '127.0.0.1';
    capture = http.createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        received.push(`${request.method} ${request.url} ${body}`);
        response.end('{}');
      });
    });
    await new Promise<void>((resolve) => capture.listen(0, host, resolve));
    // Without a network address, a name that never resolves still shows the refusal.
    remoteUrl = host === '127.0.0.1' ? 'http://clinic-server.invalid' : `http://${host}:${(capture.address() as AddressInfo).port}`;
    server = await startTestServer();
  });
  afterAll(async () => {
    await new Promise((resolve) => capture?.close(resolve));
    await server?.close();
  });

  it('connect refuses a plain-http server elsewhere, says why, and sends nothing', async () => {
    const home = tempDir('cleartext-home');
    const result = await runCli(home, ['connect', '--server', remoteUrl, '--client-id', 'c1', '--organization', ORG], {}, 'CLEARTEXT-SECRET-123\n');
    fs.rmSync(home, { recursive: true, force: true });
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toMatch(/plain http.*https:\/\//s);
    expect(result.stdout).not.toMatch(/^connected/m);
    expect(received).toEqual([]);
  });

  it('refuses a plain-http token address elsewhere too, and still connects over http to this computer', async () => {
    const viaRemoteToken = await testConnection({ serverUrl: server.url, tokenUrl: `${remoteUrl}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG });
    expect(viaRemoteToken).toMatchObject({ ok: false, error: { code: 'INSECURE_ADDRESS', detail: expect.stringMatching(/plain http/) } });
    expect(received).toEqual([]);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:/);
    expect(await testConnection({ serverUrl: server.url, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG })).toMatchObject({ ok: true });
    expect(await testConnection({ serverUrl: server.url.replace('127.0.0.1', 'localhost'), tokenUrl: `${server.url}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG })).toMatchObject({ ok: true });
  });
});
