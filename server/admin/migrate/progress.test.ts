import { describe, expect, it } from 'vitest';
import { MigrationProgress } from './progress.js';

function recorder(isTTY: boolean) {
  const written: string[] = [];
  let clock = 0;
  const progress = new MigrationProgress({ isTTY, columns: 100, write: (text) => written.push(text) }, () => clock);
  return { written, progress, tick: (ms: number) => (clock += ms) };
}

describe('migration progress', () => {
  it('on a terminal redraws one line with a bar, counts and bytes, and ends it with the time taken', () => {
    const { written, progress, tick } = recorder(true);
    progress.begin('copying files', 4, 4 * 1024 * 1024);
    tick(200);
    progress.advance(2, 2 * 1024 * 1024);
    tick(1300);
    progress.advance(2, 2 * 1024 * 1024);
    progress.end();
    expect(written.every((text) => text.startsWith('\r'))).toBe(true);
    expect(written[1]).toContain('[############            ]  50% copying files: 2/4, 2.0 MiB/4.0 MiB');
    expect(written.at(-1)).toMatch(/^\r\[#{24}\] 100% copying files: 4\/4, 4\.0 MiB\/4\.0 MiB in 1\.5 s +\n$/);
  });

  it('elsewhere writes plain lines: at the start, every few seconds, and at the end of each step', () => {
    const { written, progress, tick } = recorder(false);
    progress.begin('copying documents', 1000);
    for (let batch = 0; batch < 10; batch += 1) {
      tick(1000);
      progress.advance(100);
    }
    progress.begin('copying audit log', 0);
    progress.end();
    expect(written).toEqual([
      'copying documents: 0/1000\n',
      'copying documents: 500/1000\n',
      'copying documents: 1000/1000\n',
      'copying documents: 1000/1000 in 10.0 s\n',
      'copying audit log: 0/0\n',
      'copying audit log: 0/0 in 0.0 s\n',
    ]);
  });
});
