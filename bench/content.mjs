// Content throughput (issue 3), each figure beside its baseline from the same run:
//   one-shot upload of 1 GiB   vs a bare Node HTTP server piping the same multipart body to disk (+ server RSS growth)
//   resumable (tus) upload     vs @tus/server + @tus/file-store alone (the peer)
//   download of 1 GiB          vs a bare fs.createReadStream → socket server
// Durability is visible beside each target baseline: the same bare server / @tus/server fsyncing before
// it answers (patient-docs must fsync before the commit, DESIGN §3; the targets are against the plain ones).
// Every figure is the best of --runs (default 2) measurements; `sync` runs before each so that one run's
// dirty pages do not slow the next.
//   node bench/content.mjs [--quick] [--runs N] [--only oneshot,download,tus] [--tus-chunk MiB]
//   (--quick: 256 MiB; --tus-chunk: PATCH size of both tus clients, default the whole file in one PATCH;
//    BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" passes node options to the patient-docs server)
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './lib/server.mjs';
import { FileStore } from '@tus/file-store';
import { Server as TusServer } from '@tus/server';
import { cpuSeconds, rssBytes as rss } from './lib/proc.mjs';
import { writeSourceFile } from './lib/source-file.mjs';

const quick = process.argv.includes('--quick');
const option = (name, fallback) => {
  const index = process.argv.indexOf(name);
  return index >= 0 && process.argv[index + 1] !== undefined ? process.argv[index + 1] : fallback;
};
const RUNS = Math.max(1, Number(option('--runs', '2')));
const ONLY = new Set(option('--only', 'oneshot,download,tus').split(','));
const ROOT = path.resolve(import.meta.dirname, '..');
const MiB = 1024 * 1024;
const SIZE = (quick ? 256 : 1024) * MiB;
const TUS_CHUNK = option('--tus-chunk', undefined) === undefined ? SIZE : Number(option('--tus-chunk')) * MiB;
const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const CLIENT = { id: 'scanner-pc-1', secret: 'scanner-pc-1-secret-0123456789' };
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-bench-content-'));
const source = path.join(work, 'source.bin');


function multipart(id) {
  const boundary = '----patient-docs-bench';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="Id"\r\n\r\n${id}\r\n--${boundary}\r\nContent-Disposition: form-data; name="Type"\r\n\r\nSTL\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="arch.stl"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return { contentType: `multipart/form-data; boundary=${boundary}`, length: head.length + SIZE + tail.length, head, tail };
}

/** Sends head + the source file + tail as the request body; resolves with status and seconds. */
function send(url, { method = 'POST', headers = {}, head = Buffer.alloc(0), tail = Buffer.alloc(0), length = SIZE, start = 0, end = SIZE - 1 }) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = http.request(url, { method, headers: { ...headers, 'content-length': String(length) } });
    request.on('error', reject);
    request.on('response', (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks).toString(), seconds: (performance.now() - started) / 1000 }));
    });
    request.write(head);
    const file = fs.createReadStream(source, { highWaterMark: MiB, start, end });
    file.on('data', (chunk) => {
      if (!request.write(chunk)) {
        file.pause();
        request.once('drain', () => file.resume());
      }
    });
    file.on('end', () => request.end(tail));
  });
}

function download(url) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    http.get(url, (response) => {
      let bytes = 0;
      response.on('data', (chunk) => (bytes += chunk.length));
      response.on('end', () => resolve({ status: response.statusCode, bytes, seconds: (performance.now() - started) / 1000 }));
    }).on('error', reject);
  });
}

const rate = (seconds) => `${(SIZE / MiB / seconds).toFixed(0)} MiB/s`;
const ratio = (ours, baseline) => `${((baseline / ours) * 100).toFixed(0)}%`;
const best = (results) => Math.min(...results.map((result) => result.seconds));
const all = (results) => results.map((result) => rate(result.seconds)).join(', ');
/** The server's CPU seconds per GiB, best run: less noisy than wall time on a shared machine. */
const cpu = (results) => `${(Math.min(...results.map((result) => result.cpu)) / (SIZE / 1024 / MiB)).toFixed(2)} s`;
/** Writes back every dirty page, so each measurement starts from the same page cache state. */
const settle = () => execFileSync('sync');

/** Pipes the request body to a file; with `durable`, fsyncs the file before answering. */
function pipeToDisk(target, durable) {
  return (request, response) => {
    const fd = fs.openSync(target, 'w');
    request.pipe(fs.createWriteStream(null, { fd, autoClose: false })).on('finish', () => {
      const answer = () => {
        fs.closeSync(fd);
        response.writeHead(201).end();
      };
      if (durable) fs.fsync(fd, answer);
      else answer();
    });
  };
}

