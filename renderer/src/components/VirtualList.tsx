import { useCallback, type CSSProperties, type KeyboardEvent, type ReactNode } from 'react';
import { useVirtualWindow } from './useVirtualWindow.js';

export interface VirtualListProps<T> {
  items: readonly T[];
  rowHeight: number;
  /** Rows rendered above and below the visible window, so fast scrolling shows no blank band. */
  overscan?: number;
  label: string;
  getKey: (item: T, index: number) => string | number;
  renderRow: (item: T, index: number, active: boolean) => ReactNode;
  onActivate?: (item: T, index: number) => void;
  activeIndex?: number;
  onActiveIndexChange?: (index: number) => void;
  className?: string;
  style?: CSSProperties;
  /**
   * 'listbox' (default): rows are options with one active row, moved by the keys. 'list': rows are
   * plain list items that may hold buttons of their own (an option may not); the keys scroll.
   */
  kind?: 'listbox' | 'list';
}

/**
 * Renders only the rows in view (plus overscan) inside one tall spacer, so 10,000 files scroll
 * like 30. Rows have a fixed height: that keeps scroll maths exact and layout work constant.
 * Arrow keys, Page Up/Down, Home and End move the active row; Enter activates it.
 */
export function VirtualList<T>({ items, rowHeight, overscan = 4, label, getKey, renderRow, onActivate, activeIndex = -1, onActiveIndexChange, className, style, kind = 'listbox' }: VirtualListProps<T>) {
  const { viewportRef, firstVisible, viewportHeight, onScroll } = useVirtualWindow(rowHeight);

  const scrollIntoView = useCallback(
    (index: number) => {
      const viewport = viewportRef.current;
      if (!viewport) return;
      const top = index * rowHeight;
      if (top < viewport.scrollTop) viewport.scrollTop = top;
      else if (top + rowHeight > viewport.scrollTop + viewport.clientHeight) viewport.scrollTop = top + rowHeight - viewport.clientHeight;
    },
    [rowHeight],
  );

  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    if (items.length === 0 || kind === 'list') return;
    const page = Math.max(1, Math.floor(viewportHeight / rowHeight) - 1);
    const moves: Record<string, number> = { ArrowDown: activeIndex + 1, ArrowUp: activeIndex - 1, PageDown: activeIndex + page, PageUp: activeIndex - page, Home: 0, End: items.length - 1 };
    if (event.key in moves) {
      event.preventDefault();
      const next = Math.min(items.length - 1, Math.max(0, moves[event.key]!));
      onActiveIndexChange?.(next);
      scrollIntoView(next);
    } else if (event.key === 'Enter' && activeIndex >= 0 && activeIndex < items.length) {
      event.preventDefault();
      onActivate?.(items[activeIndex]!, activeIndex);
    }
  };

  const first = Math.max(0, firstVisible - overscan);
  const last = Math.min(items.length, firstVisible + Math.ceil(viewportHeight / rowHeight) + 1 + overscan);
  const rows: ReactNode[] = [];
  for (let index = first; index < last; index += 1) {
    const item = items[index]!;
    rows.push(
      <div
        key={getKey(item, index)}
        id={`${label.replace(/\W+/g, '-')}-row-${index}`}
        className={index === activeIndex ? 'virtual-row active' : 'virtual-row'}
        role={kind === 'list' ? 'listitem' : 'option'}
        aria-selected={kind === 'list' ? undefined : index === activeIndex}
        aria-posinset={index + 1}
        aria-setsize={items.length}
        style={{ transform: `translateY(${index * rowHeight}px)`, height: rowHeight }}
        onClick={() => {
          onActiveIndexChange?.(index);
          onActivate?.(item, index);
        }}
      >
        {renderRow(item, index, index === activeIndex)}
      </div>,
    );
  }

  return (
    <div
      ref={viewportRef}
      className={className ? `virtual-viewport ${className}` : 'virtual-viewport'}
      style={style}
      onScroll={onScroll}
      onKeyDown={onKeyDown}
      tabIndex={0}
      role={kind}
      aria-label={label}
      aria-activedescendant={kind === 'list' ? undefined : activeIndex >= first && activeIndex < last ? `${label.replace(/\W+/g, '-')}-row-${activeIndex}` : undefined}
    >
      <div className="virtual-spacer" style={{ height: items.length * rowHeight }}>
        {rows}
      </div>
    </div>
  );
}
