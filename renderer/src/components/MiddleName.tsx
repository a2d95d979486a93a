import { useLayoutEffect, useRef } from 'react';
import { visibleName } from '../../../shared/names.js';

/** Characters of the stem kept at the end, beside the extension: where scanner exports differ (…_Pearson_0.stl, …_occlusion_u.stl). */
const TAIL_CHARACTERS = 12;

/**
 * A name split where a narrow column cuts it: the head may end in an ellipsis, the tail (the last
 * characters of the stem and the extension) is always shown. Code points, so no character is halved.
 */
export function splitForMiddleCut(name: string): { head: string; tail: string } {
  const characters = [...name];
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 && name.length - dot <= 8 ? [...name.slice(dot)].length : 0;
  const stem = characters.length - extension;
  // The stem's last word (after _ - space or .) when it says enough (Case_0001 → "0001", …_Pearson_0 → "Pearson_0"), else its last characters.
  let kept = Math.min(TAIL_CHARACTERS, Math.floor(stem / 2));
  for (let start = stem - 1; start > 0; start -= 1) {
    if (!SEPARATOR.test(characters[start - 1]!)) continue;
    if (stem - start >= MIN_TAIL_WORD) {
      kept = Math.min(kept, stem - start);
      break;
    }
  }
  const cut = stem - kept;
  return { head: characters.slice(0, cut).join(''), tail: characters.slice(cut).join('') };
}

const SEPARATOR = /[_\-\s.]/u;
/** A last word shorter than this ("_0", "_u") is kept with the word before it. */
const MIN_TAIL_WORD = 4;

/**
 * A file or folder name that, when it does not fit, is cut in the middle: two scans whose names
 * differ only at the end ("…_0.stl", "…_1.stl") still read differently. The whole name is the
 * tooltip (hover), is shown over the row while its row has the focus, and is what assistive
 * technology reads (the cut text is hidden from it).
 */
export function MiddleName({ name, className, plain }: { name: string; className?: string; /** Text within text (a table cell), not a control's name: one copy of the name, read as it is shown. */ plain?: boolean }) {
  const shown = visibleName(name);
  const { head, tail } = splitForMiddleCut(shown);
  const headRef = useRef<HTMLSpanElement>(null);
  const tailRef = useRef<HTMLSpanElement>(null);
  // The head gets what the tail leaves of the line, measured (fonts differ per computer and scaling)
  // to the fraction of a pixel: a line as wide as the name (a column sized to its content) leaves
  // the head exactly its own width, so a name that fits is never cut. A ResizeObserver measures it
  // once laid out, before the first paint, and again whenever the tail's width changes (a selected
  // row's bold, a font that arrives late), without forcing a layout of its own as each row mounts.
  useLayoutEffect(() => {
    const headElement = headRef.current;
    const tailElement = tailRef.current;
    if (!headElement || !tailElement) return;
    const observer = new ResizeObserver(() => {
      headElement.style.maxWidth = `calc(100% - ${tailElement.getBoundingClientRect().width}px)`;
    });
    observer.observe(tailElement);
    return () => observer.disconnect();
  }, [tail]);
  return (
    <span className="middle-name" title={shown} data-full-name={shown}>
      {plain ? null : <span className="visually-hidden">{shown}</span>}
      <span className={className ? `middle-name-visual ${className}` : 'middle-name-visual'} aria-hidden={plain ? undefined : true}>
        <span ref={headRef} className="middle-name-head" style={{ maxWidth: `calc(100% - ${[...tail].length}ch)` }}>
          {head}
        </span>
        <span ref={tailRef} className="middle-name-tail">
          {tail}
        </span>
      </span>
    </span>
  );
}
