// Writes the installed TypeBox as one ES module, dist/vendor/typebox.mjs, which our code imports as
// `#typebox` (package.json "imports"; TypeScript still reads the types of the `typebox` package).
// Node loads the package as 373 module files, a quarter of a second at every start of the server
// and the CLIs; this one file loads in a twentieth. Run by every build (npm run build, the test
// run's global setup) before `tsc -b` output runs and before the renderer's Vite build bundles it,
// so it always matches the installed typebox.
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const PACKAGE = path.join(ROOT, 'node_modules/typebox');
const OUTFILE = path.join(ROOT, 'dist/vendor/typebox.mjs');

const { version } = JSON.parse(fs.readFileSync(path.join(PACKAGE, 'package.json'), 'utf8'));
const license = fs.readFileSync(path.join(PACKAGE, 'license'), 'utf8').trim();

await build({
  absWorkingDir: ROOT,
  entryPoints: ['typebox'],
  outfile: OUTFILE,
  bundle: true,
  format: 'esm',
  // The same file runs in Node (server, CLIs, Electron's main process) and in the renderer's bundle.
  platform: 'neutral',
  // Paths in the file's comments as node_modules/typebox/…, wherever node_modules really lives.
  preserveSymlinks: true,
  banner: { js: `/*! typebox ${version}, one file by scripts/build-typebox.mjs.\n${license}\n*/` },
  logLevel: 'warning',
});
