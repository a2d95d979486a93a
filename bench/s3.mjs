// Content in an S3-compatible store (issue 26), each figure beside its baseline from the same run,
// against the same store on loopback (bench/lib/s3-stores.mjs): s3rver (Node, its own process,
// objects in a temp folder) by default, or with --store=rgw Ceph's RADOS Gateway (C++, a one-node
// cluster keeping objects in memory, as test/helpers/ceph-rgw.ts starts it):
//   one-shot upload of 1 GiB through the server   vs the AWS SDK alone (lib-storage Upload, same part size) (+ server RSS growth)
//   download of 1 GiB through a signed link        vs the AWS SDK alone (GetObject streamed)
// Both downloads are read by Node's http client (the SDK's is http.request): the same reader on
// both sides, so the difference is the server's hop. The CPU seconds per GiB of each process of a
// download (all threads, from /proc: the server, s3rver, and this process reading) are printed
// too: on a machine shared with other work they hold still when the rates do not, and on 2 CPUs
// the three together are what the rate is bounded by. For RGW the store's processes are radosgw
// and ceph-osd.
// Each run takes the SDK alone and the server in turn, seconds apart; the ratio to the baseline is
// taken within each run and judged on the median of the runs' ratios (other work on the machine
// moves a rate by up to half between runs minutes apart). The rates printed are the best of --runs
// (default 3), the CPU figures the least.
//   node bench/s3.mjs [--store=s3rver|rgw] [--quick] [--runs N]      (--quick: 256 MiB)
// BENCH_SERVER_NODE_ARGS adds node options to the server's process, for example a CPU profile of
// it written when the bench ends: BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof".
// The monotonic times (ms, the profile's clock) at which each download starts and ends are printed
// then, to find the download in the profile.
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { freePort } from './lib/server.mjs';
import { cpuSeconds, rssBytes as rss } from './lib/proc.mjs';
import { startStore, stopChild, storeMissing, STORES } from './lib/s3-stores.mjs';
import { writeSourceFile } from './lib/source-file.mjs';
import { median } from './lib/figures.mjs';

const MiB = 1024 * 1024;
/** CPU seconds this process spent since `from` (a process.cpuUsage()). */
const spent = (from) => {
  const { user, system } = process.cpuUsage(from);
  return (user + system) / 1e6;
};
const ROOT = path.resolve(import.meta.dirname, '..');
const BUCKET = 'bench';
// As the server does (server/storage/s3.ts): no notice about Node's version from the SDK in the figures.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const CLIENT = { id: 'scanner-pc-1', secret: 'scanner-pc-1-secret-0123456789' };

const storeArg = process.argv.find((arg) => arg.startsWith('--store='));
const STORE = storeArg ? storeArg.slice('--store='.length) : 's3rver';
if (!STORES.includes(STORE)) {
  console.error(`--store=${STORE}: one of ${STORES.join(', ')}`);
  process.exit(2);
}
if (storeMissing(STORE)) {
  console.log(`skipped: --store=${STORE} needs ${storeMissing(STORE)}`);
} else {
  await main();
}

