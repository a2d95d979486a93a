// Writes what the three bins run (patient-docs-server, patient-docs-admin, patient-docs-sync) as a
// few ES module files in dist/bins/node/, bundled by esbuild from `tsc -b`'s output. Node loads the
// server from `tsc`'s output as about 550 module files (our own, Fastify's, Ajv's, jose's…), most of
// a second of CPU at every start before it does any work; the bundle loads in a fraction of that,
// for the clinic's server and IT's scripts, cron and monitoring that start the CLIs often (and the
// test suite, which starts hundreds of them).
//
// - A module the code imports lazily (`await import(…)`) stays a file of its own (`splitting`), so a
//   command still loads only what it needs (`--help` opens no database).
// - The worker threads' entries are bundled beside the code that starts them: startModuleWorker
//   (server/worker-threads.ts) finds `<name>.js` next to the calling module.
// - Left to Node, from node_modules: native modules (better-sqlite3, keytar, @napi-rs/canvas),
//   and the optional heavy ones loaded only when configured (pg, the AWS SDK, pdfjs).
// - @fastify/swagger-ui serves the API docs' pages from the folder beside its code (`__dirname`,
//   which an ES module has not): in the bundle, its modules' `__dirname` is that folder in
//   node_modules, found as Node finds the package. (@fastify/swagger reads its own package.json
//   only for an OpenAPI `info` the server always gives.)
// - dist/bins/node/ is as deep as dist/server/*/ and dist/electron/*/: the version read from
//   package.json by a path relative to the module (server/db/sqlite/database.ts,
//   electron/sync/home/app-version.ts) finds the same file.
//
// Skipped when no input changed since the last bundle (the test run's global setup runs it each
// time). Run by every build after `tsc -b` (npm run build, build:node, server, admin, sync, and the
// test run's global setup).
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
export const OUTDIR = path.join(ROOT, 'dist/bins/node');
const INPUTS = path.join(OUTDIR, 'inputs.json');

const ENTRIES = {
  'patient-docs-server': 'dist/server/main.js',
  'patient-docs-admin': 'dist/server/admin/cli.js',
  'patient-docs-sync': 'dist/electron/sync/cli/cli.js',
  // Worker threads, by the names their callers give startModuleWorker.
  'secret-worker': 'dist/server/identity/secret-worker.js',
  'writer-worker': 'dist/server/audit/writer-worker.js',
  'send-worker': 'dist/server/webhooks/send-worker.js',
  worker: 'dist/server/thumbnails/worker.js',
};

const EXTERNAL = [
  'better-sqlite3',
  'keytar',
  '@napi-rs/canvas',
  'electron',
  'pg',
  'pg-*',
  '@aws-sdk/*',
  '@smithy/*',
  'pdfjs-dist',
  'pdfjs-dist/*',

];

/** `__dirname` of @fastify/swagger-ui's modules: their folder in the installed package. */
const swaggerUiFolders = {
  name: 'swagger-ui-folders',
  setup(build) {
    build.onLoad({ filter: /[\\/]@fastify[\\/]swagger-ui[\\/].*\.js$/ }, (args) => {
      const folder = path.dirname(args.path.split(/[\\/]@fastify[\\/]swagger-ui[\\/]/).pop());
      const contents = fs.readFileSync(args.path, 'utf8');
      if (/node_modules/.test(folder) || !contents.includes('__dirname')) return undefined;
      return { loader: 'js', contents: `var __dirname = require('node:path').join(require('node:path').dirname(require.resolve('@fastify/swagger-ui')), ${JSON.stringify(folder)});\n${contents}` };
    });
  },
};

/** True when every file the last bundle read is older than it (and the entries are the same). */
function upToDate() {
  try {
    const last = JSON.parse(fs.readFileSync(INPUTS, 'utf8'));
    if (JSON.stringify(last.entries) !== JSON.stringify(ENTRIES)) return false;
    const built = fs.statSync(INPUTS).mtimeMs;
    return last.files.every((file) => fs.statSync(path.join(ROOT, file)).mtimeMs <= built);
  } catch {
    return false;
  }
}

if (!upToDate()) {
  fs.rmSync(OUTDIR, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ENTRIES,
    outdir: OUTDIR,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL,
    plugins: [swaggerUiFolders],
    // The CommonJS packages inside (Fastify, Ajv…) require Node's own modules.
    banner: { js: "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);" },
    chunkNames: 'chunk-[hash]',
    metafile: true,
    logLevel: 'warning',
  });
  const files = Object.keys(result.metafile.inputs).filter((file) => !file.startsWith('<'));
  fs.writeFileSync(INPUTS, `${JSON.stringify({ entries: ENTRIES, files: [...files, 'scripts/build-bins.mjs', 'package.json'] })}\n`);
}