async function listen(handler) {
  const server = http.createServer(handler);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

async function startPatientDocs() {
  const dataDir = path.join(work, 'data');
  const port = await freePort();
  let output = '';
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, 'dist/server/main.js'], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: path.join(ROOT, 'test/fixtures/seed.json'), PATIENT_DOCS_ADMIN_TOKEN: 'bench-admin-token-0123456789', PATIENT_DOCS_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  while (!output.includes('listening on')) {
    if (child.exitCode !== null) throw new Error(output);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const url = `http://127.0.0.1:${port}`;
  const tokenResponse = await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) });
  const { access_token: token } = await tokenResponse.json();
  let counter = 0;
  const createDocument = async () => {
    const response = await fetch(`${url}/v1/patients/${PATIENT}/documents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'organization-id': ORG, 'content-type': 'application/json' },
      body: JSON.stringify({ fileName: `bench-${Date.now()}-${(counter += 1)}.stl`, path: '/bench' }),
    });
    return response.json();
  };
  return { child, url, token, dataDir, createDocument };
}

async function tusUpload(endpoint, headers) {
  const created = await fetch(endpoint, { method: 'POST', headers: { ...headers, 'tus-resumable': '1.0.0', 'upload-length': String(SIZE) } });
  if (created.status !== 201) throw new Error(`tus create: ${created.status} ${await created.text()}`);
  const location = new URL(created.headers.get('location'), endpoint).toString();
  const started = performance.now();
  for (let offset = 0; offset < SIZE; offset += TUS_CHUNK) {
    const length = Math.min(TUS_CHUNK, SIZE - offset);
    const result = await send(location, {
      method: 'PATCH',
      headers: { ...headers, 'tus-resumable': '1.0.0', 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' },
      length,
      start: offset,
      end: offset + length - 1,
    });
    if (result.status !== 204) throw new Error(`tus patch: ${result.status} ${result.body}`);
  }
  return { seconds: (performance.now() - started) / 1000 };
}

/** @tus/file-store that fsyncs each PATCH's bytes before the offset is reported (what patient-docs does). */
class DurableFileStore extends FileStore {
  async write(readable, id, offset) {
    const written = await super.write(readable, id, offset);
    const handle = await fs.promises.open(this.resolve(id), 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    return written;
  }
}

/** The baselines, each in its own process like patient-docs (`--serve <kind> <path>`), so the client does not share their event loop. */
const BASELINES = {
  pipe: (target) => pipeToDisk(target, false),
  'pipe-fsync': (target) => pipeToDisk(target, true),
  read: (file) => (_request, response) => {
    response.writeHead(200, { 'content-length': String(fs.statSync(file).size), 'content-type': 'application/octet-stream' });
    fs.createReadStream(file).pipe(response);
  },
  tus: (directory) => {
    const peer = new TusServer({ path: '/files', datastore: new FileStore({ directory }) });
    return (request, response) => void peer.handle(request, response);
  },
  'tus-fsync': (directory) => {
    const peer = new TusServer({ path: '/files', datastore: new DurableFileStore({ directory }) });
    return (request, response) => void peer.handle(request, response);
  },
};

async function startBaseline(kind, target) {
  const child = spawn(process.execPath, [import.meta.filename, '--serve', kind, target], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    child.stdout.once('data', (chunk) => resolve(String(chunk).trim()));
    child.once('exit', (code) => reject(new Error(`baseline ${kind} exited with ${code}`)));
  });
  return {
    url,
    pid: child.pid,
    stop: async () => {
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

/** Runs `work` against a server process, adding the CPU seconds (user + system) that process spent to the result. */
async function measured(pid, work) {
  const before = cpuSeconds(pid);
  const result = await work();
  return { ...result, cpu: cpuSeconds(pid) - before };
}

/** Waits until the server is idle (its background work, such as the thumbnail of the last upload, is done). */
async function quiesce(pid) {
  for (let waited = 0; waited < 60_000; waited += 250) {
    const before = cpuSeconds(pid);
    await new Promise((resolve) => setTimeout(resolve, 250));
    if (cpuSeconds(pid) - before <= 0.02) return;
  }
}

async function tusPeer(kind) {
  const directory = fs.mkdtempSync(path.join(work, 'tus-peer-'));
  const peer = await startBaseline(kind, directory);
  settle();
  const result = await measured(peer.pid, () => tusUpload(`${peer.url}/files`, {}));
  await peer.stop();
  fs.rmSync(directory, { recursive: true, force: true });
  return result;
}

async function main() {
  await writeSourceFile(source, SIZE);
  console.log(`file: ${SIZE / MiB} MiB on ${os.cpus().length} CPUs`);

  const patientDocs = await startPatientDocs();
  let uploaded;

  // --- one-shot upload ---------------------------------------------------------------
  if (ONLY.has('oneshot') || ONLY.has('download')) {
    const bareTarget = path.join(work, 'bare-upload.bin');
    const results = { plain: [], durable: [], ours: [] };
    let growth = 0;
    for (let run = 0; run < (ONLY.has('oneshot') ? RUNS : 1); run += 1) {
      for (const durable of ONLY.has('oneshot') ? [false, true] : []) {
        const bare = await startBaseline(durable ? 'pipe-fsync' : 'pipe', bareTarget);
        const form = multipart('00000000-0000-4000-8000-000000000000');
        settle();
        results[durable ? 'durable' : 'plain'].push(await measured(bare.pid, () => send(bare.url, { headers: { 'content-type': form.contentType }, ...form })));
        await bare.stop();
        fs.rmSync(bareTarget, { force: true });
      }
      const document = await patientDocs.createDocument();
      const ourForm = multipart(document.id);
      await quiesce(patientDocs.child.pid);
      settle();
      const baseline = rss(patientDocs.child.pid);
      let peak = baseline;
      const sampler = setInterval(() => (peak = Math.max(peak, rss(patientDocs.child.pid))), 20);
      const ourUpload = await measured(patientDocs.child.pid, () => send(`${document.storageUrl}/file`, { headers: { authorization: `Bearer ${patientDocs.token}`, 'content-type': ourForm.contentType }, ...ourForm }));
      clearInterval(sampler);
      if (ourUpload.status !== 201) throw new Error(`upload: ${ourUpload.status} ${ourUpload.body}`);
      uploaded = JSON.parse(ourUpload.body);
      results.ours.push(ourUpload);
      growth = Math.max(growth, peak - baseline);
    }
    if (ONLY.has('oneshot')) {
      const ours = best(results.ours);
      console.log(
        `one-shot upload:  patient-docs ${rate(ours)}  |  bare pipe-to-disk ${rate(best(results.plain))}  |  bare pipe-to-disk + fsync ${rate(best(results.durable))}` +
          `  →  ${ratio(ours, best(results.plain))} of baseline (target ≥ 80%), ${ratio(ours, best(results.durable))} of the durable baseline`,
      );
      console.log(`  runs: patient-docs ${all(results.ours)}  |  bare ${all(results.plain)}  |  bare + fsync ${all(results.durable)}`);
      console.log(`  server CPU per GiB: patient-docs ${cpu(results.ours)}  |  bare ${cpu(results.plain)}  |  bare + fsync ${cpu(results.durable)}`);
      console.log(`server RSS growth during upload: max ${(growth / MiB).toFixed(1)} MiB over ${results.ours.length} runs (target < 100 MB)`);
    }
  }

  // --- download --------------------------------------------------------------------------
  if (ONLY.has('download')) {
    const results = { bare: [], ours: [] };
    const bareDownloadServer = await startBaseline('read', source);
    for (let run = 0; run < RUNS; run += 1) {
      results.bare.push(await measured(bareDownloadServer.pid, () => download(bareDownloadServer.url)));
      await quiesce(patientDocs.child.pid);
      const ourDownload = await measured(patientDocs.child.pid, () => download(uploaded.storageDownloadUri));
      if (ourDownload.bytes !== SIZE) throw new Error(`download returned ${ourDownload.bytes} bytes`);
      results.ours.push(ourDownload);
    }
    await bareDownloadServer.stop();
    const ours = best(results.ours);
    console.log(`download:         patient-docs ${rate(ours)}  |  bare createReadStream ${rate(best(results.bare))}  →  ${ratio(ours, best(results.bare))} of baseline (target ≥ 80%)`);
    console.log(`  runs: patient-docs ${all(results.ours)}  |  bare ${all(results.bare)}`);
    console.log(`  server CPU per GiB: patient-docs ${cpu(results.ours)}  |  bare ${cpu(results.bare)}`);
  }

  // --- resumable upload --------------------------------------------------------------------
  if (ONLY.has('tus')) {
    const results = { plain: [], durable: [], ours: [] };
    for (let run = 0; run < RUNS; run += 1) {
      results.plain.push(await tusPeer('tus'));
      results.durable.push(await tusPeer('tus-fsync'));
      const tusDocument = await patientDocs.createDocument();
      await quiesce(patientDocs.child.pid);
      settle();
      results.ours.push(await measured(patientDocs.child.pid, () => tusUpload(`${tusDocument.storageUrl}/uploads`, { authorization: `Bearer ${patientDocs.token}` })));
    }
    const ours = best(results.ours);
    const chunk = TUS_CHUNK >= SIZE ? 'one PATCH' : `PATCHes of ${TUS_CHUNK / MiB} MiB`;
    console.log(
      `resumable (tus, ${chunk}):  patient-docs ${rate(ours)}  |  @tus/server + @tus/file-store ${rate(best(results.plain))}  |  same + fsync per PATCH ${rate(best(results.durable))}` +
        `  →  ${ratio(ours, best(results.plain))} of the peer (target ≥ 90%), ${ratio(ours, best(results.durable))} of the durable peer`,
    );
    console.log(`  runs: patient-docs ${all(results.ours)}  |  peer ${all(results.plain)}  |  peer + fsync ${all(results.durable)}`);
    console.log(`  server CPU per GiB: patient-docs ${cpu(results.ours)}  |  peer ${cpu(results.plain)}  |  peer + fsync ${cpu(results.durable)}`);
  }

  patientDocs.child.kill('SIGTERM');
  await new Promise((resolve) => patientDocs.child.once('exit', resolve));
}

if (process.argv[2] === '--serve') {
  const { url } = await listen(BASELINES[process.argv[3]](process.argv[4]));
  console.log(url);
} else {
  main()
    .catch((error) => {
      console.error(error);
      process.exitCode = 1;
    })
    .finally(() => fs.rmSync(work, { recursive: true, force: true }));
}
