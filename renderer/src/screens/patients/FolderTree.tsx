import { useLayoutEffect, useMemo, useState, type CSSProperties, type KeyboardEvent, type MouseEvent } from 'react';
import { visibleName } from '../../../../shared/names.js';
import { ancestorPaths, countFolders, visibleFolders, type FolderNode, type VisibleFolder } from '../../documents/tree.js';
import { Icon } from '../../components/Icon.js';
import { MiddleName } from '../../components/MiddleName.js';
import { useVirtualWindow } from '../../components/useVirtualWindow.js';
import { formatCount } from '../../format.js';

const ROW_HEIGHT = 32;
/** Rows rendered above and below the visible window, so a quick scroll shows no blank band. */
const OVERSCAN = 8;

/**
 * How far a level is indented: a full step for the first levels, then a small one, so a folder
 * twelve levels down still has room for its name in the narrow column (its whole path is the tooltip).
 */
export function treeIndent(level: number): number {
  const depth = level - 1;
  return 4 + Math.min(depth, 4) * 14 + Math.max(depth - 4, 0) * 4;
}

/** Room a row keeps beside its indent for the chevron, the icon, a readable name and the count. */
const ROW_MIN_CONTENT = 150;

/** The folders to open so `path` shows, added to `expanded` (the same set when nothing changes). */
function withAncestors(expanded: ReadonlySet<string>, path: string): ReadonlySet<string> {
  const missing = ancestorPaths(path).filter((ancestor) => !expanded.has(ancestor));
  return missing.length === 0 ? expanded : new Set([...expanded, ...missing]);
}

/**
 * The patient's folders as a WAI-ARIA tree. It opens on the root and its direct children; the way
 * to the selected folder is opened for it. Only open folders' children exist as rows, and only the
 * rows in view are rendered (one fixed row height, like the file list), so a folder with hundreds
 * of visits opens as fast as one with three.
 *
 * Keys (roving focus on the rows): ↑/↓ move, Home/End go to the first/last row, → opens a folder
 * or moves into it, ← closes it or moves to its parent, Enter or Space shows its files (and opens
 * it; on the folder already shown, closes or opens it), a letter jumps to the next folder with
 * that initial. The mouse: a click shows the folder's files and opens it, the chevron opens or
 * closes without selecting.
 */
