import { useRef, type KeyboardEvent, type PointerEvent } from 'react';

const KEY_STEP = 24;

export interface SplitterProps {
  label: string;
  width: number;
  min: number;
  max: number;
  onChange: (width: number) => void;
  /** Which edge of its column the handle sits on: the right (a column on the left) or the left (a panel on the right). */
  edge?: 'right' | 'left';
  /** The column is folded away to a narrow strip; Enter on the handle (or a drag, or an arrow key that widens) brings it back. */
  collapsed?: boolean;
  onToggleCollapsed?: () => void;
  /** The id of the column it sizes (measured for its width as laid out; else the handle's parent is). */
  controls?: string;
}

/**
 * The handle on a column's edge that makes it wider or narrower: dragged with the mouse, or focused
 * and moved with ←/→ (Home: narrowest, End: widest; Enter folds the column away and back). A
 * WAI-ARIA window splitter: its value is the column's width in CSS pixels, 0 while folded.
 */
export function Splitter({ label, width, min, max, onChange, edge = 'right', collapsed = false, onToggleCollapsed, controls }: SplitterProps) {
  const drag = useRef<{ startX: number; startWidth: number } | null>(null);
  const clamp = (value: number) => Math.round(Math.min(max, Math.max(min, value)));
  // Moving the handle right widens a column on the left and narrows a panel on the right.
  const sign = edge === 'right' ? 1 : -1;
  // The column's width as laid out (the screen's default for this window size, until one is chosen).
  const shown = (handle: HTMLElement) => {
    if (collapsed) return min;
    const column = (controls ? handle.ownerDocument.getElementById(controls) : null) ?? handle.parentElement;
    return column?.getBoundingClientRect().width || width;
  };
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    if (event.key === 'Enter' && onToggleCollapsed) {
      event.preventDefault();
      onToggleCollapsed();
      return;
    }
    const from = shown(event.currentTarget);
    const moves: Record<string, number> = { ArrowLeft: from - sign * KEY_STEP, ArrowRight: from + sign * KEY_STEP, Home: min, End: max };
    if (!(event.key in moves)) return;
    event.preventDefault();
    // A folded column comes back at its narrowest on a key that widens it; narrowing it more does nothing.
    if (collapsed) {
      if (moves[event.key]! > min || event.key === 'End') onChange(clamp(event.key === 'End' ? max : min));
      return;
    }
    onChange(clamp(moves[event.key]!));
  };
  const onPointerDown = (event: PointerEvent<HTMLDivElement>) => {
    if (event.button !== 0) return;
    event.preventDefault();
    event.currentTarget.setPointerCapture(event.pointerId);
    drag.current = { startX: event.clientX, startWidth: shown(event.currentTarget) };
  };
  const onPointerMove = (event: PointerEvent<HTMLDivElement>) => {
    if (!drag.current) return;
    const moved = sign * (event.clientX - drag.current.startX);
    // A folded column stays folded until the handle is really pulled (a click is no drag).
    if (collapsed && moved < 8) return;
    onChange(clamp(drag.current.startWidth + moved));
  };
  const onPointerUp = () => {
    drag.current = null;
  };
  const keys = onToggleCollapsed ? 'drag, or focus and use the arrow keys; Enter hides or shows it' : 'drag, or focus and use the arrow keys';
  return (
    <div
      className="splitter"
      role="separator"
      aria-orientation="vertical"
      aria-label={label}
      aria-valuenow={collapsed ? 0 : width}
      aria-valuemin={onToggleCollapsed ? 0 : min}
      aria-valuemax={max}
      aria-controls={controls}
      tabIndex={0}
      title={`${label}: ${keys}`}
      onKeyDown={onKeyDown}
      onPointerDown={onPointerDown}
      onPointerMove={onPointerMove}
      onPointerUp={onPointerUp}
      onPointerCancel={onPointerUp}
    />
  );
}
