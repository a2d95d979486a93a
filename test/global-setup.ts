/**
 * Before any test file: bring the built server and sync CLI up to date (`tsc -b`, incremental: a
 * few seconds when nothing changed). End-to-end tests run them as real processes from `dist/`, as
 * `npm run server` and the installed app do: no stale build is ever tested, and no process pays
 * for compiling TypeScript at each start.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';

export default function setup(): void {
  const root = path.resolve(import.meta.dirname, '..');
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-b', 'server', 'electron/sync', 'electron/headless'], { cwd: root, stdio: 'pipe' });
  } catch (error) {
    const output = (error as { stdout?: Buffer }).stdout?.toString() ?? '';
    throw new Error(`the build the end-to-end tests run failed (tsc -b):\n${output}`, { cause: error });
  }
}
