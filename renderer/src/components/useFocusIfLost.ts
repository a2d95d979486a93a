import { useEffect, type RefObject } from 'react';

/**
 * Focuses the element when it appears if the focus was lost meanwhile (the button that folded a
 * column went with the column): the keyboard user goes on from the button that unfolds it, not
 * from the top of the page. An element that appears while the focus is elsewhere leaves it there.
 */
export function useFocusIfLost(ref: RefObject<HTMLElement | null>): void {
  useEffect(() => {
    const active = ref.current?.ownerDocument.activeElement;
    if (!active || active === ref.current?.ownerDocument.body) ref.current?.focus();
  }, [ref]);
}
