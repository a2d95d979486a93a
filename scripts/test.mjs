// `npm test` after the build: the lint and every test file at once. The lint (one core for about a
// minute, most of it type-aware rules) runs at a low priority, on what CPU the tests leave idle
// while they wait for servers, browsers and timers, so it neither slows a timed test nor adds its
// minute to the run. Its report is printed after the tests'; the run fails if either fails.
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const LINT_NICENESS = 10;

const lint = spawn(bin('eslint'), ['.'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
try {
  os.setPriority(lint.pid, LINT_NICENESS);
} catch {
  // Not allowed here (some containers): the lint then shares the CPUs at the tests' priority.
}
let lintOutput = '';
lint.stdout.on('data', (chunk) => (lintOutput += chunk));
lint.stderr.on('data', (chunk) => (lintOutput += chunk));
const lintDone = new Promise((resolve) => lint.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))));

const tests = spawn(bin('vitest'), ['run', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
const testsDone = new Promise((resolve) => tests.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))));

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    lint.kill(signal);
    tests.kill(signal);
  });
}

const testsCode = await testsDone;
const lintCode = await lintDone;
process.stdout.write(`\nlint (eslint .): ${lintCode === 0 ? 'clean' : 'FAILED'}\n${lintOutput}`);
process.exitCode = testsCode !== 0 ? testsCode : lintCode;
