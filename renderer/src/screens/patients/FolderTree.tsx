import { useState, type KeyboardEvent } from 'react';
import type { FolderNode } from '../../documents/tree.js';
import { Icon } from '../../components/Icon.js';
import { formatCount } from '../../format.js';

/** A WAI-ARIA tree: arrows move, Right/Left open and close, Enter or Space selects. */
export function FolderTree({ root, selectedPath, onSelect, loading }: { root: FolderNode; selectedPath: string; onSelect: (path: string) => void; loading: boolean }) {
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const toggle = (path: string, open?: boolean) =>
    setCollapsed((current) => {
      const next = new Set(current);
      const shouldOpen = open ?? next.has(path);
      if (shouldOpen) next.delete(path);
      else next.add(path);
      return next;
    });

  const onKeyDown = (event: KeyboardEvent<HTMLUListElement>) => {
    const items = [...event.currentTarget.querySelectorAll<HTMLElement>('[role="treeitem"] > .tree-label')];
    const index = items.indexOf(document.activeElement as HTMLElement);
    const focus = (target: number) => items[Math.max(0, Math.min(items.length - 1, target))]?.focus();
    const path = (document.activeElement as HTMLElement | null)?.dataset.path;
    if (event.key === 'ArrowDown') focus(index + 1);
    else if (event.key === 'ArrowUp') focus(index - 1);
    else if (event.key === 'Home') focus(0);
    else if (event.key === 'End') focus(items.length - 1);
    else if (event.key === 'ArrowRight' && path) toggle(path, true);
    else if (event.key === 'ArrowLeft' && path) toggle(path, false);
    else return;
    event.preventDefault();
  };

  return (
    <nav className="folder-tree" aria-label="Folders" aria-busy={loading}>
      <ul role="tree" aria-label="Folders" onKeyDown={onKeyDown}>
        <TreeItem node={root} depth={0} selectedPath={selectedPath} onSelect={onSelect} collapsed={collapsed} onToggle={toggle} />
      </ul>
    </nav>
  );
}

function TreeItem({ node, depth, selectedPath, onSelect, collapsed, onToggle }: { node: FolderNode; depth: number; selectedPath: string; onSelect: (path: string) => void; collapsed: Set<string>; onToggle: (path: string) => void }) {
  const open = !collapsed.has(node.path);
  const hasChildren = node.children.length > 0;
  const selected = node.path === selectedPath;
  return (
    <li role="treeitem" aria-expanded={hasChildren ? open : undefined} aria-selected={selected} aria-level={depth + 1}>
      <div
        className={selected ? 'tree-label selected' : 'tree-label'}
        style={{ paddingLeft: 8 + depth * 16 }}
        tabIndex={selected ? 0 : -1}
        data-path={node.path}
        onClick={() => onSelect(node.path)}
        onKeyDown={(event) => {
          if (event.key === 'Enter' || event.key === ' ') {
            event.preventDefault();
            onSelect(node.path);
          }
        }}
      >
        {hasChildren ? (
          <span
            className="tree-twisty"
            onClick={(event) => {
              event.stopPropagation();
              onToggle(node.path);
            }}
            aria-hidden="true"
          >
            <Icon name={open ? 'chevronDown' : 'chevronRight'} size={14} />
          </span>
        ) : (
          <span className="tree-twisty" aria-hidden="true" />
        )}
        <Icon name={depth === 0 ? 'patients' : open && hasChildren ? 'folderOpen' : 'folder'} size={16} />
        <span className="truncate tree-name" title={node.path}>{node.name}</span>
        <span className="tree-count">{formatCount(node.totalCount)}</span>
      </div>
      {hasChildren && open ? (
        <ul role="group">
          {node.children.map((child) => (
            <TreeItem key={child.path} node={child} depth={depth + 1} selectedPath={selectedPath} onSelect={onSelect} collapsed={collapsed} onToggle={onToggle} />
          ))}
        </ul>
      ) : null}
    </li>
  );
}
