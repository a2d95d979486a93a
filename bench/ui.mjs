// UI benchmark: open a patient with 10,000 documents in headless Chromium and compare with a plain
// static page rendering the same 10,000 rows as a <table>, in the same run. The app page uses the
// renderer's in-memory engine (?demo), which follows the server's search and paging rules, so the
// figures are the UI's own: walk 10 pages (SPEC §4.3 rule 2), build the tree, render the window.
// Then scroll the virtualised list one step per frame and report, per frame, the main thread's work
// (from a Chrome trace) next to the rAF interval and long tasks, for the app and the plain table.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(import.meta.dirname, '..');
const DIST = path.join(ROOT, 'dist/renderer');
const DOCUMENTS = 10_000;
if (!existsSync(path.join(DIST, 'index.html'))) execFileSync(process.execPath, [path.join(ROOT, 'scripts/build-renderer.mjs')], { stdio: 'inherit' });

function staticTable() {
  const rows = [];
  for (let index = 0; index < DOCUMENTS; index += 1) {
    rows.push(`<tr><td>Upper arch ${String(index).padStart(4, '0')}.stl</td><td>/scans/2026-03-04 Upper arch</td><td>STL</td><td>${(40 + index).toLocaleString('en')} kB</td><td>12 Mar 2026, 10:30</td><td>Uploaded</td></tr>`);
  }
  return `<!doctype html><html><body><table><tbody>${rows.join('')}</tbody></table><script>requestAnimationFrame(() => setTimeout(() => { performance.mark('static:rendered'); }, 0));</script></body></html>`;
}

const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };
const server = http.createServer((request, response) => {
  const url = new URL(request.url, 'http://localhost');
  if (url.pathname === '/static-table.html') return response.writeHead(200, { 'content-type': 'text/html' }).end(staticTable());
  const file = path.join(DIST, url.pathname === '/' ? 'index.html' : decodeURIComponent(url.pathname));
  if (!file.startsWith(DIST) || !existsSync(file)) return response.writeHead(404).end();
  response.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });

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

async function measureStatic() {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const started = Date.now();
  await page.goto(`${base}/static-table.html`);
  await page.waitForFunction(() => performance.getEntriesByName('static:rendered').length > 0);
  const rendered = await page.evaluate(() => performance.getEntriesByName('static:rendered')[0].startTime);
  const scroll = await flingAndTrace(page, null, 400);
  await page.close();
  return { rendered, wall: Date.now() - started, scroll };
}

async function measureApp(url, label) {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(url);
  await page.getByRole('button', { name: 'Patients', exact: true }).click();
  const opened = await page.evaluate(() => performance.now());
  await page.locator('.browser-patients').getByRole('button', { name: /Jane Roe/ }).click();
  await page.waitForFunction(() => performance.getEntriesByName('patient-docs:tree-complete').length > 0, null, { timeout: 120_000 });
  await page.getByTestId('document-count').filter({ hasText: `${DOCUMENTS.toLocaleString('en')} files` }).waitFor({ timeout: 60_000 });
  const marks = await page.evaluate(() => ({
    firstRows: performance.getEntriesByName('patient-docs:first-rows')[0].startTime,
    tree: performance.getEntriesByName('patient-docs:tree-complete')[0].startTime,
  }));
  const rowsInDom = await page.locator('.document-row').count();
  if (process.env.BENCH_PROFILE) await profile(page, label);
  const scroll = await flingAndTrace(page, '.document-rows', 400);
  await page.close();
  return { label, firstRows: marks.firstRows - opened, tree: marks.tree - opened, rowsInDom, scroll };
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

const staticResult = await measureStatic();
const apps = [await measureApp(`${base}/?demo&documents=${DOCUMENTS}`, 'demo')];
await browser.close();
server.close();

const stats = (values) => (values.length ? `p50 ${percentile(values, 0.5).toFixed(1)} / p95 ${percentile(values, 0.95).toFixed(1)} / max ${Math.max(...values).toFixed(1)} ms` : 'n/a');
const over = (values, limit) => values.filter((value) => value > limit).length;
function scrollLines(name, scroll) {
  const parts = Object.entries(scroll.breakdown).map(([kind, values]) => `${kind} ${percentile(values, 0.5).toFixed(1)}/${percentile(values, 0.95).toFixed(1)}`);
  return [
    `  ${name.padEnd(18)} main-thread work per frame ${stats(scroll.work)}; frames with > 16 ms of work: ${over(scroll.work, 16)} of ${scroll.work.length}`,
    `  ${''.padEnd(18)} rAF interval             ${stats(scroll.intervals)}; long tasks (> 50 ms): ${scroll.longTasks.length}; ${scroll.reachedEnd ? 'reached' : 'did NOT reach'} the last row`,
    `  ${''.padEnd(18)} work by kind, p50/p95 ms: ${parts.join(', ')}`,
  ];
}

console.log(`UI: patient with ${DOCUMENTS.toLocaleString('en')} documents, headless Chromium, 1440×900`);
for (const app of apps) {
  console.log(`  app (${app.label}) time to first rows           ${app.firstRows.toFixed(0)} ms`);
  console.log(`  app (${app.label}) time to full tree (all pages) ${app.tree.toFixed(0)} ms   (rows in the DOM: ${app.rowsInDom})`);
}
console.log(`  plain static ${DOCUMENTS.toLocaleString('en')}-row table: ${staticResult.rendered.toFixed(0)} ms to rendered (navigation start → first frame)`);
console.log('  scrolling, one 1,400 px step per frame to the end (same fling on both):');
for (const line of scrollLines('plain table', staticResult.scroll)) console.log(line);
for (const app of apps) for (const line of scrollLines(`app (${app.label})`, app.scroll)) console.log(line);
const ok = apps.every((app) => percentile(app.scroll.work, 0.95) < 16 && app.scroll.longTasks.length === 0 && app.scroll.reachedEnd);
console.log(`  target: p95 main-thread work per frame under 16 ms, no long task, every row reached → ${ok ? 'met' : 'NOT met'}`);
