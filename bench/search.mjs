// Search and create throughput with 100,000 documents for one patient and 1,000,000 in all,
// measured with autocannon against a real server process, side by side with the no-op route
// (GET /healthz) of the same server in the same run, measured again just before each run.
//   npm run bench            (all benchmarks)      node bench/search.mjs [--quick]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { cpuSeconds, mainThreadCpuSeconds, measureSteal, rssBytes } from './lib/proc.mjs';
import { clientHeaders, createRequests, PATIENT, populate, startServer, stopServer } from './lib/populated.mjs';

const quick = process.argv.includes('--quick');
const MAIN_PATIENT_DOCS = quick ? 20_000 : 100_000;
const TOTAL_DOCS = quick ? 100_000 : 1_000_000;
const DURATION = quick ? 4 : 10;

const rssMegabytes = (pid) => rssBytes(pid) / 1024 / 1024;

let serverPid;
let noOp;
/**
 * One run. The machine may be shared and its speed drifts within seconds, so the no-op route runs
 * again (half as long) just before every run, and every run is compared with the fastest no-op
 * figure of the whole bench: a slow moment can make a ratio look worse, never better.
 */
async function load(name, options) {
  if (process.env.BENCH_ONLY && !name.includes(process.env.BENCH_ONLY) && !name.includes('baseline')) return undefined;
  await autocannon({ connections: 10, pipelining: 1, ...options, duration: 1 }); // warm-up: JIT, caches
  const adjacent = noOp ? (await autocannon({ connections: 10, pipelining: 1, ...noOp, duration: DURATION / 2 })).requests.average : undefined;
  const cpuBefore = cpuSeconds(serverPid);
  const mainBefore = mainThreadCpuSeconds(serverPid);
  const steal = measureSteal();
  const result = await autocannon({ connections: 10, pipelining: 1, duration: DURATION, ...options });
  const serverCpu = cpuSeconds(serverPid) - cpuBefore;
  const mainThreadCpu = mainThreadCpuSeconds(serverPid) - mainBefore;
  const stolen = steal();
  const failures = result.non2xx + result.errors + result.timeouts;
  const requestsPerSecond = result.requests.average;
  return { name, requestsPerSecond, noOpBefore: adjacent ?? requestsPerSecond, p50: result.latency.p50, p99: result.latency.p99, failures, bytesPerResponse: result.throughput.total / result.requests.total, cpuPerRequest: (serverCpu / result.requests.total) * 1e6, mainThreadPerRequest: (mainThreadCpu / result.requests.total) * 1e6, serverCpuShare: serverCpu / DURATION, steal: stolen, rss: rssMegabytes(serverPid) };
}
let fastestNoOp = 0;
const share = (run) => `${((run.requestsPerSecond / fastestNoOp) * 100).toFixed(0)}%`;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bench-'));
console.log(`search bench: populating ${TOTAL_DOCS.toLocaleString('en')} documents (${MAIN_PATIENT_DOCS.toLocaleString('en')} for one patient)…`);
const started = Date.now();
const { seed, total } = populate(dataDir, { mainPatientDocs: MAIN_PATIENT_DOCS, totalDocs: TOTAL_DOCS });
console.log(`  populated ${total.toLocaleString('en')} rows in ${((Date.now() - started) / 1000).toFixed(1)} s`);

const { child, url } = await startServer(dataDir, seed);
serverPid = child.pid;
try {
  // What got (the desktop app's client), fetch and browsers send: pages of 50 then travel gzipped.
  const headers = await clientHeaders(url);
  const searchUrl = `${url}/v1/patients/${PATIENT}/documents/search`;
  const search = (body) => ({ url: searchUrl, method: 'POST', headers, body: JSON.stringify(body) });
  const runs = [];
  noOp = { url: `${url}/healthz`, headers };
  runs.push(await load('no-op GET /healthz (baseline)', noOp));
  const caseFolders = MAIN_PATIENT_DOCS / 100;
  const caseFolder = (index) => `/cases/case-${String(index % caseFolders).padStart(5, '0')}`;
  const repeated = { offset: 0, limit: 50, path: caseFolder(caseFolders / 2), sortBy: 'lastModifiedAt', sortDirection: 'DESC' };
  runs.push(await load('search: path filter (one case folder, repeated), 50 by lastModifiedAt', search(repeated)));
  runs.push(await load('  the same, by a client that does not take gzip', { ...search(repeated), headers: { ...headers, 'accept-encoding': 'identity' } }));
  let rotation = 0;
  // Every case folder, both pages of each, in an order that cycles through all of them before any
  // repeats: more distinct pages than the server's page cache holds, so every answer is a miss.
  const nextFolderBody = () => {
    const step = rotation++;
    return JSON.stringify({ offset: (Math.floor(step / caseFolders) % 2) * 50, limit: 50, path: caseFolder(step * 7919), sortBy: 'lastModifiedAt', sortDirection: 'DESC' });
  };
  runs.push(
    await load('search: path filter (rotating over every page of every case folder: cache misses)', {
      url: searchUrl,
      method: 'POST',
      headers,
      setupClient: (client) => {
        client.setBody(nextFolderBody());
        client.on('response', () => client.setBody(nextFolderBody()));
      },
    }),
  );
  runs.push(await load('search: whole patient (path /), 50 by lastModifiedAt', search({ offset: 0, limit: 50, path: '/', sortBy: 'lastModifiedAt', sortDirection: 'DESC' })));
  runs.push(await load('search: fileName filter "0099"', search({ offset: 0, limit: 50, fileName: '0099' })));
  runs.push(await load('create placeholder', createRequests(url, headers, `bench-${process.pid}`)));
  const rss = rssMegabytes(child.pid);
  fastestNoOp = Math.max(runs[0].requestsPerSecond, ...runs.filter(Boolean).map((run) => run.noOpBefore));
  console.log(`\nno-op route: ${runs.filter(Boolean).map((run) => run.noOpBefore.toFixed(0)).join(', ')} req/s just before each run; ratios are against the fastest, ${fastestNoOp.toFixed(0)} req/s`);
  console.log('| run | req/s | p50 ms | p99 ms | no-op just before, req/s | vs fastest no-op | server CPU µs/req | of it main thread | server CPU busy | host steal | bytes/response | RSS after, MB | errors |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const run of runs.filter(Boolean)) {
    console.log(`| ${run.name} | ${run.requestsPerSecond.toFixed(0)} | ${run.p50} | ${run.p99} | ${run.noOpBefore.toFixed(0)} | ${share(run)} | ${run.cpuPerRequest.toFixed(0)} | ${run.mainThreadPerRequest.toFixed(0)} | ${(run.serverCpuShare * 100).toFixed(0)}% | ${run.steal.toFixed(0)}% | ${run.bytesPerResponse.toFixed(0)} | ${run.rss.toFixed(0)} | ${run.failures} |`);
  }
  console.log(`\nserver RSS after the runs with ${total.toLocaleString('en')} documents: ${rss.toFixed(0)} MB`);
  if (!process.env.BENCH_ONLY) console.log(`targets: path-filtered search >= 40% of no-op (repeated ${share(runs[1])}, rotating ${share(runs[3])}), create >= 25% (${share(runs[6])}), RSS < 300 MB (${rss.toFixed(0)} MB)`);
} finally {
  await stopServer(child);
  fs.rmSync(dataDir, { recursive: true, force: true });
}
