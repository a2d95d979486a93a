import { appendFile, mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { FOLDER_WAIT_SETTLE_PERIODS, StabilityGate, statIfPresent } from './stability.js';
import type { FileStat } from './stability.js';

/** A folder whose files the test grows by hand, on a clock the test moves. */
function fakeFolder() {
  const files = new Map<string, FileStat>();
  const locked = new Set<string>();
  const released: Array<{ path: string; at: number }> = [];
  const clock = { now: 0 };
  const gate = new StabilityGate({
    root: '/scans',
    settleMs: 2000,
    checkEveryMs: 0,
    now: () => clock.now,
    stat: async (absolutePath) => files.get(path.relative('/scans', absolutePath)),
    canOpen: async (absolutePath) => !locked.has(path.relative('/scans', absolutePath)),
    onReady: (relativePath) => released.push({ path: relativePath, at: clock.now }),
  });
  const at = async (time: number) => {
    clock.now = time;
    await gate.check();
    return released.map((entry) => entry.path);
  };
  return { files, locked, released, gate, at };
}

describe('stability gate (controlled clock)', () => {
  it('releases a file once it kept its size and mtime for the settle interval', async () => {
    const { files, gate, at } = fakeFolder();
    files.set('jaw.stl', { size: 10, mtimeMs: 1 });
    gate.observe('jaw.stl', { size: 10, mtimeMs: 1 });
    expect(await at(1000)).toEqual([]);
    files.set('jaw.stl', { size: 20, mtimeMs: 2 });
    expect(await at(2500)).toEqual([]);
    expect(await at(4400)).toEqual([]);
    expect(await at(4500)).toEqual(['jaw.stl']);
    expect(await at(9000)).toEqual(['jaw.stl']);
    expect(gate.pendingCount).toBe(0);
  });

  it('holds every file of a folder while one of them is still being written', async () => {
    const { files, gate, at } = fakeFolder();
    for (const name of ['series/IM1', 'series/IM2', 'other/report.pdf']) {
      files.set(name, { size: 5, mtimeMs: 1 });
      gate.observe(name);
    }
    await at(0);
    files.set('series/IM2', { size: 9, mtimeMs: 2 });
    expect(await at(1500)).toEqual([]);
    expect(await at(2000)).toEqual(['other/report.pdf']);
    expect(await at(3400)).toEqual(['other/report.pdf']);
    expect((await at(3500)).sort()).toEqual(['other/report.pdf', 'series/IM1', 'series/IM2']);
  });

  it('waits for a locked file to be released by the scanner, without holding back its siblings', async () => {
    const { files, locked, gate, at } = fakeFolder();
    files.set('case/a.stl', { size: 5, mtimeMs: 1 });
    files.set('case/b.stl', { size: 5, mtimeMs: 1 });
    locked.add('case/b.stl');
    gate.observe('case/a.stl');
    gate.observe('case/b.stl');
    await at(0);
    expect(await at(2000)).toEqual(['case/a.stl']);
    locked.delete('case/b.stl');
    expect(await at(2100)).toEqual(['case/a.stl', 'case/b.stl']);
  });

  it('stops holding a folder for a sibling that never stops changing (a log the scanner appends to)', async () => {
    const { files, gate, at } = fakeFolder();
    files.set('export/scan.stl', { size: 5, mtimeMs: 1 });
    gate.observe('export/scan.stl', { size: 5, mtimeMs: 1 });
    let released: string[] = [];
    for (let time = 0, size = 1; time <= 20_000; time += 200, size += 1) {
      await at(time);
      files.set('export/export.log', { size, mtimeMs: time });
      gate.observe('export/export.log', { size, mtimeMs: time });
      released = await at(time);
      if (time < 2000 * FOLDER_WAIT_SETTLE_PERIODS) expect(released, `at ${time} ms`).toEqual([]);
    }
    expect(released).toEqual(['export/scan.stl']);
    expect(gate.pendingCount).toBe(1);
  });

  it('still holds a series while new files of it keep arriving, however long it takes', async () => {
    const { files, gate, at } = fakeFolder();
    const last = 3 * FOLDER_WAIT_SETTLE_PERIODS;
    for (let index = 0; index <= last; index += 1) {
      await at(index * 1000);
      // Written now, on the test's clock: a file that just arrived has a fresh mtime.
      files.set(`series/IM${index}`, { size: 5, mtimeMs: index * 1000 });
      gate.observe(`series/IM${index}`, { size: 5, mtimeMs: index * 1000 });
      expect(await at(index * 1000), `at ${index} s`).toEqual([]);
    }
    expect(await at(last * 1000 + 1999)).toEqual([]);
    expect(await at(last * 1000 + 2000)).toHaveLength(last + 1);
  });

  it('stops waiting for a file that disappeared', async () => {
    const { files, gate, at } = fakeFolder();
    files.set('gone.tmp.stl', { size: 5, mtimeMs: 1 });
    gate.observe('gone.tmp.stl');
    files.delete('gone.tmp.stl');
    expect(await at(5000)).toEqual([]);
    expect(gate.pendingCount).toBe(0);
  });

  it('releases a file unchanged for longer than the settle time when first seen at the first check, once it can be opened', async () => {
    const { files, locked, gate, at } = fakeFolder();
    files.set('yesterday/jaw.stl', { size: 10, mtimeMs: 1_000 });
    files.set('yesterday/notes.pdf', { size: 4, mtimeMs: 2_000 });
    locked.add('yesterday/notes.pdf');
    await at(100_000);
    gate.observe('yesterday/jaw.stl', { size: 10, mtimeMs: 1_000 });
    gate.observe('yesterday/notes.pdf');
    expect(await at(100_001)).toEqual(['yesterday/jaw.stl']);
    locked.delete('yesterday/notes.pdf');
    expect(await at(100_002)).toEqual(['yesterday/jaw.stl', 'yesterday/notes.pdf']);
  });

  it('a file changed within the settle time when first seen still waits the whole settle time', async () => {
    const { files, gate, at } = fakeFolder();
    files.set('today/jaw.stl', { size: 10, mtimeMs: 99_000 });
    await at(100_000);
    gate.observe('today/jaw.stl', { size: 10, mtimeMs: 99_000 });
    expect(await at(100_001)).toEqual([]);
    expect(await at(101_900)).toEqual([]);
    expect(await at(102_000)).toEqual(['today/jaw.stl']);
  });

  it('an old file beside one still being written waits with its folder', async () => {
    const { files, gate, at } = fakeFolder();
    files.set('series/IM1', { size: 5, mtimeMs: 1_000 });
    files.set('series/IM2', { size: 5, mtimeMs: 99_500 });
    await at(100_000);
    gate.observe('series/IM1', { size: 5, mtimeMs: 1_000 });
    gate.observe('series/IM2', { size: 5, mtimeMs: 99_500 });
    expect(await at(100_001)).toEqual([]);
    expect((await at(102_000)).sort()).toEqual(['series/IM1', 'series/IM2']);
  });
});

describe('stability gate (real files)', () => {
  let directory: string | undefined;
  let gate: StabilityGate | undefined;

  afterEach(async () => {
    gate?.close();
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it('releases a series only after its last file received its last chunk', async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'stability-'));
    await mkdir(path.join(directory, 'series'));
    const released: Array<{ path: string; at: number; size: number }> = [];
    gate = new StabilityGate({
      root: directory,
      settleMs: 1000,
      checkEveryMs: 100,
      onReady: (relativePath, stat) => released.push({ path: relativePath, at: Date.now(), size: stat.size }),
    });
    const chunk = Buffer.alloc(64 * 1024, 7);
    const early = path.join(directory, 'series', 'IM1');
    const slow = path.join(directory, 'series', 'IM2');
    await writeFile(early, chunk);
    await writeFile(slow, chunk);
    gate.observe('series/IM1');
    gate.observe('series/IM2');

    let lastChunkAt = 0;
    for (let index = 1; index < 7; index += 1) {
      await sleep(500);
      if (index < 3) await appendFile(early, chunk);
      await appendFile(slow, chunk);
      lastChunkAt = Date.now();
    }
    expect(released).toEqual([]);

    const deadline = Date.now() + 5000;
    while (released.length < 2 && Date.now() < deadline) await sleep(50);
    await sleep(1500);

    expect(released.map((entry) => entry.path).sort()).toEqual(['series/IM1', 'series/IM2']);
    expect(released.find((entry) => entry.path === 'series/IM2')?.size).toBe(7 * chunk.length);
    expect(released.find((entry) => entry.path === 'series/IM1')?.size).toBe(3 * chunk.length);
    // The last check may stat the file a moment before `lastChunkAt` is taken; allow for that.
    for (const entry of released) expect(entry.at).toBeGreaterThanOrEqual(lastChunkAt + 900);
  });

  it('a file left alone since long before it is first seen is released at once, not a settle time later', async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'stability-'));
    const file = path.join(directory, 'scan.stl');
    await writeFile(file, Buffer.alloc(1024, 7));
    const anHourAgo = new Date(Date.now() - 3_600_000);
    await utimes(file, anHourAgo, anHourAgo);
    const settleMs = 5_000;
    let released: (value: number) => void;
    const releasedAt = new Promise<number>((resolve) => (released = resolve));
    gate = new StabilityGate({ root: directory, settleMs, onReady: () => released(Date.now()) });
    const observedAt = Date.now();
    gate.observe('scan.stl', await statIfPresent(file));
    const at = await Promise.race([releasedAt, sleep(settleMs * 2).then(() => Number.POSITIVE_INFINITY)]);
    expect(at - observedAt).toBeLessThan(settleMs / 2);
  });
});
