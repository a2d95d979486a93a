/**
 * Room for the server's heap to grow between full garbage collections.
 *
 * After each full collection V8 sets where the next one starts, from the live heap and a growing
 * factor it picks. The server's live heap is small (17–20 MB: the data lives in the database), and
 * with the room V8 leaves it (the next start at 40 MB for 16 live) V8 can fall into starting a full
 * collection after nearly every young one. An upload makes a young collection every 25–30 MB
 * received (Node's HTTP parser copies each 64 KiB of a body into a buffer of its own, memory V8
 * counts), so a server in that state (about a third of fresh servers, and every one made to run a
 * full collection early in its life) spends about 70 full collections on each 2 GiB received,
 * without what follows: 0.4 s of its main thread and 1.5–2 CPU-seconds of V8's helper threads,
 * about a fifth of the upload's time on two cores (docs/benchmarks.md, "Garbage collection").
 *
 * While the live heap is below SMALL_HEAP_BYTES, V8's growing factor is set so that the next full
 * collection starts HEADROOM_BYTES above the live heap (at most 4×, V8's own largest factor); from
 * SMALL_HEAP_BYTES on V8 picks it again: a larger heap gets more room from V8's own factor, and a
 * fixed one there would hold more garbage than the headroom is worth. What it costs is bounded: up
 * to HEADROOM_BYTES more garbage held between two full collections. The factor is set again after
 * every full collection, when the live heap is known. V8's flags are the process's: worker threads'
 * heaps (thumbnail renders) grow by the same factor, within their own heap limits.
 */
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import v8 from 'node:v8';

const MiB = 1024 * 1024;
export const HEADROOM_BYTES = 48 * MiB;
const SMALL_HEAP_BYTES = 48 * MiB;
/** V8's growing factor 4: its own largest. */
const MAX_GROWING_PERCENT = 300;

/** The `--heap-growing-percent` for a live heap of `liveBytes`: 0 lets V8 pick its factor. */
export function growingPercentFor(liveBytes: number): number {
  if (liveBytes >= SMALL_HEAP_BYTES) return 0;
  return Math.min(MAX_GROWING_PERCENT, Math.ceil((100 * HEADROOM_BYTES) / Math.max(liveBytes, 1)));
}

let observer: PerformanceObserver | undefined;

/** Keeps HEADROOM_BYTES of room above a small live heap for the rest of the process (see above). */
export function keepHeapHeadroom(): void {
  if (observer) return;
  let current: number | undefined;
  const apply = (): void => {
    const percent = growingPercentFor(v8.getHeapStatistics().used_heap_size);
    if (percent === current) return;
    v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
    current = percent;
  };
  apply();
  observer = new PerformanceObserver((list) => {
    if (list.getEntries().some((entry) => (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) apply();
  });
  observer.observe({ entryTypes: ['gc'] });
}
