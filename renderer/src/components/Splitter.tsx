import { useRef, type KeyboardEvent, type PointerEvent } from 'react';

const KEY_STEP = 24;

/**
 * The handle on a column's right edge that makes it wider or narrower: dragged with the mouse, or
 * focused and moved with ←/→ (Home: narrowest, End: widest). A WAI-ARIA window splitter.
 */
export function Splitter({ label, width, min, max, onChange }: { label: string; width: number; min: number; max: number; onChange: (width: number) => void }) {
  const drag = useRef<{ startX: number; startWidth: number } | null>(null);
  const clamp = (value: number) => Math.round(Math.min(max, Math.max(min, value)));
  // The column's width as laid out (the screen's default for this window size, until one is chosen).
  const shown = (handle: HTMLElement) => handle.parentElement?.getBoundingClientRect().width || width;
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    const from = shown(event.currentTarget);
    const moves: Record<string, number> = { ArrowLeft: from - KEY_STEP, ArrowRight: from + KEY_STEP, Home: min, End: max };
    if (!(event.key in moves)) return;
    event.preventDefault();
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
    onChange(clamp(drag.current.startWidth + event.clientX - drag.current.startX));
  };
  const onPointerUp = () => {
    drag.current = null;
  };
  return (
    <div
      className="splitter"
      role="separator"
      aria-orientation="vertical"
      aria-label={label}
      aria-valuenow={width}
      aria-valuemin={min}
      aria-valuemax={max}
      tabIndex={0}
      title={`${label}: drag, or focus and use the arrow keys`}
      onKeyDown={onKeyDown}
      onPointerDown={onPointerDown}
      onPointerMove={onPointerMove}
      onPointerUp={onPointerUp}
      onPointerCancel={onPointerUp}
    />
  );
}
