// UI benchmark: open a patient with 10,000 documents in headless Chromium and compare with a plain
// static page rendering the same 10,000 rows as a <table>, in the same run. The app page uses the
// renderer's in-memory engine (?demo), which follows the server's search and paging rules, so the
// figures are the UI's own: walk 10 pages (SPEC §4.3 rule 2), build the tree, render the window.
// Then scroll the virtualised list frame by frame and report frame intervals and long tasks.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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

async function measureStatic() {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const started = Date.now();
  await page.goto(`${base}/static-table.html`);
  await page.waitForFunction(() => performance.getEntriesByName('static:rendered').length > 0);
  const rendered = await page.evaluate(() => performance.getEntriesByName('static:rendered')[0].startTime);
  // The same fling on the plain table: the frame pacing this machine gives a page that does no work per frame.
  const intervals = await page.evaluate(async () => {
    const result = [];
    let last = performance.now();
    for (let step = 0; step < 400; step += 1) {
      window.scrollBy(0, 1400);
      await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
      const now = performance.now();
      result.push((now - last) / 2);
      last = now;
    }
    return result;
  });
  await page.close();
  return { rendered, wall: Date.now() - started, intervals };
}

async function measureApp() {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(`${base}/?demo&documents=${DOCUMENTS}`);
  await page.getByRole('button', { name: 'Patients', exact: true }).click();
  const opened = await page.evaluate(() => performance.now());
  await page.locator('.browser-patients').getByRole('button', { name: /Jane Roe/ }).click();
  await page.waitForFunction(() => performance.getEntriesByName('patient-docs:tree-complete').length > 0, null, { timeout: 60_000 });
  await page.getByTestId('document-count').filter({ hasText: '10,000 files' }).waitFor();
  const marks = await page.evaluate(() => ({
    firstRows: performance.getEntriesByName('patient-docs:first-rows')[0].startTime,
    tree: performance.getEntriesByName('patient-docs:tree-complete')[0].startTime,
  }));
  const rowsInDom = await page.locator('.document-row').count();
  // Scroll the list one step per frame from top to bottom, timing every frame and every long task.
  const scroll = await page.evaluate(async () => {
    const viewport = document.querySelector('.document-rows');
    const longTasks = [];
    new PerformanceObserver((list) => longTasks.push(...list.getEntries().map((entry) => entry.duration))).observe({ type: 'longtask', buffered: false });
    const intervals = [];
    const work = [];
    let last = performance.now();
    for (let step = 0; step < 400 && viewport.scrollTop + viewport.clientHeight < viewport.scrollHeight; step += 1) {
      const before = performance.now();
      viewport.scrollTop += 1400; // 25 rows per frame: a fast fling
      await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
      const now = performance.now();
      intervals.push((now - last) / 2);
      work.push(now - before);
      last = now;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    return { intervals, longTasks, frames: intervals.length, reachedEnd: viewport.scrollTop + viewport.clientHeight >= viewport.scrollHeight - 2 };
  });
  await page.close();
  return { firstRows: marks.firstRows - opened, tree: marks.tree - opened, rowsInDom, scroll };
}

function percentile(values, fraction) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))];
}

const staticResult = await measureStatic();
const app = await measureApp();
await browser.close();
server.close();

const frame = app.scroll.intervals;
console.log(`UI: patient with ${DOCUMENTS.toLocaleString('en')} documents (headless Chromium, renderer over the in-memory engine)`);
console.log(`  app   time to first rows           ${app.firstRows.toFixed(0)} ms`);
console.log(`  app   time to full tree (10 pages)  ${app.tree.toFixed(0)} ms   (rows in the DOM: ${app.rowsInDom})`);
console.log(`  plain static 10,000-row table       ${staticResult.rendered.toFixed(0)} ms to first paint-ready (navigation start → rendered)`);
console.log(`  scroll: ${app.scroll.frames} frames to the end (${app.scroll.reachedEnd ? 'reached' : 'did not reach'} the last row); frame interval p50 ${percentile(frame, 0.5).toFixed(1)} ms, p95 ${percentile(frame, 0.95).toFixed(1)} ms, max ${Math.max(...frame).toFixed(1)} ms; long tasks (>50 ms) during scroll: ${app.scroll.longTasks.length}`);
const plain = staticResult.intervals;
console.log(`  same fling on the plain table: frame interval p50 ${percentile(plain, 0.5).toFixed(1)} ms, p95 ${percentile(plain, 0.95).toFixed(1)} ms, max ${Math.max(...plain).toFixed(1)} ms`);
const ok = percentile(frame, 0.5) < 17.5 && app.scroll.longTasks.length === 0 && app.scroll.reachedEnd;
console.log(`  target: frames at 60 Hz (16.7 ms) with no long task → ${ok ? 'met' : 'NOT met'}`);
