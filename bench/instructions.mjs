// Instructions per request, counted by valgrind (callgrind) in the real server process: the no-op
// route beside a cached search, a whole-patient search, an uncached page and a create, on the database
// bench/search.mjs --quick fills (100,000 documents). Time on the shared 2-core development machine
// moves by ±20% between runs of the same code; an instruction count moves by a few percent, so two
// builds can be compared reliably. It counts user space only (the kernel's share, about a quarter
// of a request's CPU, is not in it) and runs about fifty times slower than the server does.
// Needs valgrind (Debian package `valgrind`).
//   node bench/instructions.mjs                                  (after npm run build)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { clientHeaders, createRequests, PATIENT, populate, startServer, stopServer } from './lib/populated.mjs';

const WARM_UP = 4000;
const MAIN_PATIENT_DOCS = 20_000;
const MEASURED = 2000;
const ROUNDS = 3;
/** The server thread that runs the JavaScript (callgrind numbers threads from 1, in start order). */
const MAIN_THREAD = '1';

/** Instructions counted so far, per thread (callgrind_control -e works only while instrumentation is on). */
function countedPerThread(pid) {
  const text = execFileSync('callgrind_control', ['-e', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return [...text.matchAll(/^\s+Th\s*(\d+)\s+([\d,]+)/gm)].map((match) => ({ thread: match[1], instructions: Number(match[2].replaceAll(',', '')) }));
}

try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  console.log('instructions bench: skipped, valgrind is not installed (apt-get install valgrind)');
  process.exit(0);
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-instructions-'));
try {
  console.log('instructions bench: populating 100,000 documents…');
  const { seed } = populate(dataDir, { mainPatientDocs: MAIN_PATIENT_DOCS, totalDocs: 100_000 });
  const wrapper = ['valgrind', '--tool=callgrind', '--instr-atstart=no', '--smc-check=all-non-file', `--callgrind-out-file=${path.join(dataDir, 'callgrind.out')}`];
  const { child, url } = await startServer(dataDir, seed, { wrapper });
  try {
    const headers = await clientHeaders(url);
    const searchUrl = `${url}/v1/patients/${PATIENT}/documents/search`;
    const search = (body) => ({ url: searchUrl, method: 'POST', headers, body: JSON.stringify(body) });
    const caseFolders = MAIN_PATIENT_DOCS / 100;
    let rotation = 0;
    const nextPage = () => {
      const step = rotation++;
      const folder = `/cases/case-${String((step * 7919) % caseFolders).padStart(5, '0')}`;
      return JSON.stringify({ offset: (Math.floor(step / caseFolders) % 2) * 50, limit: 50, path: folder, sortBy: 'lastModifiedAt', sortDirection: 'DESC' });
    };
    const routes = {
      'no-op GET /healthz (baseline)': { url: `${url}/healthz`, headers },
      'search: one case folder, repeated (cached)': search({ offset: 0, limit: 50, path: '/cases/case-00100', sortBy: 'lastModifiedAt', sortDirection: 'DESC' }),
      'search: whole patient, repeated (cached)': search({ offset: 0, limit: 50, path: '/', sortBy: 'lastModifiedAt', sortDirection: 'DESC' }),
      // Every case folder, both pages of each, before any repeats (as bench/postgres.mjs): every answer read, signed and serialized anew.
      'search: a different page each request (uncached)': {
        ...search({}),
        setupClient: (client) => {
          client.setBody(nextPage());
          client.on('response', () => client.setBody(nextPage()));
        },
      },
      'create placeholder': createRequests(url, headers, 'instructions'),
    };
    const results = Object.fromEntries(Object.keys(routes).map((name) => [name, []]));
    // Every route once first: the start's compilation and first garbage collections stay out of the counts.
    for (const options of Object.values(routes)) await autocannon({ ...options, connections: 10, amount: WARM_UP, timeout: 60 });
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [name, options] of Object.entries(routes)) {
        await autocannon({ ...options, connections: 10, amount: WARM_UP, timeout: 60 });
        execFileSync('callgrind_control', ['--zero', String(child.pid)], { stdio: 'ignore' });
        execFileSync('callgrind_control', ['--instr=on', String(child.pid)], { stdio: 'ignore' });
        const result = await autocannon({ ...options, connections: 10, amount: MEASURED, timeout: 60 });
        // The audit log writes these requests' entries within 200 ms: their inserts count too.
        await new Promise((resolve) => setTimeout(resolve, 400));
        const threads = countedPerThread(child.pid);
        execFileSync('callgrind_control', ['--instr=off', String(child.pid)], { stdio: 'ignore' });
        if (result.non2xx + result.errors > 0) throw new Error(`${name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
        const all = threads.reduce((sum, { instructions }) => sum + instructions, 0);
        const main = threads.find(({ thread }) => thread === MAIN_THREAD)?.instructions ?? 0;
        results[name].push({ all: all / result.requests.total, main: main / result.requests.total });
      }
    }
    const thousands = (value) => `${(value / 1000).toFixed(0)}k`;
    const baseline = results[Object.keys(routes)[0]];
    console.log(`\ninstructions per request (user space, counted by callgrind), ${MEASURED} requests per route and round after ${WARM_UP} of warm-up (and every route once before the rounds), ${ROUNDS} rounds`);
    // A round can meet a moment that costs extra and that the real server spreads over many more
    // requests (a major garbage collection; the minute a search page's signed links change, when the
    // page is made again): the fewest instructions of the rounds are the figure to compare.
    const fewest = (runs, field) => Math.min(...runs.map((run) => run[field]));
    console.log('| route | all threads, per round | main thread, per round | other threads (GC, zlib, audit writer), per round | fewest on the main thread vs the no-op |');
    console.log('|---|---|---|---|---:|');
    for (const [name, runs] of Object.entries(results)) {
      const ratio = (fewest(runs, 'main') / fewest(baseline, 'main')).toFixed(2);
      console.log(`| ${name} | ${runs.map((run) => thousands(run.all)).join(', ')} | ${runs.map((run) => thousands(run.main)).join(', ')} | ${runs.map((run) => thousands(run.all - run.main)).join(', ')} | ${ratio} |`);
    }
  } finally {
    await stopServer(child);
  }
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
