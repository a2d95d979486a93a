import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from './api-client.js';
import { ApiNetworkError, ApiProblemError, TokenError } from './api-errors.js';

interface Fake {
  url: string;
  tokenRequests: number;
  apiRequests: Array<{ authorization: string | undefined; organization: string | undefined }>;
  close(): Promise<void>;
}

/** A token endpoint and one API route; `rejectFirst` answers the first API call with 401. */
async function fakeServer(options: { expiresIn?: number; rejectFirst?: boolean; tokenStatus?: number; apiStatus?: number; tokenDelayMs?: number } = {}): Promise<Fake> {
  const state = { tokenRequests: 0, apiRequests: [] as Fake['apiRequests'] };
  const server = http.createServer((request, response) => {
    if (request.url === '/oauth2/token') {
      state.tokenRequests += 1;
      const n = state.tokenRequests;
      setTimeout(() => {
        if (options.tokenStatus) {
          response.writeHead(options.tokenStatus, { 'content-type': 'application/json', 'retry-after': '7' });
          return response.end(JSON.stringify({ error: 'invalid_client', error_description: 'client authentication failed' }));
        }
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ token_type: 'Bearer', expires_in: options.expiresIn ?? 1800, access_token: `token-${n}`, scope: 'Patient.File.Read Patient.File.Write' }));
      }, options.tokenDelayMs ?? 0);
      return;
    }
    state.apiRequests.push({ authorization: request.headers.authorization, organization: request.headers['organization-id'] as string | undefined });
    request.resume();
    if (options.rejectFirst && state.apiRequests.length === 1) {
      response.writeHead(401, { 'content-type': 'application/problem+json' });
      return response.end(JSON.stringify({ type: 'x', title: 'Unauthorized', status: 401, detail: 'token expired', instance: '/v1/patients', messageKey: 'UNAUTHORIZED', occurredAt: new Date().toISOString() }));
    }
    if (options.apiStatus) {
      response.writeHead(options.apiStatus, { 'content-type': 'application/problem+json', 'retry-after': '3' });
      return response.end(JSON.stringify({ type: 'x', title: 'x', status: options.apiStatus, detail: 'the server says no', instance: '/v1/patients', messageKey: 'X', occurredAt: new Date().toISOString() }));
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ patients: [], offset: 0, limit: 50, total: 0 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    get tokenRequests() {
      return state.tokenRequests;
    },
    apiRequests: state.apiRequests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const client = (url: string, now?: () => number) =>
  new ApiClient({ serverUrl: url, organizationId: ORG, credentials: { tokenUrl: `${url}/oauth2/token`, clientId: 'c', clientSecret: 's' }, ...(now ? { now } : {}) });

describe('API client and token manager', () => {
  let fake: Fake | undefined;
  afterEach(async () => fake?.close());

  it('fetches one token for many concurrent calls and sends it with the organization header', async () => {
    fake = await fakeServer({ tokenDelayMs: 50 });
    const api = client(fake.url);
    await Promise.all(Array.from({ length: 10 }, () => api.listPatients({})));
    expect(fake.tokenRequests).toBe(1);
    expect(fake.apiRequests.every((entry) => entry.authorization === 'Bearer token-1' && entry.organization === ORG)).toBe(true);
  });

  it('refreshes the token before it expires', async () => {
    fake = await fakeServer({ expiresIn: 100 });
    let now = 1_000_000;
    const api = client(fake.url, () => now);
    await api.listPatients({});
    now += 79_000;
    await api.listPatients({});
    expect(fake.tokenRequests).toBe(1);
    now += 2_000; // past 80% of the lifetime
    await api.listPatients({});
    expect(fake.tokenRequests).toBe(2);
    expect(fake.apiRequests.at(-1)!.authorization).toBe('Bearer token-2');
  });

  it('retries once with a fresh token after a 401', async () => {
    fake = await fakeServer({ rejectFirst: true });
    await client(fake.url).listPatients({});
    expect(fake.tokenRequests).toBe(2);
    expect(fake.apiRequests.map((entry) => entry.authorization)).toEqual(['Bearer token-1', 'Bearer token-2']);
  });

  it('turns problem details, token refusals and network failures into typed errors', async () => {
    fake = await fakeServer({ apiStatus: 503 });
    const problem = await client(fake.url).listPatients({}).catch((error: unknown) => error);
    expect(problem).toBeInstanceOf(ApiProblemError);
    expect(problem).toMatchObject({ status: 503, retryAfterSeconds: 3, problem: { detail: 'the server says no' } });
    await fake.close();

    fake = await fakeServer({ tokenStatus: 401 });
    const refused = await client(fake.url).listPatients({}).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TokenError);
    expect(refused).toMatchObject({ status: 401, oauthError: 'invalid_client', description: 'client authentication failed' });
    const url = fake.url;
    await fake.close();
    fake = undefined;

    const unreachable = await client(url).listPatients({}).catch((error: unknown) => error);
    expect(unreachable).toBeInstanceOf(ApiNetworkError);
    expect(['ECONNREFUSED', 'ECONNRESET']).toContain((unreachable as ApiNetworkError).code);
  });
});
