/**
 * The page the headless twin serves when no built UI is present: the sync folders and their files,
 * read through the same bridge (token from the URL fragment) and refreshed by its events. The real
 * UI is the renderer; this keeps a headless machine inspectable without it.
 */
import { BRIDGE_CALL_PREFIX, BRIDGE_EVENTS_PATH, LAUNCH_TOKEN_PARAM } from '../../shared/bridge-http.js';

export function statusPage(): string {
  const script = `
const token = new URLSearchParams(location.hash.slice(1)).get(${JSON.stringify(LAUNCH_TOKEN_PARAM)}) || sessionStorage.getItem('token') || '';
sessionStorage.setItem('token', token);
const call = async (method, ...args) => {
  const response = await fetch(${JSON.stringify(BRIDGE_CALL_PREFIX)} + method, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer ' + token }, body: JSON.stringify(args) });
  if (response.status === 401) throw new Error('This page was opened with an old link. Open the address Patient Docs printed.');
  const envelope = await response.json();
  if (!envelope.ok) throw new Error(envelope.error.message + (envelope.error.detail ? ' (' + envelope.error.detail + ')' : ''));
  return envelope.value;
};
const text = (value) => String(value ?? '').replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
const size = (bytes) => bytes < 1024 ? bytes + ' B' : bytes < 1048576 ? (bytes / 1024).toFixed(1) + ' KB' : (bytes / 1048576).toFixed(1) + ' MB';
async function render() {
  try {
    const status = await call('getStatus');
    const pairs = await call('listPairs');
    let html = '<p>Mode: <b>' + text(status.mode) + '</b>' + (status.server ? ' — ' + text(status.server.url) : '') + (status.online ? '' : ' — <b>offline</b>') + '</p>';
    if (status.secrets.warning) html += '<p class="warn">' + text(status.secrets.warning) + '</p>';
    for (const pair of pairs) {
      const { files } = await call('listFiles', { pairId: pair.id, limit: 1000 });
      html += '<h2>' + text(pair.folder) + ' → ' + text(pair.patientName || pair.patientId) + ' ' + text(pair.remoteBasePath) + ' <small>[' + text(pair.state) + '] ' + size(pair.bytesDone) + ' / ' + size(pair.bytesTotal) + '</small></h2>';
      html += '<table><thead><tr><th>File</th><th>State</th><th>Size</th><th>Progress</th><th>Problem</th></tr></thead><tbody>';
      for (const file of files) {
        html += '<tr><td>' + text(file.relativePath) + '</td><td class="' + text(file.state) + '">' + text(file.state) + '</td><td>' + size(file.size) + '</td><td>' + (file.size ? Math.round(100 * file.bytesDone / file.size) : 100) + '%</td><td>' + text(file.error ? file.error.message + (file.error.detail ? ' (' + file.error.detail + ')' : '') : '') + '</td></tr>';
      }
      html += '</tbody></table>';
    }
    if (pairs.length === 0) html += '<p>No sync folders yet. Add one with <code>patient-docs-sync add-pair</code>.</p>';
    document.getElementById('app').innerHTML = html;
  } catch (error) {
    document.getElementById('app').innerHTML = '<p class="warn">' + text(error.message) + '</p>';
  }
}
let pending = null;
const schedule = () => { pending ??= setTimeout(() => { pending = null; render(); }, 500); };
new EventSource(${JSON.stringify(BRIDGE_EVENTS_PATH)} + '?' + ${JSON.stringify(LAUNCH_TOKEN_PARAM)} + '=' + encodeURIComponent(token)).onmessage = schedule;
render();`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'">
<title>Patient Docs (headless)</title>
<style>body{font:15px system-ui,sans-serif;margin:2rem;color:#1d2730}h1{color:#0d6c75}table{border-collapse:collapse;width:100%;margin-bottom:2rem}
th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #dde3e8}.synced{color:#1b7f3b}.failed{color:#b3261e;font-weight:600}.warn{color:#8a5300}</style>
</head><body><h1>Patient Docs <small>(headless)</small></h1><div id="app" aria-live="polite">Loading…</div>
<script>${script}</script></body></html>`;
}
