/**
 * Once before all test files (of every project): bring the built server and sync CLI up to date
 * (the one-file TypeBox they import as `#typebox`, scripts/build-typebox.mjs, then `tsc -b`,
 * incremental: a few seconds when nothing changed), then the bundle the bins run
 * (scripts/build-bins.mjs, skipped when nothing changed), and build the renderer if it was never
 * built. End-to-end tests run them as real processes from `dist/`, as `npm run server` and
 * the installed app do: no stale build is ever tested, and no process pays for compiling
 * TypeScript at each start. Nothing builds into `dist/` once the files run (they run in parallel):
 * a file building the renderer while another serves it would empty the folder under it.
 * When the run ends, the PostgreSQL clusters its files started and left running are stopped and
 * removed (test/helpers/postgres.ts stopRunClusters).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { stopRunClusters, TEST_RUN_VARIABLE } from './helpers/postgres.js';

export default function setup(): () => void {
  const root = path.resolve(import.meta.dirname, '..');
  // The test files' processes inherit it: what they leave running is stopped when the run ends.
  const run = randomUUID();
  process.env[TEST_RUN_VARIABLE] = run;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  build('the one-file TypeBox build failed (scripts/build-typebox.mjs)', [path.join(root, 'scripts/build-typebox.mjs')], root);
  build('the build the end-to-end tests run failed (tsc -b)', [tsc, '-b', 'server', 'electron/sync', 'electron/headless'], root);
  build('the bundle the bins run failed (scripts/build-bins.mjs)', [path.join(root, 'scripts/build-bins.mjs')], root);
  if (!existsSync(path.join(root, 'dist/renderer/index.html'))) {
    // As `npm run build` makes it: vitest sets NODE_ENV=test, which would make Vite build React's
    // slower development bundle, a UI no clinic runs.
    build('the renderer build the UI tests load failed', [path.join(root, 'scripts/build-renderer.mjs')], root, { NODE_ENV: 'production' });
  }
  return () => {
    try {
      stopRunClusters(run);
    } catch (error) {
      // Left behind on this machine, not a failed test: said, and the run's result stands.
      process.stderr.write(`could not remove the run's PostgreSQL clusters: ${String(error)}\n`);
    }
  };
}

function build(what: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): void {
  try {
    execFileSync(process.execPath, args, { cwd, stdio: 'pipe', env: { ...process.env, ...env } });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`${what}:\n${stdout?.toString() ?? ''}${stderr?.toString() ?? ''}`, { cause: error });
  }
}
