// What Node's http and Fastify alone cost on this machine for a request shaped like a cached
// search (POST, a validated JSON body, two onRequest hooks, a 6 KB gzipped answer), beside the
// no-op GET of the same server: the ceiling any search built on them can reach against the no-op
// in bench/search.mjs, with nothing of ours in the request. Then the same request with a handler
// that first keeps the CPU busy for 15, 30 or 45 µs, standing in for work of ours (token and
// patient checks, the page lookup, the audit entry): how much of the ratio each µs of our own
// code costs. A server process of its own, loaded by autocannon as bench/search.mjs does
// (10 connections), the routes taking turns, three rounds. Last, the same request answered with
// UNCACHED_PAGE_BYTES not compressed, the size of an uncached search page of 50 (sent whole, not
// gzipped: bench/postgres.mjs's uncached page): what Node and Fastify alone cost to take such a
// request and send such a page, the floor under that page's server CPU.
//   node bench/fastify-floor.mjs
import { spawn } from 'node:child_process';
import autocannon from 'autocannon';
import { cpuSeconds } from './lib/proc.mjs';
import { listeningUrl } from './lib/server.mjs';

const SECONDS = 4;
const ROUNDS = 3;
/** The handler's own CPU time, in µs, before it answers: none, then stand-ins for code of ours. */
const BUSY = [0, 15, 30, 45];
/** An uncached page of 50 documents with their links, as the search sends it (37 KB). */
const UNCACHED_PAGE_BYTES = 37_000;

if (process.argv[2] === '--serve') {
  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: { level: 'warn' }, genReqId: () => crypto.randomUUID() });
  const body = {
    type: 'object',
    properties: { offset: { type: 'integer' }, limit: { type: 'integer' }, path: { type: 'string' }, sortBy: { type: 'string' }, sortDirection: { type: 'string' } },
    additionalProperties: false,
  };
  const headers = { type: 'object', properties: { 'organization-id': { type: 'string', format: 'uuid' } }, required: ['organization-id'] };
  const params = { type: 'object', properties: { patientId: { type: 'string', format: 'uuid' } } };
  const page = Buffer.alloc(6000, 'x');
  const uncachedPage = Buffer.alloc(UNCACHED_PAGE_BYTES, 'x');
  app.get('/healthz', async () => ({ status: 'ok' }));
  await app.register(async (api) => {
    api.addHook('onRequest', (_request, reply, done) => {
      reply.raw.once('close', () => undefined);
      done();
    });
    api.addHook('onRequest', (request, _reply, done) => {
      request.principal = request.headers.authorization;
      done();
    });
    for (const busyMicroseconds of BUSY) {
      api.post(`/search-${busyMicroseconds}/:patientId`, { schema: { body, headers, params } }, (_request, reply) => {
        const until = process.hrtime.bigint() + BigInt(busyMicroseconds * 1000);
        while (process.hrtime.bigint() < until);
        reply.type('application/json; charset=utf-8').header('Vary', 'Accept-Encoding').header('Content-Encoding', 'gzip').send(page);
      });
    }
    api.post('/uncached/:patientId', { schema: { body, headers, params } }, (_request, reply) => {
      reply.type('application/json; charset=utf-8').send(uncachedPage);
    });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.stdout.write(`listening on http://127.0.0.1:${app.server.address().port}\n`);
} else {
  const child = spawn(process.execPath, [import.meta.filename, '--serve'], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const url = await listeningUrl(child);
    const headers = { authorization: `Bearer ${'x'.repeat(900)}`, 'organization-id': '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01', 'content-type': 'application/json', 'accept-encoding': 'gzip, deflate, br' };
    const searchBody = JSON.stringify({ offset: 0, limit: 50, path: '/cases/case-00500', sortBy: 'lastModifiedAt', sortDirection: 'DESC' });
    const runs = {
      'no-op GET /healthz (baseline)': { url: `${url}/healthz`, headers },
      ...Object.fromEntries(
        BUSY.map((busyMicroseconds) => [
          `POST, validated body, two hooks, 6 KB gzipped answer${busyMicroseconds > 0 ? `, handler busy ${busyMicroseconds} µs first` : ''}`,
          {
            url: `${url}/search-${busyMicroseconds}/5f0e8a3c-1d2b-4c3d-8e9f-000000000001`,
            method: 'POST',
            headers,
            body: searchBody,
          },
        ]),
      ),
      [`POST, validated body, two hooks, ${UNCACHED_PAGE_BYTES / 1000} KB answer not compressed (an uncached page)`]: {
        url: `${url}/uncached/5f0e8a3c-1d2b-4c3d-8e9f-000000000001`,
        method: 'POST',
        headers,
        body: searchBody,
      },
    };
    const results = Object.fromEntries(Object.keys(runs).map((name) => [name, []]));
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [name, options] of Object.entries(runs)) {
        await autocannon({ connections: 10, ...options, duration: 1 });
        const before = cpuSeconds(child.pid);
        const result = await autocannon({ connections: 10, ...options, duration: SECONDS });
        if (result.non2xx + result.errors > 0) throw new Error(`${name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
        results[name].push({ rps: result.requests.average, cpu: ((cpuSeconds(child.pid) - before) / result.requests.total) * 1e6 });
      }
    }
    const best = (name) => Math.max(...results[name].map((run) => run.rps));
    const noOp = best(Object.keys(runs)[0]);
    console.log(`Fastify ${(await import('fastify/package.json', { with: { type: 'json' } })).default.version} alone, ${ROUNDS} rounds of ${SECONDS} s taking turns`);
    console.log('| route | req/s per round | server CPU µs/req per round | best vs best no-op |');
    console.log('|---|---|---|---:|');
    for (const name of Object.keys(runs)) {
      console.log(`| ${name} | ${results[name].map((run) => run.rps.toFixed(0)).join(', ')} | ${results[name].map((run) => run.cpu.toFixed(0)).join(', ')} | ${((best(name) / noOp) * 100).toFixed(0)}% |`);
    }
  } finally {
    child.kill('SIGTERM');
  }
}
