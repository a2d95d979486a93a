import { useRef, type KeyboardEvent, type PointerEvent } from 'react';

const KEY_STEP = 24;

/**
 * The handle on a column's right edge that makes it wider or narrower: dragged with the mouse, or
 * focused and moved with ←/→ (Home: narrowest, End: widest). A WAI-ARIA window splitter.
 */
export function Splitter({ label, width, min, max, onChange }: { label: string; width: number; min: number; max: number; onChange: (width: number) => void }) {
  const drag = useRef<{ startX: number; startWidth: number } | null>(null);
  const clamp = (value: number) => Math.round(Math.min(max, Math.max(min, value)));
  const onKeyDown = (event: KeyboardEvent) => {
    const moves: Record<string, number> = { ArrowLeft: width - KEY_STEP, ArrowRight: width + KEY_STEP, Home: min, End: max };
    if (!(event.key in moves)) return;
    event.preventDefault();
    onChange(clamp(moves[event.key]!));
  };
  const onPointerDown = (event: PointerEvent<HTMLDivElement>) => {
    if (event.button !== 0) return;
    event.preventDefault();
    event.currentTarget.setPointerCapture(event.pointerId);
    drag.current = { startX: event.clientX, startWidth: width };
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
