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
// time), by content: the builds before it rewrite some of its inputs unchanged. Run by every build after `tsc -b` (npm run build, build:node, server, admin, sync, and the
// test run's global setup).
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
export const OUTDIR = path.join(ROOT, 'dist/bins/node');
const INPUTS = path.join(OUTDIR, 'inputs.json');

const BINS = {
  'patient-docs-server': 'dist/server/main.js',
  'patient-docs-admin': 'dist/server/admin/cli.js',
  'patient-docs-sync': 'dist/electron/sync/cli/cli.js',
};

/**
 * The worker threads' entries, by the names their callers give startModuleWorker: found in `tsc`'s
 * output, so a worker added to the code is in the bundle without a list to keep.
 */
function workerEntries() {
  const entries = {};
  for (const file of fs.readdirSync(path.join(ROOT, 'dist/server'), { recursive: true })) {
    if (!file.endsWith('.js')) continue;
    const code = fs.readFileSync(path.join(ROOT, 'dist/server', file), 'utf8');
    for (const [, name] of code.matchAll(/startModuleWorker\(import\.meta\.url, '([\w-]+)'/g)) {
      const entry = path.join('dist/server', path.dirname(file), `${name}.js`);
      if (entries[name] && entries[name] !== entry) throw new Error(`two worker entries named ${name}: ${entries[name]} and ${entry}; the bundle keeps them in one folder`);
      entries[name] = entry;
    }
  }
  return entries;
}

const ENTRIES = { ...BINS, ...workerEntries() };

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

/** What the bundle is made of: the entries, the externals, and the content of every file it read. */
function fingerprint(files) {
  const hash = createHash('sha256').update(JSON.stringify({ ENTRIES, EXTERNAL }));
  for (const file of files) hash.update(`${file}\0`).update(fs.readFileSync(path.join(ROOT, file)));
  return hash.digest('hex');
}

/** True when the files the last bundle read are as they were (the builds before rewrite some, same content). */
function upToDate() {
  try {
    const last = JSON.parse(fs.readFileSync(INPUTS, 'utf8'));
    return last.fingerprint === fingerprint(last.files) && last.outputs.every((file) => fs.existsSync(path.join(OUTDIR, file)));
  } catch {
    return false;
  }
}

if (!upToDate()) {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ENTRIES,
    outdir: OUTDIR,
    write: false,
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
  // Each file replaced whole (a rename), the entries last: a process starting meanwhile (another
  // test run's) reads the old bundle or the new one, never a missing or half-written file.
  fs.mkdirSync(OUTDIR, { recursive: true });
  const outputs = result.outputFiles.map((file) => ({ name: path.relative(OUTDIR, file.path), contents: file.contents }));
  const entry = (name) => Object.hasOwn(ENTRIES, name.replace(/\.js$/, ''));
  for (const file of [...outputs.filter((file) => !entry(file.name)), ...outputs.filter((file) => entry(file.name))]) {
    const target = path.join(OUTDIR, file.name);
    fs.writeFileSync(`${target}.${process.pid}.tmp`, file.contents);
    fs.renameSync(`${target}.${process.pid}.tmp`, target);
  }
  const files = [...Object.keys(result.metafile.inputs).filter((file) => !file.startsWith('<')), 'scripts/build-bins.mjs', 'package.json'];
  fs.writeFileSync(INPUTS, `${JSON.stringify({ fingerprint: fingerprint(files), files, outputs: outputs.map((file) => file.name) })}\n`);
  // Chunks of earlier bundles no entry names any more.
  const kept = new Set([...outputs.map((file) => file.name), path.basename(INPUTS)]);
  for (const name of fs.readdirSync(OUTDIR)) if (!kept.has(name) && !name.endsWith('.tmp')) fs.rmSync(path.join(OUTDIR, name), { force: true });
}
