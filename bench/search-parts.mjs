// What our own code costs in a cached search, part by part, in this process with no HTTP: the
// token taken from the cache of verified tokens, the patient's access and consent, and the page
// looked up (its JSON body parsed first, as Fastify does). bench/audit.mjs measures the audit
// entry; bench/fastify-floor.mjs what room the 40% target leaves all of it (under 15 µs a request
// on the 2-core development machine). Each part runs 100,000 times; median of 3 rounds, beside an
// empty call measured the same way.
//   node bench/search-parts.mjs                                  (after npm run build)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../dist/server/config.js';
import { createContext } from '../dist/server/context.js';
import { readSeedFile } from '../dist/server/domain/seed-file.js';
import { CLIENT, ORG, PATIENT, populate } from './lib/populated.mjs';

const CALLS = 100_000;
const ROUNDS = 3;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-search-parts-'));
try {
  const { seed } = populate(dataDir, { mainPatientDocs: 20_000, totalDocs: 100_000 });
  const config = loadConfig({ PORT: '0', PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: seed, PATIENT_DOCS_LOG_LEVEL: 'warn', PATIENT_DOCS_ADMIN_TOKEN: 'bench' });
  const context = await createContext(config);
  await context.directory.applySeed(readSeedFile(seed));
  const { accessToken } = await context.tokens.issue(CLIENT.id, ['Patient.File.Read'], '127.0.0.1');
  const principal = await context.tokens.verify(accessToken);
  const header = `Bearer ${accessToken}`;
  const holder = { clientId: principal.clientId, organizationId: ORG };
  const body = JSON.stringify({ offset: 0, limit: 50, path: '/cases/case-00100', sortBy: 'lastModifiedAt', sortDirection: 'DESC' });
  const search = () => {
    const { documentChanges } = context.access.requirePatientOf(principal, ORG, PATIENT);
    return context.documents.searchPage(PATIENT, JSON.parse(body), holder, { acceptsGzip: true, documentChanges });
  };
  // The page asked for twice is cached, and gzipped from the second time on (as the route sees it).
  for (let index = 0; index < 3; index += 1) await search();
  const { documentChanges } = context.access.requirePatientOf(principal, ORG, PATIENT);
  if (search() instanceof Promise) throw new Error('the page is not answered from the cache');

  let sink;
  const parts = {
    'an empty call (baseline)': () => undefined,
    // A header arrives as a new string each request: the token is sliced out of it, as the hook does.
    'token: a verified one, from the header': () => context.tokens.verifiedBefore(` ${header}`.slice(8)),
    "patient: access and consent, nothing written since": () => context.access.requirePatientOf(principal, ORG, PATIENT),
    'page: body parsed, page found current in the cache': () => context.documents.searchPage(PATIENT, JSON.parse(body), holder, { acceptsGzip: true, documentChanges }),
  };
  const results = Object.fromEntries(Object.keys(parts).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [name, part] of Object.entries(parts)) {
      const started = process.hrtime.bigint();
      for (let call = 0; call < CALLS; call += 1) sink = part();
      results[name].push(Number(process.hrtime.bigint() - started) / CALLS / 1000);
    }
  }
  if (sink === null) console.log(sink);
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  console.log(`our code in a cached search, ${CALLS.toLocaleString('en')} calls per part, ${ROUNDS} rounds`);
  console.log('| part | µs per call (median) | rounds |');
  console.log('|---|---:|---|');
  let sum = 0;
  for (const [name, values] of Object.entries(results)) {
    if (!name.includes('baseline')) sum += median(values);
    console.log(`| ${name} | ${median(values).toFixed(2)} | ${values.map((value) => value.toFixed(2)).join(', ')} |`);
  }
  console.log(`| together (the page part includes neither token nor patient) | ${sum.toFixed(2)} | |`);
  await context.audit.close(1000);
  await context.store.close();
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
process.exit(0);
