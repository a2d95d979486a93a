/**
 * The order test files start in (test/helpers/longest-first-sequencer.ts): the same on every
 * machine, no long file left to start last, one project's files together.
 */
import { describe, expect, it } from 'vitest';
import { orderFiles, type OrderedFile } from './helpers/longest-first-sequencer.js';

const ROOT = '/repo';

function file(project: string, relative: string, groupOrder = 0): OrderedFile {
  return { moduleId: `${ROOT}/${relative}`, project: { name: project, config: { sequence: { groupOrder } } } };
}

const names = (files: OrderedFile[]): string[] => files.map((one) => `${one.project.name}:${one.moduleId.slice(ROOT.length + 1)}`);

describe('the order test files start in', () => {
  it('runs group by group, the projects with fewer files first, each project longest file first and a file with no time before all', () => {
    const files = [
      file('parallel', 'test/short.test.ts'),
      file('alone', 'test/timed.test.ts', 1),
      file('parallel', 'test/long.test.ts'),
      file('s3', 'test/content.test.ts'),
      file('parallel', 'test/new.test.ts'),
      file('parallel', 'test/middle.test.ts'),
      file('postgres', 'test/webhooks.test.ts'),
      file('s3', 'test/crash.test.ts'),
    ];
    const times = {
      'parallel:test/short.test.ts': 0.1,
      'parallel:test/long.test.ts': 90,
      'parallel:test/middle.test.ts': 20,
      'alone:test/timed.test.ts': 100,
      's3:test/content.test.ts': 20,
      's3:test/crash.test.ts': 17,
      'postgres:test/webhooks.test.ts': 22,
    };
    expect(names(orderFiles(files, times, ROOT))).toEqual([
      'postgres:test/webhooks.test.ts',
      's3:test/content.test.ts',
      's3:test/crash.test.ts',
      'parallel:test/new.test.ts',
      'parallel:test/long.test.ts',
      'parallel:test/middle.test.ts',
      'parallel:test/short.test.ts',
      'alone:test/timed.test.ts',
    ]);
  });

  it('gives the same order whatever order the files were found in', () => {
    const files = [file('parallel', 'b.test.ts'), file('parallel', 'a.test.ts'), file('parallel', 'c.test.ts'), file('deployment', 'd.test.ts')];
    const times = { 'parallel:a.test.ts': 5, 'parallel:b.test.ts': 5 };
    const expected = ['deployment:d.test.ts', 'parallel:c.test.ts', 'parallel:a.test.ts', 'parallel:b.test.ts'];
    expect(names(orderFiles(files, times, ROOT))).toEqual(expected);
    expect(names(orderFiles([...files].reverse(), times, ROOT))).toEqual(expected);
  });
});
