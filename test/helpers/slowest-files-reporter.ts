/**
 * Prints the slowest test files at the end of a run (wall time from import to the last hook),
 * with the project that ran them: where to look first when the suite grows past its budget of
 * 15 minutes on a 2-core machine.
 */
import type { Reporter, TestModule } from 'vitest/node';

const SHOWN = 20;

export default class SlowestFilesReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const timed = testModules
      .map((module) => {
        const diagnostic = module.diagnostic();
        return { name: `${module.project.name}:${module.relativeModuleId}`, ms: diagnostic.collectDuration + diagnostic.duration };
      })
      .sort((a, b) => b.ms - a.ms);
    if (timed.length < 2) return;
    const lines = timed.slice(0, SHOWN).map(({ name, ms }) => `${(ms / 1000).toFixed(1).padStart(7)} s  ${name}`);
    const total = timed.reduce((sum, { ms }) => sum + ms, 0);
    process.stdout.write(`\nSlowest test files (of ${timed.length}, ${(total / 1000).toFixed(0)} s in all):\n${lines.join('\n')}\n`);
  }
}
