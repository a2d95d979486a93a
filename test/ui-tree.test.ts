// The patient browser's folder tree model (renderer/src/documents/tree.ts): which rows the tree shows for
// which open folders. The tree component renders exactly these rows (the ones in view of them).
import { describe, expect, it } from 'vitest';
import { buildFolderTree, countFolders, visibleFolders } from '../renderer/src/documents/tree.js';

const documents = [
  { path: '/' },
  { path: '/letters' },
  ...Array.from({ length: 300 }, (_, visit) => ({ path: `/scans/visit ${visit + 1}/photos` })),
];

describe('the folder tree as shown', () => {
  const root = buildFolderTree(documents);

  it('counts every folder below the root', () => {
    expect(countFolders(root)).toBe(2 + 300 * 2);
  });

  it('shows only open folders’ children, with their ARIA level, position and set size', () => {
    const rows = visibleFolders(root, new Set(['/']));
    expect(rows.map((row) => [row.node.path, row.level, row.position, row.siblings, row.expanded, row.parent])).toEqual([
      ['/', 1, 1, 1, true, null],
      ['/letters', 2, 1, 2, false, '/'],
      ['/scans', 2, 2, 2, false, '/'],
    ]);
  });

  it('opens a folder of hundreds of visits one level deep, in natural order', () => {
    const rows = visibleFolders(root, new Set(['/', '/scans']));
    expect(rows).toHaveLength(3 + 300);
    expect(rows.slice(3, 6).map((row) => row.node.name)).toEqual(['visit 1', 'visit 2', 'visit 3']);
    expect(rows.at(-1)).toMatchObject({ level: 3, position: 300, siblings: 300, expanded: false, parent: '/scans' });
  });

  it('ignores an open folder whose parent is closed, and a leaf marked open', () => {
    expect(visibleFolders(root, new Set(['/', '/scans/visit 1', '/letters'])).map((row) => [row.node.path, row.expanded])).toEqual([
      ['/', true],
      ['/letters', false],
      ['/scans', false],
    ]);
  });
});

describe('folders that differ only in case', () => {
  // The server compares paths case folded (DESIGN §3): a search of '/Scans' also finds '/scans/…',
  // so the tree shows one folder, with the count that search finds, under the spelling met first.
  const root = buildFolderTree([{ path: '/Scans/Visit 1' }, { path: '/scans/visit 1' }, { path: '/SCANS' }, { path: '/ΟΔΟΣ' }, { path: '/οδος' }]);

  it('is one folder, spelled as first met, counting every document of every spelling', () => {
    expect(root.children.map((node) => [node.path, node.fileCount, node.totalCount])).toEqual([
      ['/Scans', 1, 3],
      ['/ΟΔΟΣ', 2, 2],
    ]);
    expect(root.children[0]!.children.map((node) => [node.path, node.fileCount, node.totalCount])).toEqual([['/Scans/Visit 1', 2, 2]]);
    expect(root.totalCount).toBe(5);
  });

  it('opens under the shown spelling', () => {
    expect(visibleFolders(root, new Set(['/', '/Scans'])).map((row) => row.node.path)).toEqual(['/', '/Scans', '/Scans/Visit 1', '/ΟΔΟΣ']);
  });
});
