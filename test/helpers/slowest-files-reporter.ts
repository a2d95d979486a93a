/**
 * Prints the slowest test files at the end of a run (wall time from import to the last hook),
 * with the project that ran them: where to look first when the suite grows past its budget of
 * 15 minutes on a 2-core machine.
 *
 * With PATIENT_DOCS_TEST_WRITE_TIMES=1 it also writes each file's time into test/file-times.json,
 * the durations test/helpers/longest-first-sequencer.ts orders the next runs by (files the run did
 * not run keep theirs; files that no longer exist are dropped).
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { FILE_TIMES, fileKey, readFileTimes } from './longest-first-sequencer.js';

const SHOWN = 20;

export default class SlowestFilesReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const timed = testModules
      .map((module) => {
        const diagnostic = module.diagnostic();
        return { name: fileKey(module.project.name, module.relativeModuleId), ms: diagnostic.collectDuration + diagnostic.duration };
      })
      .sort((a, b) => b.ms - a.ms);
    if (process.env.PATIENT_DOCS_TEST_WRITE_TIMES === '1') writeFileTimes(timed);
    if (timed.length < 2) return;
    const lines = timed.slice(0, SHOWN).map(({ name, ms }) => `${(ms / 1000).toFixed(1).padStart(7)} s  ${name}`);
    const total = timed.reduce((sum, { ms }) => sum + ms, 0);
    process.stdout.write(`\nSlowest test files (of ${timed.length}, ${(total / 1000).toFixed(0)} s in all):\n${lines.join('\n')}\n`);
  }
}

function writeFileTimes(timed: ReadonlyArray<{ name: string; ms: number }>): void {
  const root = path.dirname(path.dirname(import.meta.dirname));
  const times = readFileTimes();
  for (const { name, ms } of timed) times[name] = Math.round(ms / 100) / 10;
  const kept = Object.entries(times)
    .filter(([name]) => existsSync(path.join(root, name.slice(name.indexOf(':') + 1))))
    .sort(([a], [b]) => a.localeCompare(b));
  writeFileSync(FILE_TIMES, `${JSON.stringify(Object.fromEntries(kept), null, 2)}\n`);
}
