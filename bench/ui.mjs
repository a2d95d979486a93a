// UI benchmark: open a patient with 10,000 documents in the REAL app in headless Chromium, and
// compare with a plain static page rendering the same 10,000 rows as a <table>, in the same run.
// The app is the headless twin as shipped (electron/headless/main.ts: engine + bundled server +
// bridge HTTP server with its per-launch token), set up through its own first-run screen in "this
// computer runs the server" mode. The 10,000 documents are created through the bundled server's
// HTTP API (POST /v1/patients/{id}/documents, a few hundred with content uploaded, some of them
// PNGs so rows show real thumbnails). Then, in the browser: Patients → the patient, and measure the
// time to the first rows and to the full folder tree (every page walked, SPEC §4.3 rule 2), then
// scroll the virtualised list one step per frame and report, per frame, the main thread's work
// (from a Chrome trace) next to the rAF interval and long tasks, for the app and the plain table.
// Runs on the build (`npm run bench` builds first; run alone, it builds what is missing).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(import.meta.dirname, '..');
const DIST = path.join(ROOT, 'dist');
const RENDERER_DIR = path.join(DIST, 'renderer');
const DOCUMENTS = 10_000;
/** Every CONTENT_EVERY-th document gets content (304 of them); every 8th of those is a PNG the server makes a thumbnail of (38, the last document created among them, so one shows in the first rows). */
const CONTENT_EVERY = 33;
const CONCURRENCY = 16;
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const VIEWPORT = { width: 1440, height: 900 };

if (!existsSync(path.join(DIST, 'electron/headless/main.js'))) execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-b'], { cwd: ROOT, stdio: 'inherit' });
if (!existsSync(path.join(RENDERER_DIR, 'index.html'))) execFileSync(process.execPath, [path.join(ROOT, 'scripts/build-renderer.mjs')], { stdio: 'inherit' });
const { launchHeadless } = await import(path.join(DIST, 'electron/headless/main.js'));
const { CLIENT_SECRET_ACCOUNT } = await import(path.join(DIST, 'electron/sync/api/connection.js'));

const cleanup = [];
const temp = (name) => {
  const directory = mkdtempSync(path.join(os.tmpdir(), `patient-docs-bench-ui-${name}-`));
  cleanup.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
};
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

// ---- the real app: headless twin, first run through its own screen --------------------------------

async function startApp(browser) {
  const started = performance.now();
  const headless = await launchHeadless({ home: temp('home'), port: 0, firstRun: 'choose', rendererDir: RENDERER_DIR, log: () => undefined });
  cleanup.unshift(() => headless.stop());
  // Any free port for the webhook listener: the default (8787) may be held by something else.
  await headless.app.updateSettings({ webhook: { port: 0 } });
  const page = await browser.newPage({ viewport: VIEWPORT, locale: 'en-GB' });
  await page.goto(headless.openUrl);
  await page.getByText('This computer runs the server').click();
  await page.getByRole('button', { name: 'Start the server here' }).click();
  await page.getByRole('heading', { name: 'Sync', exact: true }).waitFor({ timeout: 60_000 });
  await page.close();
  if (headless.app.mode() !== 'embedded') throw new Error(`the app is in mode ${headless.app.mode()}, not embedded`);
  return { headless, setup: performance.now() - started };
}

