/**
 * The relay both shells use for signed links of a server with the clinic's own CA: links go
 * through it only while that CA is in use, carry a token of their own, and reach only the engine's
 * openContent (which refuses any address that is not the connected server's).
 */
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { BridgeDispatcher } from '../sync/app/bridge-service.js';
import type { ApiClient } from '../sync/api/api-client.js';
import type { BridgeHttpServer } from './bridge-http-server.js';
import { createContentRelay, serveContentRelay } from './content-relay.js';

const SERVER = 'https://docs.clinic.example/storage/v1/documents/d1/content?v=1&expires=1&sig=abc';

function fakeApp(privateCa: boolean, opened: string[]) {
  const api = {
    openContent: async (url: string) => {
      opened.push(url);
      if (!url.startsWith('https://docs.clinic.example/')) return null;
      return { status: 200, headers: { 'content-type': 'model/stl' }, body: Readable.from([Buffer.from('solid scan')]) };
    },
  } as unknown as ApiClient;
  return { apiClient: () => api, trustsPrivateCa: () => privateCa };
}

let server: BridgeHttpServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

/** The desktop shell's relay: a loopback server with no UI files whose bridge token is never handed out. */
async function desktopRelay(privateCa: boolean, opened: string[]) {
  const relay = createContentRelay(fakeApp(privateCa, opened));
  server = await serveContentRelay(relay, { call: async () => ({ ok: true, value: null }) } as unknown as BridgeDispatcher);
  return relay;
}

describe('content relay', () => {
  it('leaves links alone while the server has a publicly trusted certificate', async () => {
    const relay = await desktopRelay(false, []);
    expect(relay.link(SERVER)).toBeNull();
  });

  it('relays nothing before its loopback server listens', () => {
    expect(createContentRelay(fakeApp(true, [])).link(SERVER)).toBeNull();
  });

  it('serves a signed link through the engine exactly as signed, as bytes that run nothing on the UI’s origin', async () => {
    const opened: string[] = [];
    const relay = await desktopRelay(true, opened);
    const link = relay.link(SERVER)!;
    expect(link.startsWith(`${server!.url}/server-content?t=`)).toBe(true);
    const response = await fetch(`${link}&disposition=inline`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('model/stl');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('content-security-policy')).toBe("sandbox; default-src 'none'");
    // Read by the UI's fetch (PDF preview, 3D viewer) from the window's own origin.
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(await response.text()).toBe('solid scan');
    // Nothing added to the relay's address reaches the server's signed link.
    expect(opened).toEqual([SERVER]);
  });

  it('refuses a link without its token, and any address that is not the server’s', async () => {
    const opened: string[] = [];
    const relay = await desktopRelay(true, opened);
    const link = new URL(relay.link(SERVER)!);
    link.searchParams.set('t', 'guessed');
    expect((await fetch(link)).status).toBe(401);
    const elsewhere = relay.link('https://evil.example/steal')!;
    expect((await fetch(elsewhere)).status).toBe(403);
    // The bridge's calls on the same port need the token the desktop never hands out.
    expect((await fetch(`${server!.url}/bridge/call/getStatus`, { method: 'POST', body: '[]' })).status).toBe(401);
  });
});
