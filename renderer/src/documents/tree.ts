/**
 * The folder tree of a patient, built only from the documents' paths (SPEC §4.3 rule 3): there is
 * no folder resource, so a folder exists exactly when some document lies in it or below it.
 * Paths are compared as the server compares them (case folded, DESIGN §3): `/Scans` and `/scans`
 * are one folder, shown with the spelling met first, so a folder's count is what a search of it finds.
 */
import { foldKey } from '../../../shared/names.js';
import type { DocumentDto } from '../../../shared/schemas.js';

export interface FolderNode {
  name: string;
  path: string;
  /** Documents directly in this folder. */
  fileCount: number;
  /** Documents in this folder and every folder below. */
  totalCount: number;
  children: FolderNode[];
}

export function createRootFolder(): FolderNode {
  return { name: 'All files', path: '/', fileCount: 0, totalCount: 0, children: [] };
}

/**
 * Where each path of a tree lies: by the path as spelled (most documents share a spelling, so most
 * lookups stop there) and by its folded key.
 */
export interface FolderIndex {
  bySpelling: Map<string, FolderNode>;
  byKey: Map<string, FolderNode>;
}

/** Adds documents to a tree in place (pages arrive one at a time); call sortFolderTree when done. */
export function addToFolderTree(root: FolderNode, documents: readonly Pick<DocumentDto, 'path'>[], index: FolderIndex = { bySpelling: new Map(), byKey: new Map() }): FolderIndex {
  index.byKey.set('/', root);
  index.bySpelling.set('/', root);
  for (const document of documents) {
    const node = folderFor(root, document.path, index);
    node.fileCount += 1;
    // folderFor created every ancestor under the node's own spelling, so each lookup finds its node.
    for (let path: string | null = node.path; path !== null; path = parentPath(path)) index.bySpelling.get(path)!.totalCount += 1;
  }
  return index;
}

function folderFor(root: FolderNode, path: string, index: FolderIndex): FolderNode {
  const spelled = index.bySpelling.get(path);
  if (spelled) return spelled;
  const key = foldKey(path);
  let node = index.byKey.get(key);
  if (!node) {
    const parent = parentPath(path);
    const parentNode = parent === null || parent === '/' ? root : folderFor(root, parent, index);
    const name = path.slice(path.lastIndexOf('/') + 1);
    // The path is the parent's spelling plus this name, so a node's ancestors are nodes of the tree.
    node = { name, path: parentNode === root ? `/${name}` : `${parentNode.path}/${name}`, fileCount: 0, totalCount: 0, children: [] };
    parentNode.children.push(node);
    index.byKey.set(key, node);
    index.bySpelling.set(node.path, node);
  }
  index.bySpelling.set(path, node);
  return node;
}

export function parentPath(path: string): string | null {
  if (path === '/' || path === '') return null;
  const cut = path.lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

export function sortFolderTree(node: FolderNode): FolderNode {
  node.children.sort((a, b) => collator.compare(a.name, b.name));
  node.children.forEach(sortFolderTree);
  return node;
}

export function buildFolderTree(documents: readonly Pick<DocumentDto, 'path'>[]): FolderNode {
  const root = createRootFolder();
  addToFolderTree(root, documents);
  return sortFolderTree(root);
}

/** Every ancestor of a path, root first: the folders to expand so the path is visible. */
export function ancestorPaths(path: string): string[] {
  const ancestors: string[] = [];
  for (let parent = parentPath(path); parent !== null; parent = parentPath(parent)) ancestors.unshift(parent);
  return ancestors;
}

/** How many folders a tree holds below its root (the root, "All files", is not a folder of the record). */
export function countFolders(root: FolderNode): number {
  let count = 0;
  const stack = [...root.children];
  for (let node = stack.pop(); node; node = stack.pop()) {
    count += 1;
    stack.push(...node.children);
  }
  return count;
}

/** One row of the tree as shown: a folder whose every ancestor is expanded. */
export interface VisibleFolder {
  node: FolderNode;
  /** 1 for the root (aria-level). */
  level: number;
  parent: string | null;
  /** 1-based place among its siblings, and how many siblings (aria-posinset, aria-setsize). */
  position: number;
  siblings: number;
  expanded: boolean;
}

/**
 * The rows of the tree, in order, with `expanded` folders open: the walk goes only into open
 * folders, so its cost is the rows shown, never the whole tree (a closed folder with 500 visits
 * below it costs one row).
 */
export function visibleFolders(root: FolderNode, expanded: ReadonlySet<string>): VisibleFolder[] {
  const rows: VisibleFolder[] = [];
  const visit = (node: FolderNode, level: number, parent: string | null, position: number, siblings: number) => {
    const open = node.children.length > 0 && expanded.has(node.path);
    rows.push({ node, level, parent, position, siblings, expanded: open });
    if (open) node.children.forEach((child, index) => visit(child, level + 1, node.path, index + 1, node.children.length));
  };
  visit(root, 1, null, 1, 1);
  return rows;
}
