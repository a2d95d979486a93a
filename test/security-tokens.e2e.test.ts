/**
 * Issue 23, items 4–7: the token endpoint under a flood of guesses, the memory its limits hold,
 * what its timing tells about client ids, and how soon a scope taken away stops working. Against a
 * real server (a process where CPU is measured, in-process where its heap is), on loopback, with
 * distinct source addresses from 127.0.0.0/8 standing in for an attacker's many addresses.
 */
import http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PatientFiles } from './helpers/patient-files.js';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { ADMIN_TOKEN, CLIENT, PATIENT, READ_ONLY_CLIENT, startTestServer } from './helpers/server.js';

interface Answer {
  status: number;
  retryAfter: string | undefined;
  ms: number;
}

const agents = new Map<string, http.Agent>();
function agentFor(localAddress: string): http.Agent {
  let agent = agents.get(localAddress);
  if (!agent) {
    agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    agents.set(localAddress, agent);
  }
  return agent;
}

/** One token request from a given loopback address. */
function tokenRequest(url: string, form: Record<string, string>, localAddress = '127.0.0.1'): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${url}/oauth2/token`,
      { method: 'POST', localAddress, agent: agentFor(localAddress), headers: { 'content-type': 'application/x-www-form-urlencoded' }, timeout: 30_000 },
      (response) => {
        response.resume();
        response.on('end', () => {
          const retryAfter = response.headers['retry-after'];
          resolve({ status: response.statusCode!, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined, ms: performance.now() - started });
        });
      },
    );
    request.on('timeout', () => request.destroy(new Error('token request timed out')));
    request.on('error', reject).end(new URLSearchParams(form).toString());
  });
}

const guess = (clientId: string) => ({ grant_type: 'client_credentials', client_id: clientId, client_secret: 'a-guessed-secret-0123456789' });
const valid = { grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret };

/** Runs `count` jobs, `concurrency` at a time. */
async function pool<T>(count: number, concurrency: number, job: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const index = next++;
        results[index] = await job(index);
      }
    }),
  );
  return results;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

afterAll(() => {
  for (const agent of agents.values()) agent.destroy();
});

/**
 * One server process for the cases below (starting one takes long on a loaded machine): the
 * per-client failure limit at 20, the other limits out of the way so that the flood meets the pool
 * of secret checks. The cases name different clients, so their failures do not add up.
 */
describe('the token endpoint under guesses (items 4 and 6)', () => {
  let server: ServerProcess;
  let downloadUri: string;
  beforeAll(async () => {
    server = await startServerProcess({ PATIENT_DOCS_TOKEN_CLIENT_FAILURES: '20', PATIENT_DOCS_TOKEN_ADDRESS_FAILURES: '1000000', PATIENT_DOCS_TOKEN_RATE_LIMIT: '1000000' });
    // The scanner PC works from 127.0.0.1 before any attack starts.
    const files = await PatientFiles.connect(server.url, '/flood');
    const uploaded = await files.uploaded('scan.stl', Buffer.alloc(256 * 1024, 7));
    const document = (await (await fetch(`${server.url}/v1/patients/${PATIENT}/documents/${uploaded.id}`, { headers: files.headers() })).json()) as { storageDownloadUri: string };
    downloadUri = document.storageDownloadUri;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('answers an unknown client id as slowly as a known one with a wrong secret (item 6)', async () => {
    const known: number[] = [];
    const unknown: number[] = [];
    // Taking turns, so the machine's load weighs on both alike.
    for (let round = 0; round < 15; round += 1) {
      const a = await tokenRequest(server.url, guess(READ_ONLY_CLIENT.id));
      const b = await tokenRequest(server.url, guess(`no-such-client-${round}`));
      expect([a.status, b.status]).toEqual([401, 401]);
      known.push(a.ms);
      unknown.push(b.ms);
    }
    expect(median(unknown)).toBeGreaterThan(median(known) * 0.5);
  });

  it('answers 503 with Retry-After past the checks in flight, and downloads keep their pace (item 4)', { timeout: 120_000 }, async () => {
    const download = async (): Promise<number> => {
      const started = performance.now();
      const response = await fetch(downloadUri, { signal: AbortSignal.timeout(20_000) });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      return performance.now() - started;
    };
    const quiet: number[] = [];
    for (let round = 0; round < 5; round += 1) quiet.push(await download());

    let flooding = true;
    const flood = Promise.all(
      Array.from({ length: 64 }, async (_, lane) => {
        const answers: Answer[] = [];
        // Bounded: at most 40 requests per lane, and only while the downloads below run.
        for (let sent = 0; flooding && sent < 40; sent += 1) answers.push(await tokenRequest(server.url, guess(`made-up-${lane}-${sent}`), `127.0.2.${lane + 1}`));
        return answers;
      }),
    );
    // Let the flood fill the server first.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const during: number[] = [];
    for (let round = 0; round < 5; round += 1) during.push(await download());
    const token = await tokenRequest(server.url, valid);
    flooding = false;
    const answers = (await flood).flat();

    const busy = answers.filter((answer) => answer.status === 503);
    expect(busy.length).toBeGreaterThan(0);
    expect(busy.every((answer) => answer.retryAfter === '1')).toBe(true);
    expect(answers.every((answer) => [401, 503].includes(answer.status))).toBe(true);
    // The workstation that obtained a token from this address before gets its next one, ahead of the flood.
    expect(token.status).toBe(200);
    // Secret checks do not hold up the file reads of a download (they run on threads of their own).
    expect(median(during)).toBeLessThan(Math.max(2000, median(quiet) * 10));
  });

  it('stops checking secrets for a client after its failure limit, while the client itself still gets tokens (item 4)', async () => {
    // 200 wrong secrets, 5 from each of 40 addresses: under any per-(client, address) limit.
    const answers = await pool(200, 10, (index) => tokenRequest(server.url, guess(CLIENT.id), `127.0.1.${10 + (index % 40)}`));
    const checked = answers.filter((answer) => answer.status === 401).length;
    const refused = answers.filter((answer) => answer.status === 429);
    // The limit (20), plus at most the requests admitted at the same moment (10 in flight).
    expect(checked).toBeLessThanOrEqual(30);
    expect(refused.length + checked).toBe(200);
    expect(refused.every((answer) => Number(answer.retryAfter) >= 1)).toBe(true);
    expect((await tokenRequest(server.url, valid)).status).toBe(200);
  });
});

/** The heap in use after a full collection (V8's own gc, reachable once --expose-gc is set). */
function heapAfterGc(): number {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

describe('the memory the token limits hold (item 5)', () => {
  it('keeps no more for 2,000 requests with made-up 8 KB client ids than for a few', { timeout: 180_000 }, async () => {
    // One wrong secret per address and minute is checked, the rest refused before any check: the
    // requests are quick, and every one of them still reaches the limiter's tables.
    const server = await startTestServer({ PATIENT_DOCS_TOKEN_ADDRESS_FAILURES: '1' });
    try {
      const madeUp = (index: number) => `${index}-${'x'.repeat(8 * 1024)}`;
      await pool(200, 16, (index) => tokenRequest(server.url, guess(madeUp(index)), `127.0.3.${1 + (index % 8)}`));
      const before = heapAfterGc();
      const answers = await pool(2_000, 16, (index) => tokenRequest(server.url, guess(madeUp(200 + index)), `127.0.3.${1 + (index % 8)}`));
      const grown = heapAfterGc() - before;
      expect(answers.every((answer) => answer.status === 401 || answer.status === 429)).toBe(true);
      // 2,000 ids of 8 KB held as keys would be 16 MB and more.
      expect(grown).toBeLessThan(8 * 1024 * 1024);
    } finally {
      await server.close();
    }
  });
});

describe('a scope taken away from a client (item 7)', () => {
  it('stops working for the tokens it already holds within seconds, as disabling does', async () => {
    const server = await startTestServer();
    try {
      const token = await server.token();
      expect((await server.api('GET', '/v1/webhooks', { token })).status).toBe(200);
      const patch = await fetch(`${server.url}/admin/v1/clients/${CLIENT.id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ scopes: ['Patient.File.Read', 'Patient.File.Write', 'Patient.Read'] }),
      });
      expect(patch.status).toBe(200);
      // The same freshness as a disabled client (5 s), polled for at most 12 s.
      const deadline = Date.now() + 12_000;
      let status = 200;
      while (Date.now() < deadline) {
        status = (await server.api('GET', '/v1/webhooks', { token })).status;
        if (status === 403) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(status).toBe(403);
      // The scopes it keeps still work with the same token.
      expect((await server.api('GET', '/v1/patients', { token })).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
