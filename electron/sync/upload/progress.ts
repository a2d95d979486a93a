/**
 * Bytes in flight per file and the rates derived from them (for progress bars, speed, time left).
 * Kept in memory only: the journal holds what is durable (the server's offset for resumable
 * uploads), this holds what changes many times a second.
 */
export interface FileProgress {
  pairId: string;
  bytesDone: number;
  /** Bytes per second, smoothed. */
  rate: number;
  lastAt: number;
  lastBytes: number;
}

/** How much of the newest sample goes into the smoothed rate. */
const SMOOTHING = 0.3;
/** Samples closer together than this are merged (the rate of 5 ms is noise). */
const MIN_SAMPLE_MS = 200;

export class ProgressTracker {
  private readonly files = new Map<number, FileProgress>();

  constructor(private readonly now: () => number) {}

  start(fileId: number, pairId: string): void {
    this.files.set(fileId, { pairId, bytesDone: 0, rate: 0, lastAt: this.now(), lastBytes: 0 });
  }

  update(fileId: number, bytesDone: number): void {
    const entry = this.files.get(fileId);
    if (!entry) return;
    entry.bytesDone = bytesDone;
    const now = this.now();
    const elapsed = now - entry.lastAt;
    if (elapsed < MIN_SAMPLE_MS) return;
    const sample = (Math.max(0, bytesDone - entry.lastBytes) * 1000) / elapsed;
    entry.rate = entry.rate === 0 ? sample : entry.rate * (1 - SMOOTHING) + sample * SMOOTHING;
    entry.lastAt = now;
    entry.lastBytes = bytesDone;
  }

  finish(fileId: number): void {
    this.files.delete(fileId);
  }

  get(fileId: number): FileProgress | undefined {
    return this.files.get(fileId);
  }

  /** Sum of the rates of a pair's running uploads. */
  pairRate(pairId: string): number {
    let total = 0;
    for (const entry of this.files.values()) if (entry.pairId === pairId) total += entry.rate;
    return total;
  }
}
