/** The headless app's loopback server: the UI's files, and nothing else, whatever the request path. */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BridgeDispatcher } from '../sync/app/bridge-service.js';
import { startBridgeHttpServer, type BridgeHttpServer } from './bridge-http-server.js';

let root: string;
let bridge: BridgeHttpServer;

/** A raw GET, so the test controls the request target and the Host header byte for byte. */
function get(target: string, host = `127.0.0.1:${bridge.port}`): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .request({ host: '127.0.0.1', port: bridge.port, path: target, headers: { host } }, (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      })
      .on('error', reject)
      .end();
  });
}

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-renderer-'));
  fs.mkdirSync(path.join(root, 'dist', 'assets'), { recursive: true });
  fs.writeFileSync(path.join(root, 'dist', 'index.html'), '<!doctype html><title>Patient Docs</title>');
  fs.writeFileSync(path.join(root, 'dist', 'assets', 'app.js'), 'console.log(1)');
  fs.writeFileSync(path.join(root, 'secret.txt'), 'outside the renderer');
  bridge = await startBridgeHttpServer({
    dispatcher: { call: async () => ({ ok: true, value: null }) } as unknown as BridgeDispatcher,
    token: 'launch-token',
    subscribe: () => () => undefined,
    initialEvents: async () => [],
    rendererDir: path.join(root, 'dist'),
    fallbackPage: 'no renderer',
  });
});
afterAll(async () => {
  await bridge.close();
  fs.rmSync(root, { recursive: true, force: true });
});

describe('headless UI files', () => {
  it('serves the app, its assets, and the app again for client-side routes', async () => {
    expect(await get('/')).toMatchObject({ status: 200, body: expect.stringContaining('Patient Docs') });
    expect(await get('/assets/app.js')).toMatchObject({ status: 200, body: 'console.log(1)' });
    expect(await get('/patients/5f0e8a3c')).toMatchObject({ status: 200, body: expect.stringContaining('Patient Docs') });
    expect((await get('/assets/missing.js')).status).toBe(404);
  });

  it('never serves a file outside the renderer, however the path is spelled', async () => {
    for (const target of ['/../secret.txt', '/%2e%2e/secret.txt', '/assets/..%2f..%2fsecret.txt', '/..%5csecret.txt']) {
      const response = await get(target);
      expect(response.body, target).not.toContain('outside the renderer');
    }
  });

  it('answers a garbled path or request target with 400 and another host name with 421, never a 500', async () => {
    expect(await get('/%E0%A4%A')).toMatchObject({ status: 400, body: 'malformed request path' });
    expect(await get('http://[bad/')).toMatchObject({ status: 400, body: 'malformed request URL' });
    expect((await get('/', 'evil.example')).status).toBe(421);
  });
});

describe('bridge calls', () => {
  /** A bridge call over a kept-alive connection, as the UI's fetch makes them. */
  function call(agent: http.Agent, body: Buffer | string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      http
        .request({ host: '127.0.0.1', port: bridge.port, path: '/bridge/call/getStatus', method: 'POST', agent, headers: { host: `127.0.0.1:${bridge.port}`, authorization: 'Bearer launch-token' } }, (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
        })
        .on('error', reject)
        .end(body);
    });
  }

  it('refuses a body over 1 MiB and the next call on the same kept-alive agent still works', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const refused = await call(agent, Buffer.alloc(3 * 1024 * 1024, 0x20));
      expect(JSON.parse(refused.body)).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT', detail: 'the body is too large' } });
      expect(await call(agent, '[]')).toMatchObject({ status: 200, body: JSON.stringify({ ok: true, value: null }) });
    } finally {
      agent.destroy();
    }
  });
});
