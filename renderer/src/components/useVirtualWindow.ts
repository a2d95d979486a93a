import { useCallback, useLayoutEffect, useRef, useState } from 'react';

/**
 * The window of fixed-height rows a scrolling viewport shows: its first row and its height,
 * kept current on scroll and resize. The first row, not the pixel offset, is state: scrolling
 * within a row renders nothing; crossing a row renders once, in the same frame as the scroll
 * (Chrome dispatches scroll events once per frame, just before rAF callbacks).
 */
export function useVirtualWindow(rowHeight: number) {
  const viewportRef = useRef<HTMLDivElement>(null);
  const [firstVisible, setFirstVisible] = useState(0);
  const [viewportHeight, setViewportHeight] = useState(600);

  useLayoutEffect(() => {
    const viewport = viewportRef.current;
    if (!viewport) return;
    setViewportHeight(viewport.clientHeight);
    const observer = new ResizeObserver(() => setViewportHeight(viewport.clientHeight));
    observer.observe(viewport);
    return () => observer.disconnect();
  }, []);

  const onScroll = useCallback(() => {
    const viewport = viewportRef.current;
    if (viewport) setFirstVisible(Math.floor(viewport.scrollTop / rowHeight));
  }, [rowHeight]);

  return { viewportRef, firstVisible, viewportHeight, onScroll };
}