/** The bundled server's API as the scanner client the first run created (its secret from the app's secret store). */
async function serverApi(app) {
  const settings = app.settings;
  const serverUrl = settings.get('serverUrl');
  const secret = await app.secrets.get(CLIENT_SECRET_ACCOUNT);
  const tokenResponse = await fetch(settings.get('tokenUrl'), { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: settings.get('clientId'), client_secret: secret }) });
  const { access_token: token } = await tokenResponse.json();
  if (!token) throw new Error(`token request failed: ${tokenResponse.status}`);
  const headers = { authorization: `Bearer ${token}`, 'organization-id': settings.get('organizationId') };
  const call = async (method, route, body) => {
    const response = await fetch(`${serverUrl}${route}`, { method, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const upload = async (created, fileType, bytes) => {
    const form = new FormData();
    form.set('FileName', created.fileName);
    form.set('Type', fileType);
    form.set('Id', created.id);
    form.set('file', new Blob([bytes]), created.fileName);
    const response = await fetch(`${created.storageUrl}/file`, { method: 'POST', headers: { authorization: headers.authorization }, body: form });
    if (response.status !== 201) throw new Error(`upload ${created.fileName}: ${response.status} ${await response.text()}`);
  };
  return { call, upload };
}

const KINDS = ['Upper arch', 'Lower arch', 'Bite registration', 'Implant planning', 'Check-up'];
const EXTENSIONS = ['stl', 'stl', 'ply', 'png', 'jpg', 'pdf', 'dcm', 'obj'];
const FILES_PER_VISIT = 40;

/** Document `index`: 250 visits of 40 files, 30 in the visit's folder and 10 in its photos/ subfolder (a tree of 501 folders). */
function documentSpec(index) {
  const visit = Math.floor(index / FILES_PER_VISIT);
  const file = index % FILES_PER_VISIT;
  const kind = KINDS[visit % KINDS.length];
  const date = new Date(Date.UTC(2019, 0, 7) + visit * 7 * 86_400_000).toISOString().slice(0, 10);
  const folder = `/scans/${date} ${kind}${file >= 30 ? '/photos' : ''}`;
  const stem = kind.toLowerCase().replace(/\W+/g, '-');
  const number = String(file + 1).padStart(2, '0');
  if (index % CONTENT_EVERY === 0) {
    // The documents that get content: types the server makes no thumbnail of, and every 8th a PNG that it does.
    return (index / CONTENT_EVERY) % 8 === 7 ? { path: folder, fileName: `photo-${number}.png`, content: 'png' } : { path: folder, fileName: `ct-slice-${number}.dcm`, content: 'dcm' };
  }
  return { path: folder, fileName: `${stem}-${number}.${EXTENSIONS[file % EXTENSIONS.length]}` };
}

function makePng(size, seed) {
  const png = new PNG({ width: size, height: size });
  for (let y = 0; y < size; y += 1) {
    for (let x = 0; x < size; x += 1) {
      const offset = (y * size + x) * 4;
      const inDisc = Math.hypot(x - size / 2, y - size / 2) < size / 3;
      png.data[offset] = inDisc ? (40 + seed * 13) % 255 : 200;
      png.data[offset + 1] = inDisc ? 60 : 220;
      png.data[offset + 2] = inDisc ? 120 : 200 + Math.round((55 * y) / size);
      png.data[offset + 3] = 255;
    }
  }
  return PNG.sync.write(png);
}

/** Creates the documents through the API, CONCURRENCY at a time, uploading content right after creating the chosen ones. */
async function createDocuments(api, patientId) {
  const started = performance.now();
  let next = 0;
  let uploaded = 0;
  let pngs = 0;
  const worker = async () => {
    for (let index = next++; index < DOCUMENTS; index = next++) {
      const spec = documentSpec(index);
      const created = await api.call('POST', `/v1/patients/${patientId}/documents`, { fileName: spec.fileName, path: spec.path });
      if (spec.content === 'png') {
        await api.upload(created, 'PNG', makePng(96, index));
        pngs += 1;
      } else if (spec.content === 'dcm') {
        await api.upload(created, 'DCM', Buffer.alloc(2048 + ((index * 7919) % 60_000), index & 0xff));
      }
      if (spec.content) uploaded += 1;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { ms: performance.now() - started, uploaded, pngs };
}

/** Every document of the patient, paged exactly as SPEC §4.3 rule 2 says (default order), for the plain table. */
async function allDocuments(api, patientId, query = {}) {
  const documents = [];
  for (let total = Infinity; documents.length < total; ) {
    const page = await api.call('POST', `/v1/patients/${patientId}/documents/search`, { path: '/', ...query, offset: documents.length, limit: 1000 });
    total = page.total;
    if (page.documents.length === 0) break;
    documents.push(...page.documents);
  }
  return documents;
}

/** Thumbnails render in the background after upload: wait for them so they do not load the CPU during the measurements. */
async function waitForThumbnails(api, patientId, expected) {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const documents = await allDocuments(api, patientId, { fileType: 'PNG', hasContent: true });
    const ready = documents.filter((document) => document.thumbnailDownloadUri).length;
    if (ready >= expected || Date.now() > deadline) return ready;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

// ---- the plain page: the same rows as a static <table> ---------------------------------------------

const escapeHtml = (text) => String(text).replace(/[&<>"]/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[char]);

function staticTable(documents) {
  const rows = documents.map(
    (document) =>
      `<tr><td>${escapeHtml(document.fileName)}</td><td>${escapeHtml(document.path)}</td><td>${escapeHtml(document.fileType)}</td><td>${document.fileSize === null ? '—' : `${Math.ceil(document.fileSize / 1024).toLocaleString('en')} kB`}</td><td>${escapeHtml(new Date(document.lastModifiedAt).toLocaleString('en-GB'))}</td><td>${document.hasContent ? 'Uploaded' : 'No content yet'}</td></tr>`,
  );
  return `<!doctype html><html><body><table><tbody>${rows.join('')}</tbody></table><script>requestAnimationFrame(() => setTimeout(() => { performance.mark('static:rendered'); }, 0));</script></body></html>`;
}

async function serveStatic(html) {
  const server = http.createServer((request, response) => {
    if (new URL(request.url, 'http://localhost').pathname === '/static-table.html') return response.writeHead(200, { 'content-type': 'text/html' }).end(html);
    response.writeHead(404).end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.unshift(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${server.address().port}/static-table.html`;
}

/**
 * Scrolls `selector` (or the window) one step per animation frame and measures, per frame, both the
 * rAF interval (16.7 ms at 60 Hz by construction, whatever the page does, until it misses frames)
 * and the main thread's WORK in that frame: the summed duration of the renderer main thread's
 * top-level tasks (script, style, layout, paint) between two frame markers, from a Chrome trace.
 */
async function flingAndTrace(page, selector, steps) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Tracing.start', { categories: 'toplevel,devtools.timeline', transferMode: 'ReturnAsStream' });
  const inPage = await page.evaluate(
    async ({ selector, steps }) => {
      const target = selector ? document.querySelector(selector) : document.scrollingElement;
      const longTasks = [];
      const observer = new PerformanceObserver((list) => longTasks.push(...list.getEntries().map((entry) => entry.duration)));
      observer.observe({ type: 'longtask', buffered: false });
      const intervals = [];
      const callbacks = [];
      let last = performance.now();
      for (let step = 0; step < steps && target.scrollTop + target.clientHeight < target.scrollHeight; step += 1) {
        await new Promise((resolve) =>
          requestAnimationFrame((now) => {
            const begin = performance.now();
            console.timeStamp('bench-frame');
            target.scrollTop += 1400; // 25 rows per frame: a fast fling
            intervals.push(now - last);
            last = now;
            callbacks.push(performance.now() - begin);
            resolve();
          }),
        );
      }
      await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
      console.timeStamp('bench-frame');
      observer.disconnect();
      return { intervals: intervals.slice(1), callbacks, longTasks, reachedEnd: target.scrollTop + target.clientHeight >= target.scrollHeight - 2 };
    },
    { selector, steps },
  );
  const complete = new Promise((resolve) => cdp.once('Tracing.tracingComplete', resolve));
  await cdp.send('Tracing.end');
  const { stream } = await complete;
  let text = '';
  for (;;) {
    const chunk = await cdp.send('IO.read', { handle: stream });
    text += chunk.base64Encoded ? Buffer.from(chunk.data, 'base64').toString('utf8') : chunk.data;
    if (chunk.eof) break;
  }
  await cdp.send('IO.close', { handle: stream });
  await cdp.detach();
  return { ...inPage, ...frameWork(JSON.parse(text).traceEvents ?? JSON.parse(text)) };
}

/** Per-frame main-thread busy time (the union of top-level tasks), and by kind, between frame markers. */
function frameWork(events) {
  const markers = events.filter((event) => event.name === 'TimeStamp' && event.args?.data?.message === 'bench-frame');
  if (markers.length < 2) return { work: [], breakdown: {} };
  const pid = markers[0].pid;
  const tid = markers[0].tid;
  const onMain = events.filter((event) => event.pid === pid && event.tid === tid && event.ph === 'X' && typeof event.dur === 'number');
  const kinds = {
    task: ['RunTask', 'ThreadControllerImpl::RunTask'], script: ['FunctionCall', 'EvaluateScript', 'TimerFire', 'FireAnimationFrame', 'EventDispatch', 'V8.Execute'], style: ['UpdateLayoutTree', 'RecalcStyle'], layout: ['Layout'], paint: ['Paint', 'PrePaint', 'Layerize', 'UpdateLayer', 'Commit', 'PaintImage', 'Decode Image'] };
  const bounds = markers.map((marker) => marker.ts).sort((a, b) => a - b);
  const breakdown = Object.fromEntries(Object.keys(kinds).map((kind) => [kind, []]));
  for (let index = 0; index + 1 < bounds.length; index += 1) {
    const [from, to] = [bounds[index], bounds[index + 1]];
    for (const [kind, names] of Object.entries(kinds)) {
      // The union of a kind's events (a task or call nested in another is not counted twice).
      const matching = onMain.filter((event) => names.includes(event.name) && event.ts < to && event.ts + event.dur > from);
      let total = 0;
      let coveredUntil = -Infinity;
      for (const event of matching.sort((a, b) => a.ts - b.ts)) {
        const start = Math.max(event.ts, coveredUntil, from);
        const end = Math.min(event.ts + event.dur, to);
        if (end > start) total += end - start;
        coveredUntil = Math.max(coveredUntil, event.ts + event.dur);
      }
      breakdown[kind].push(total / 1000);
    }
  }
  const { task: work, ...rest } = breakdown;
  return { work, breakdown: rest };
}

async function measureStatic(browser, url) {
  const page = await browser.newPage({ viewport: VIEWPORT, locale: 'en-GB' });
  await page.goto(url);
  await page.waitForFunction(() => performance.getEntriesByName('static:rendered').length > 0);
  const rendered = await page.evaluate(() => performance.getEntriesByName('static:rendered')[0].startTime);
  const rows = await page.locator('tr').count();
  const scroll = await flingAndTrace(page, null, 400);
  await page.close();
  return { rendered, rows, scroll };
}

/**
 * The app: Patients → the patient. Times run from the click on the patient (recorded in the page)
 * to the renderer's own marks: first rows committed, and the tree walk done (every page fetched).
 */
async function measureApp(browser, headless, patientName, label) {
  const page = await browser.newPage({ viewport: VIEWPORT, locale: 'en-GB' });
  const searches = [];
  page.on('request', (request) => {
    if (new URL(request.url()).pathname.endsWith('/bridge/call/searchDocuments')) searches.push(request.postDataJSON()?.[1] ?? {});
  });
  await page.goto(headless.openUrl);
  await page.getByRole('button', { name: 'Patients', exact: true }).click();
  const option = page.locator('.browser-patients').getByRole('button', { name: patientName });
  await option.waitFor();
  await page.evaluate(() =>
    document.addEventListener('click', (event) => { if (event.target.closest?.('.browser-patients .patient-option')) window.__benchPicked ??= performance.now(); }, true),
  );
  await option.click();
  await page.waitForFunction(() => performance.getEntriesByName('patient-docs:tree-complete').length > 0, null, { timeout: 120_000 });
  await page.getByTestId('document-count').filter({ hasText: `${DOCUMENTS.toLocaleString('en')} files` }).waitFor({ timeout: 60_000 });
  const marks = await page.evaluate(() => ({
    picked: window.__benchPicked,
    firstRows: performance.getEntriesByName('patient-docs:first-rows')[0].startTime,
    tree: performance.getEntriesByName('patient-docs:tree-complete')[0].startTime,
  }));
  const rowsInDom = await page.locator('.document-row').count();
  const thumbnailsInView = await page.locator('.document-row img.thumbnail').count();
  // The tree-complete mark is about the tree's DATA (every page walked, every folder known), not
  // about rows on screen: the tree opens collapsed below the first level and renders only rows in view.
  const folders = Number(await page.locator('.folder-tree').getAttribute('data-folder-count'));
  const foldersShown = (await page.locator('.folder-tree [role="treeitem"]').count()) - 1; // less the root, "All files"
  if (process.env.BENCH_PROFILE) await profile(page, label);
  const scroll = await flingAndTrace(page, '.document-rows', 400);
  await page.close();
  return { label, firstRows: marks.firstRows - marks.picked, tree: marks.tree - marks.picked, rowsInDom, thumbnailsInView, folders, foldersShown, searches, scroll };
}

/** BENCH_PROFILE=1: a CPU profile of one fling, written next to the bench for DevTools. */
async function profile(page, label) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 100 });
  await cdp.send('Profiler.start');
  await page.evaluate(async () => {
    const viewport = document.querySelector('.document-rows');
    for (let step = 0; step < 200 && viewport.scrollTop + viewport.clientHeight < viewport.scrollHeight; step += 1) {
      await new Promise((resolve) => requestAnimationFrame(() => { viewport.scrollTop += 1400; resolve(); }));
    }
    viewport.scrollTop = 0;
  });
  const { profile: result } = await cdp.send('Profiler.stop');
  const file = path.join(ROOT, `bench/ui-${label}.cpuprofile`);
  writeFileSync(file, JSON.stringify(result));
  const self = new Map();
  const byId = new Map(result.nodes.map((node) => [node.id, node]));
  const counts = new Map();
  for (const id of result.samples) counts.set(id, (counts.get(id) ?? 0) + 1);
  for (const [id, count] of counts) {
    const frame = byId.get(id).callFrame;
    const key = `${frame.functionName || '(anonymous)'} ${frame.url.split('/').pop()}:${frame.lineNumber}`;
    self.set(key, (self.get(key) ?? 0) + count);
  }
  const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 12);
  console.log(`  profile (${file}): top self time, samples of 0.1 ms`);
  for (const [key, count] of top) console.log(`    ${String(count).padStart(6)}  ${key}`);
  await cdp.detach();
}

function percentile(values, fraction) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))];
}

async function run() {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  openBrowser = browser;
  const { headless, setup } = await startApp(browser);
  const api = await serverApi(headless.app);
  const { patients } = await api.call('GET', '/v1/patients?limit=100');
  if (patients.length !== 1) throw new Error(`expected the first run's one demo patient, found ${patients.length}`);
  const [patient] = patients;
  const created = await createDocuments(api, patient.id);
  const thumbnails = await waitForThumbnails(api, patient.id, created.pngs);
  const documents = await allDocuments(api, patient.id);
  if (documents.length !== DOCUMENTS) throw new Error(`the server lists ${documents.length} documents, not ${DOCUMENTS}`);
  const staticUrl = await serveStatic(staticTable(documents));
  const plain = await measureStatic(browser, staticUrl);
  const app = await measureApp(browser, headless, patient.name, 'app');
  return { setup, created, thumbnails, plain, app };
}

function report({ setup, created, thumbnails, plain, app }) {
  const ms = (value) => `${Math.round(value).toLocaleString('en')} ms`;
  const stats = (values) => (values.length ? `${percentile(values, 0.5).toFixed(1)} / ${percentile(values, 0.95).toFixed(1)} / ${Math.max(...values).toFixed(1)}` : 'n/a');
  const over = (values, limit) => `${values.filter((value) => value > limit).length} of ${values.length}`;
  const kinds = (scroll) => Object.entries(scroll.breakdown).map(([kind, values]) => `${kind} ${percentile(values, 0.5).toFixed(1)}/${percentile(values, 0.95).toFixed(1)}`).join(', ');
  const pages = app.searches.map((search) => search.limit);
  const sameOrder = app.searches.every((search) => search.sortBy === app.searches[0]?.sortBy && search.sortDirection === app.searches[0]?.sortDirection);
  const table = [
    ['', 'real app (headless twin)', `plain static table`, 'target'],
    ['time to first rows', ms(app.firstRows), `${ms(plain.rendered)} (all rows)`, ''],
    ['time to full tree data (all pages walked)', ms(app.tree), `${ms(plain.rendered)} (all rows)`, ''],
    ['rows in the DOM', String(app.rowsInDom), plain.rows.toLocaleString('en'), ''],
    ['scroll: main-thread work/frame p50/p95/max', `${stats(app.scroll.work)} ms`, `${stats(plain.scroll.work)} ms`, 'p95 < 16 ms'],
    ['scroll: frames with > 16 ms of work', over(app.scroll.work, 16), over(plain.scroll.work, 16), ''],
    ['scroll: rAF interval p50/p95/max', `${stats(app.scroll.intervals)} ms`, `${stats(plain.scroll.intervals)} ms`, '16.7 ms at 60 Hz'],
    ['scroll: long tasks (> 50 ms)', String(app.scroll.longTasks.length), String(plain.scroll.longTasks.length), '0'],
    ['scroll: reached the last row', app.scroll.reachedEnd ? 'yes' : 'NO', plain.scroll.reachedEnd ? 'yes' : 'NO', 'yes'],
  ];
  const widths = table[0].map((_, column) => Math.max(...table.map((row) => row[column].length)));
  console.log(`UI: patient with ${DOCUMENTS.toLocaleString('en')} documents, real headless app (engine + bundled server + HTTP bridge), headless Chromium, ${VIEWPORT.width}×${VIEWPORT.height}`);
  console.log(`  setup: first run "this computer runs the server" through the UI ${seconds(setup)}; ${DOCUMENTS.toLocaleString('en')} documents created through POST /v1/patients/{id}/documents in ${seconds(created.ms)} (${Math.round(DOCUMENTS / (created.ms / 1000)).toLocaleString('en')}/s, ${CONCURRENCY} at a time), ${created.uploaded} of them with content uploaded, ${thumbnails} of ${created.pngs} PNG thumbnails rendered`);
  console.log(`  the app's walk: ${pages.length} search pages through the bridge (limits ${pages.join(', ')}), ${sameOrder ? 'the same order on every page' : 'the order CHANGED between pages'}; the tree holds ${app.folders} folders (${app.foldersShown} of them shown: the tree opens collapsed below the first level); ${app.thumbnailsInView} thumbnail(s) in the first window of rows`);
  console.log(`  scrolling: one 1,400 px step per frame to the end (the same fling on both)`);
  for (const row of table) console.log(`  ${row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padEnd(widths[column]))).join('  ').trimEnd()}`);
  console.log(`  work by kind, p50/p95 ms — app: ${kinds(app.scroll)}`);
  console.log(`                             plain table: ${kinds(plain.scroll)}`);
  const ok = percentile(app.scroll.work, 0.95) < 16 && app.scroll.longTasks.length === 0 && app.scroll.reachedEnd && sameOrder;
  console.log(`  target: p95 main-thread work per frame under 16 ms, no long task, every row reached → ${ok ? 'met' : 'NOT met'}`);
}

let openBrowser;
let failure;
let result;
try {
  result = await run();
} catch (error) {
  failure = error;
} finally {
  // The browser first (its pages hold the bridge's event streams open), then the app, then the folders.
  for (const step of [() => openBrowser?.close(), ...cleanup]) {
    try {
      await step();
    } catch (error) {
      console.error(`cleanup: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
if (failure) {
  console.error(`UI bench failed: ${failure instanceof Error ? (failure.stack ?? failure.message) : String(failure)}`);
  process.exitCode = 1;
} else {
  report(result);
}