async function main() {
  const quick = process.argv.includes('--quick');
  const runsAt = process.argv.indexOf('--runs');
  const RUNS = runsAt >= 0 ? Math.max(1, Number(process.argv[runsAt + 1])) : 3;
  const SIZE = (quick ? 256 : 1024) * MiB;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bench-s3-'));
  const source = path.join(work, 'source.bin');
  const children = [];
  let store;
  try {
    await writeSourceFile(source, SIZE);

    // Each run keeps the SDK's object and the server's document in the store.
    store = await startStore(STORE, { bucket: BUCKET, folder: path.join(work, 's3'), capacity: 2 * RUNS * SIZE });
    const { endpoint, credentials } = store;
    const storeProcesses = store.processes();
    const client = new S3Client({
      endpoint,
      forcePathStyle: true,
      region: credentials.AWS_REGION,
      credentials: { accessKeyId: credentials.AWS_ACCESS_KEY_ID, secretAccessKey: credentials.AWS_SECRET_ACCESS_KEY },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });

    const port = await freePort();
    const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
    const server = spawn(process.execPath, [...nodeArgs, 'dist/server/main.js'], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...credentials,
        PORT: String(port),
        PATIENT_DOCS_DATA_DIR: path.join(work, 'data'),
        PATIENT_DOCS_STORAGE_URL: `s3://${BUCKET}/server`,
        PATIENT_DOCS_S3_ENDPOINT: endpoint,
        PATIENT_DOCS_SEED: path.join(ROOT, 'test/fixtures/seed.json'),
        PATIENT_DOCS_ADMIN_TOKEN: 'bench-admin-token-0123456789',
        PATIENT_DOCS_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(server);
    let output = '';
    server.stdout.on('data', (chunk) => (output += chunk));
    server.stderr.on('data', (chunk) => (output += chunk));
    while (!output.includes('listening on')) {
      if (server.exitCode !== null) throw new Error(output);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const url = `http://127.0.0.1:${port}`;
    const { access_token: token } = await (await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) })).json();

    console.log(`file: ${SIZE / MiB} MiB on ${os.cpus().length} CPUs, ${store.name} ${endpoint} (${storeProcesses.map(({ name, pid }) => `${name} ${pid}`).join(', ')})`);
    const rate = (seconds) => `${(SIZE / MiB / seconds).toFixed(1)} MiB/s`;
    const up = { ours: [], sdk: [], cpu: [] };
    const down = { ours: [], sdk: [], cpu: [], readerOurs: [], readerSdk: [] };
    // CPU seconds of each of the store's processes, per download.
    const storeOurs = storeProcesses.map(() => []);
    const storeSdk = storeProcesses.map(() => []);
    const storeCpu = () => storeProcesses.map(({ pid }) => cpuSeconds(pid));
    const storeSpent = (from, into) => storeCpu().forEach((seconds, index) => into[index].push(seconds - from[index]));
    let growth = 0;
    let link;
    for (let run = 0; run < RUNS; run += 1) {
      let started = performance.now();
      await new Upload({ client, params: { Bucket: BUCKET, Key: `sdk/run-${run}`, Body: createReadStream(source, { highWaterMark: MiB }) }, partSize: 8 * MiB, queueSize: 4 }).done();
      up.sdk.push((performance.now() - started) / 1000);

      const document = await (
        await fetch(`${url}/v1/patients/${PATIENT}/documents`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'organization-id': ORG, 'content-type': 'application/json' },
          body: JSON.stringify({ fileName: `bench-${run}.bin`, path: '/bench' }),
        })
      ).json();
      const boundary = '----patient-docs-bench';
      const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
      const baseline = rss(server.pid);
      let peak = baseline;
      const sampler = setInterval(() => (peak = Math.max(peak, rss(server.pid))), 20);
      let cpu = cpuSeconds(server.pid);
      started = performance.now();
      const answer = await new Promise((resolve, reject) => {
        const request = http.request(`${document.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + SIZE + tail.length) } });
        request.on('error', reject);
        request.on('response', (response) => {
          const chunks = [];
          response.on('data', (chunk) => chunks.push(chunk));
          response.on('end', () => resolve({ status: response.statusCode, body: JSON.parse(Buffer.concat(chunks).toString()) }));
        });
        request.write(head);
        const file = createReadStream(source, { highWaterMark: MiB });
        file.pipe(request, { end: false });
        file.on('end', () => request.end(tail));
      });
      up.ours.push((performance.now() - started) / 1000);
      up.cpu.push(cpuSeconds(server.pid) - cpu);
      clearInterval(sampler);
      growth = Math.max(growth, peak - baseline);
      if (answer.status !== 201) throw new Error(`upload: ${answer.status} ${JSON.stringify(answer.body)}`);
      link = answer.body.storageDownloadUri;

      let storeFrom = storeCpu();
      let readerCpu = process.cpuUsage();
      started = performance.now();
      const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: `sdk/run-${run}` }));
      let bytes = 0;
      for await (const chunk of got.Body) bytes += chunk.length;
      if (bytes !== SIZE) throw new Error(`sdk download: ${bytes} bytes`);
      down.sdk.push((performance.now() - started) / 1000);
      storeSpent(storeFrom, storeSdk);
      down.readerSdk.push(spent(readerCpu));

      started = performance.now();
      const monotonic = () => (Number(process.hrtime.bigint() / 1000n) / 1000).toFixed(0);
      const from = monotonic();
      cpu = cpuSeconds(server.pid);
      storeFrom = storeCpu();
      readerCpu = process.cpuUsage();
      const response = await new Promise((resolve, reject) => http.get(link, resolve).once('error', reject));
      if (response.statusCode !== 200) throw new Error(`download: ${response.statusCode}`);
      bytes = 0;
      for await (const chunk of response) bytes += chunk.length;
      if (bytes !== SIZE) throw new Error(`download: ${bytes} bytes`);
      down.ours.push((performance.now() - started) / 1000);
      down.cpu.push(cpuSeconds(server.pid) - cpu);
      storeSpent(storeFrom, storeOurs);
      down.readerOurs.push(spent(readerCpu));
      if (nodeArgs.length > 0) console.log(`download ${run + 1} through the server: monotonic ${from}-${monotonic()} ms`);
    }
    const best = (list) => Math.min(...list);
    const all = (list) => list.map(rate).join(', ');
    /** Each run's ratio of the server's rate to the SDK's, and their median, in percent. */
    const ratios = (ours, sdk) => {
      const each = ours.map((seconds, run) => (100 * sdk[run]) / seconds);
      return `runs' ratios ${each.map((ratio) => `${ratio.toFixed(0)}%`).join(', ')}  →  median ${median(each).toFixed(0)}% of baseline (target ≥ 80%)`;
    };
    console.log(`one-shot upload:  patient-docs ${rate(best(up.ours))}  |  AWS SDK alone ${rate(best(up.sdk))}  (bests)  |  ${ratios(up.ours, up.sdk)}`);
    console.log(`  runs: patient-docs ${all(up.ours)}  |  AWS SDK ${all(up.sdk)}`);
    console.log(`server RSS growth during upload: max ${(growth / MiB).toFixed(1)} MiB over ${RUNS} runs (target < 100 MB)`);
    console.log(`download:         patient-docs ${rate(best(down.ours))}  |  AWS SDK alone ${rate(best(down.sdk))}  (bests)  |  ${ratios(down.ours, down.sdk)}`);
    console.log(`  runs: patient-docs ${all(down.ours)}  |  AWS SDK ${all(down.sdk)}`);
    const perGiB = (list) => ((Math.min(...list) * 1024 * MiB) / SIZE).toFixed(2);
    console.log(`server CPU per GiB (least of ${RUNS} runs, every thread): upload ${perGiB(up.cpu)} s, download ${perGiB(down.cpu)} s`);
    const total = (...lists) => lists.reduce((sum, list) => sum + Number(perGiB(list)), 0).toFixed(2);
    const stores = (lists) => storeProcesses.map(({ name }, index) => `${name} ${perGiB(lists[index])}`).join(' + ');
    console.log(
      `download CPU per GiB (least of ${RUNS} runs): through the server: server ${perGiB(down.cpu)} + ${stores(storeOurs)} + reader ${perGiB(down.readerOurs)} = ${total(down.cpu, ...storeOurs, down.readerOurs)} s  |  ` +
        `AWS SDK alone: ${stores(storeSdk)} + reader ${perGiB(down.readerSdk)} = ${total(...storeSdk, down.readerSdk)} s`,
    );
  } finally {
    // Each exits before its folder goes (a server's CPU profile is written as it exits).
    await Promise.all(children.map(stopChild));
    await store?.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}
