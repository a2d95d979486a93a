/**
 * What `admin migrate` tells the operator while it runs, on stderr (stdout keeps the summary):
 * counts and bytes of each step; on a terminal one line redrawn in place with a bar, elsewhere (a
 * log file, a pipe) a plain line every few seconds and one when a step ends.
 */
export interface ProgressSink {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

/** How often a plain (non-terminal) progress line is written while a step runs. */
const LINE_INTERVAL_MS = 5000;
/** How often the terminal's line is redrawn. */
const REDRAW_INTERVAL_MS = 100;
const BAR_WIDTH = 24;

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

interface Step {
  name: string;
  totalCount: number;
  totalBytes: number;
  count: number;
  bytes: number;
  startedAt: number;
}

export class MigrationProgress {
  private step: Step | undefined;
  private lastWrite = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly sink: ProgressSink,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts a step: `totalBytes` 0 when the step moves no file bytes. */
  begin(name: string, totalCount: number, totalBytes = 0): void {
    this.end();
    this.step = { name, totalCount, totalBytes, count: 0, bytes: 0, startedAt: this.now() };
    this.lastWrite = Number.NEGATIVE_INFINITY;
    this.show(false);
  }

  advance(count: number, bytes = 0): void {
    if (!this.step) return;
    this.step.count += count;
    this.step.bytes += bytes;
    this.show(false);
  }

  /** Ends the current step with its final line. */
  end(): void {
    if (!this.step) return;
    this.show(true);
    this.step = undefined;
  }

  /** A note between steps (what was skipped, what was found). */
  note(line: string): void {
    this.end();
    this.sink.write(`${line}\n`);
  }

  private show(final: boolean): void {
    const step = this.step!;
    const at = this.now();
    const interval = this.sink.isTTY ? REDRAW_INTERVAL_MS : LINE_INTERVAL_MS;
    if (!final && at - this.lastWrite < interval) return;
    this.lastWrite = at;
    const counts = `${step.count}/${step.totalCount}`;
    const bytes = step.totalBytes > 0 ? `, ${formatBytes(step.bytes)}/${formatBytes(step.totalBytes)}` : '';
    const took = final ? ` in ${((at - step.startedAt) / 1000).toFixed(1)} s` : '';
    const text = `${step.name}: ${counts}${bytes}${took}`;
    if (!this.sink.isTTY) {
      this.sink.write(`${text}\n`);
      return;
    }
    const done = step.totalBytes > 0 ? step.bytes / step.totalBytes : step.totalCount > 0 ? step.count / step.totalCount : 1;
    const filled = Math.round(Math.min(1, done) * BAR_WIDTH);
    const line = `[${'#'.repeat(filled)}${' '.repeat(BAR_WIDTH - filled)}] ${String(Math.floor(Math.min(1, done) * 100)).padStart(3)}% ${text}`;
    const width = Math.max(20, (this.sink.columns ?? 80) - 1);
    this.sink.write(`\r${line.slice(0, width).padEnd(width)}${final ? '\n' : ''}`);
  }
}