export function FolderTree({ root, selectedPath, onSelect, loading }: { root: FolderNode; selectedPath: string; onSelect: (path: string) => void; loading: boolean }) {
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(() => withAncestors(new Set(['/']), selectedPath));
  // A new selection (from a click here or from elsewhere) opens the way to it, in the same render.
  const [revealed, setRevealed] = useState(selectedPath);
  if (revealed !== selectedPath) {
    setRevealed(selectedPath);
    setExpanded((current) => withAncestors(current, selectedPath));
  }

  const rows = useMemo(() => visibleFolders(root, expanded), [root, expanded]);
  const indexOf = useMemo(() => new Map(rows.map((row, index) => [row.node.path, index])), [rows]);
  const folderCount = useMemo(() => countFolders(root), [root]);
  const deepestLevel = useMemo(() => rows.reduce((deepest, row) => Math.max(deepest, row.level), 1), [rows]);

  // The one row in the tab order: the last focused one while it is shown, else the selected one.
  const [focusedPath, setFocusedPath] = useState<string | null>(null);
  const tabIndex = indexOf.get(focusedPath ?? '') ?? indexOf.get(selectedPath) ?? 0;
  // Bumped by a keyboard move: the render it causes brings the focused row into view and focuses it.
  const [focusRequest, setFocusRequest] = useState(0);

  const { viewportRef, firstVisible, viewportHeight, onScroll } = useVirtualWindow(ROW_HEIGHT);

  // After a keyboard move: bring the row into view and give it the focus (it is always rendered).
  useLayoutEffect(() => {
    if (focusRequest === 0) return;
    const viewport = viewportRef.current;
    const row = rows[tabIndex];
    if (!viewport || !row) return;
    const top = tabIndex * ROW_HEIGHT;
    if (top < viewport.scrollTop) viewport.scrollTop = top;
    else if (top + ROW_HEIGHT > viewport.scrollTop + viewport.clientHeight) viewport.scrollTop = top + ROW_HEIGHT - viewport.clientHeight;
    // Sideways too, so a deep folder's name is in view (the tree scrolls when rows are wider than the column).
    const indent = treeIndent(row.level);
    if (indent < viewport.scrollLeft || indent + ROW_MIN_CONTENT > viewport.scrollLeft + viewport.clientWidth) viewport.scrollLeft = Math.max(0, indent + ROW_MIN_CONTENT - viewport.clientWidth);
    viewport.querySelector<HTMLElement>(`[role="treeitem"][data-path="${CSS.escape(row.node.path)}"]`)?.focus({ preventScroll: true });
  }, [focusRequest]);

  const focusRow = (index: number) => {
    const row = rows[Math.max(0, Math.min(rows.length - 1, index))];
    if (!row) return;
    setFocusedPath(row.node.path);
    setFocusRequest((count) => count + 1);
  };

  const setOpen = (path: string, open: boolean) =>
    setExpanded((current) => {
      if (current.has(path) === open) return current;
      const next = new Set(current);
      if (open) next.add(path);
      else next.delete(path);
      return next;
    });

  const activate = (row: VisibleFolder) => {
    if (row.node.path !== selectedPath) {
      onSelect(row.node.path);
      if (row.node.children.length > 0) setOpen(row.node.path, true);
    } else if (row.node.children.length > 0) {
      setOpen(row.node.path, !row.expanded);
    }
  };

  const onKeyDown = (event: KeyboardEvent<HTMLUListElement>) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const path = (event.target as HTMLElement).closest<HTMLElement>('[role="treeitem"]')?.dataset.path;
    const index = path === undefined ? -1 : (indexOf.get(path) ?? -1);
    const row = rows[index];
    if (!row) return;
    const hasChildren = row.node.children.length > 0;
    if (event.key === 'ArrowDown') focusRow(index + 1);
    else if (event.key === 'ArrowUp') focusRow(index - 1);
    else if (event.key === 'Home') focusRow(0);
    else if (event.key === 'End') focusRow(rows.length - 1);
    else if (event.key === 'ArrowRight') {
      if (hasChildren && !row.expanded) setOpen(row.node.path, true);
      else if (row.expanded) focusRow(index + 1);
    } else if (event.key === 'ArrowLeft') {
      if (row.expanded) setOpen(row.node.path, false);
      else if (row.parent !== null) focusRow(indexOf.get(row.parent) ?? 0);
    } else if (event.key === 'Enter' || event.key === ' ') activate(row);
    else if (event.key.length === 1 && /\S/.test(event.key)) {
      const initial = event.key.toLocaleLowerCase();
      const match = [...rows.slice(index + 1), ...rows.slice(0, index + 1)].find((candidate) => candidate.node.name.toLocaleLowerCase().startsWith(initial));
      if (!match) return;
      focusRow(indexOf.get(match.node.path)!);
    } else return;
    event.preventDefault();
  };

  const onToggleClick = (event: MouseEvent, row: VisibleFolder) => {
    event.stopPropagation();
    setFocusedPath(row.node.path);
    setOpen(row.node.path, !row.expanded);
  };

  const first = Math.max(0, firstVisible - OVERSCAN);
  const last = Math.min(rows.length, firstVisible + Math.ceil(viewportHeight / ROW_HEIGHT) + 1 + OVERSCAN);
  const shown: number[] = [];
  // The focusable row stays in the DOM even when scrolled away, so Tab and the focus never get lost.
  if (tabIndex < first) shown.push(tabIndex);
  for (let index = first; index < last; index += 1) shown.push(index);
  if (tabIndex >= last && tabIndex < rows.length) shown.push(tabIndex);

  return (
    <div ref={viewportRef} className="folder-tree" data-folder-count={folderCount} onScroll={onScroll}>
      <ul role="tree" aria-label="Folders" aria-busy={loading} onKeyDown={onKeyDown} style={{ height: rows.length * ROW_HEIGHT, minWidth: treeIndent(deepestLevel) + ROW_MIN_CONTENT }}>
        {shown.map((index) => {
          const row = rows[index]!;
          const { node, level } = row;
          const hasChildren = node.children.length > 0;
          const selected = node.path === selectedPath;
          const indent = treeIndent(level);
          return (
            <li
              key={node.path}
              role="treeitem"
              aria-level={level}
              aria-posinset={row.position}
              aria-setsize={row.siblings}
              aria-expanded={hasChildren ? row.expanded : undefined}
              aria-selected={selected}
              className={selected ? 'tree-label selected' : 'tree-label'}
              data-path={node.path}
              tabIndex={index === tabIndex ? 0 : -1}
              style={{ transform: `translateY(${index * ROW_HEIGHT}px)`, paddingLeft: indent, '--row-min-width': `${indent + ROW_MIN_CONTENT}px` } as CSSProperties}
              title={visibleName(node.path)}
              onFocus={(event) => {
                if (event.target === event.currentTarget) setFocusedPath(node.path);
              }}
              onClick={(event) => {
                // The second click of a double click would undo the first (open, then close).
                if (event.detail <= 1) activate(row);
              }}
            >
              {hasChildren ? (
                <span className="tree-twisty" onClick={(event) => onToggleClick(event, row)} title={row.expanded ? 'Collapse' : 'Expand'} aria-hidden="true">
                  <Icon name={row.expanded ? 'chevronDown' : 'chevronRight'} size={14} />
                </span>
              ) : (
                <span className="tree-twisty" aria-hidden="true" />
              )}
              <Icon name={level === 1 ? 'patients' : row.expanded ? 'folderOpen' : 'folder'} size={16} />
              {/* The name comes from what is shown (a spoken name that differs from the visible one trips up speech input): the folder and its count, said in words. */}
              <span className="tree-name">
                <MiddleName name={node.name} />
              </span>
              <span className="visually-hidden">, {formatCount(node.totalCount)} {node.totalCount === 1 ? 'file' : 'files'}</span>
              <span className="tree-count" aria-hidden="true">
                {formatCount(node.totalCount)}
              </span>
            </li>
          );
        })}
      </ul>
    </div>
  );
}
