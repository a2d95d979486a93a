import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import type * as FsPromises from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createIgnoreMatcher } from './ignore.js';
import { watchFolder } from './watcher.js';
import type { FileStat } from './stability.js';
import type { FolderWatcher } from './watcher.js';

/** Paths whose lstat fails as an unreadable entry does (EACCES cannot be staged as root). */
const unreadable = new Set<string>();
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof FsPromises>();
  const lstat = ((target: string, ...rest: unknown[]) => {
    if (unreadable.has(target)) return Promise.reject(Object.assign(new Error(`EACCES: permission denied, lstat '${target}'`), { code: 'EACCES' }));
    return (actual.lstat as (...args: unknown[]) => unknown)(target, ...rest);
  }) as typeof actual.lstat;
  const opendir = ((target: string, ...rest: unknown[]) => {
    if (unreadable.has(target)) return Promise.reject(Object.assign(new Error(`EACCES: permission denied, opendir '${target}'`), { code: 'EACCES' }));
    return (actual.opendir as (...args: unknown[]) => unknown)(target, ...rest);
  }) as typeof actual.opendir;
  return { ...actual, lstat, opendir };
});

async function until(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

describe('folder watcher', () => {
  let folder: string;
  let watcher: FolderWatcher | undefined;
  let candidates: string[];
  let sizes: Map<string, number>;
  let removed: string[];
  let errors: unknown[];

  const start = (known?: Array<[string, FileStat]>) =>
    watchFolder({
      folder,
      isIgnored: createIgnoreMatcher(['*.bak']),
      onCandidate: (relativePath, stat) => {
        candidates.push(relativePath);
        sizes.set(relativePath, stat.size);
      },
      onRemoved: (relativePath) => removed.push(relativePath),
      onError: (error) => errors.push(error),
      rescanMinutes: 0,
      ...(known ? { known } : {}),
    });

  beforeEach(async () => {
    folder = await mkdtemp(path.join(tmpdir(), 'watcher-'));
    candidates = [];
    sizes = new Map();
    removed = [];
    errors = [];
  });

  afterEach(async () => {
    await watcher?.close();
    watcher = undefined;
    await rm(folder, { recursive: true, force: true });
    expect(errors).toEqual([]);
  });

  it('reports every file already in the folder, nested ones too, but not ignored ones', async () => {
    await mkdir(path.join(folder, 'case 7', 'series'), { recursive: true });
    await mkdir(path.join(folder, '.cache'));
    await writeFile(path.join(folder, 'case 7', 'jaw.stl'), 'solid');
    await writeFile(path.join(folder, 'case 7', 'series', 'IM1'), 'dicom');
    await writeFile(path.join(folder, 'case 7', '~$notes.docx'), 'lock');
    await writeFile(path.join(folder, 'old.bak'), 'backup');
    await writeFile(path.join(folder, '.cache', 'thumb.png'), 'png');
    await writeFile(path.join(folder, 'Ro\u0308ntgen.pdf'), 'pdf');

    watcher = await start();
    // A decomposed name is reported as on disk: the file is opened by it (the server gets NFC).
    expect(candidates.sort()).toEqual(['Ro\u0308ntgen.pdf', 'case 7/jaw.stl', 'case 7/series/IM1']);
  });

  it('reports new, changed and deleted files while running, and nothing for an unchanged rescan', async () => {
    watcher = await start();
    await mkdir(path.join(folder, 'new case'));
    await writeFile(path.join(folder, 'new case', 'upper.stl'), 'solid');
    await writeFile(path.join(folder, 'scan.tmp'), 'partial');
    await until(() => candidates.includes('new case/upper.stl'), 'the new file');

    const longer = 'solid, now longer';
    await writeFile(path.join(folder, 'new case', 'upper.stl'), longer);
    await until(() => candidates.filter((entry) => entry === 'new case/upper.stl').length >= 2, 'the change');
    // writeFile truncates, then writes; the OS may report only the truncation. The scan is the
    // truth: after it, the final size has been reported, by the watcher or by the scan.
    await sleep(100);
    await watcher.rescan();
    expect(sizes.get('new case/upper.stl')).toBe(longer.length);

    const before = candidates.length;
    await watcher.rescan();
    expect(candidates.length).toBe(before);

    await rm(path.join(folder, 'new case'), { recursive: true });
    await until(() => removed.includes('new case/upper.stl'), 'the removal');
    expect(candidates).not.toContain('scan.tmp');
    expect(removed).toEqual(['new case/upper.stl']);
  });

  it('on start, reports what changed or vanished while nobody was watching', async () => {
    await writeFile(path.join(folder, 'same.stl'), 'same');
    await writeFile(path.join(folder, 'edited.stl'), 'edited later');
    const same = await stat(path.join(folder, 'same.stl'));
    const known: Array<[string, FileStat]> = [
      ['same.stl', { size: same.size, mtimeMs: same.mtimeMs }],
      ['edited.stl', { size: 3, mtimeMs: 1 }],
      ['deleted.stl', { size: 3, mtimeMs: 1 }],
    ];

    watcher = await start(known);
    expect(candidates).toEqual(['edited.stl']);
    expect(removed).toEqual(['deleted.stl']);
  });

  it('tells of an entry it cannot look at and still reports the other files changed at the same moment', async () => {
    watcher = await start();
    const locked = path.join(folder, 'a-locked.stl');
    unreadable.add(locked);
    try {
      await writeFile(locked, 'locked');
      await writeFile(path.join(folder, 'b.stl'), 'b');
      await writeFile(path.join(folder, 'c.stl'), 'c');
      await until(() => candidates.includes('b.stl') && candidates.includes('c.stl'), 'the files hinted with the unreadable one', 2000);
      expect(errors).toEqual([expect.objectContaining({ code: 'EACCES' })]);
      errors = [];
    } finally {
      unreadable.delete(locked);
    }
  });

  it('takes a sync folder it may no longer read for a missing one: no file is reported removed', async () => {
    await writeFile(path.join(folder, 'jaw.stl'), 'solid');
    const gone: unknown[] = [];
    watcher = await watchFolder({ folder, isIgnored: () => false, onCandidate: () => undefined, onRemoved: (relativePath) => removed.push(relativePath), onError: (error) => errors.push(error), onFolderGone: (error) => gone.push(error), rescanMinutes: 0 });
    unreadable.add(folder);
    try {
      await watcher.rescan();
      expect(gone).toEqual([expect.objectContaining({ code: 'EACCES' })]);
      expect(removed).toEqual([]);
    } finally {
      unreadable.delete(folder);
    }
  });

  it('stops reporting once closed', async () => {
    watcher = await start();
    await watcher.close();
    await writeFile(path.join(folder, 'after.stl'), 'late');
    await sleep(300);
    expect(candidates).toEqual([]);
  });
});
