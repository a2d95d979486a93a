// `npm start` (after the build): the desktop window when an Electron runtime and a display are
// present, otherwise the same app headless, saying why (DESIGN §2).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const desktopEntry = `${root}dist/electron/main/main.js`;
const headlessEntry = `${root}dist/electron/headless/main.js`;

function electronBinary() {
  try {
    // The electron package exports the path of its binary; it throws when the download never happened.
    const binary = createRequire(import.meta.url)('electron');
    if (typeof binary !== 'string' || !existsSync(binary)) return { binary: null, reason: 'the Electron runtime is not installed (its download did not happen)' };
    return { binary, reason: null };
  } catch (error) {
    return { binary: null, reason: `the Electron runtime is not installed (${String(error.message ?? error).split('\n')[0]})` };
  }
}

function hasDisplay() {
  if (process.platform === 'win32' || process.platform === 'darwin') return true;
  return Boolean(process.env.DISPLAY || process.env.WAYLAND_DISPLAY);
}

function run(command, args, env = {}) {
  const child = spawn(command, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 0)));
}

const electron = electronBinary();
let reason = electron.reason;
if (!reason && !hasDisplay()) reason = 'no display is available (DISPLAY and WAYLAND_DISPLAY are not set)';
if (!reason && !existsSync(desktopEntry)) reason = `the desktop build is missing (${desktopEntry})`;
if (process.env.PATIENT_DOCS_HEADLESS === '1') reason = 'PATIENT_DOCS_HEADLESS=1 asks for it';

if (!reason) {
  run(electron.binary, [desktopEntry, ...process.argv.slice(2)]);
} else {
  console.log(`Patient Docs: starting headless because ${reason}.`);
  run(process.execPath, [headlessEntry, ...process.argv.slice(2)], { PATIENT_DOCS_HEADLESS_REASON: reason });
}
