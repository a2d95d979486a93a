/** A fixed-window counter per key: enough to stop a runaway client hammering the token endpoint. */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Returns 0 when allowed, else the seconds until the window resets. */
  take(key: string): number {
    const time = this.now();
    if (this.windows.size > 10_000) this.evictExpired(time);
    const window = this.windows.get(key);
    if (!window || time - window.start >= this.windowMs) {
      this.windows.set(key, { start: time, count: 1 });
      return 0;
    }
    window.count += 1;
    if (window.count <= this.limit) return 0;
    return Math.max(1, Math.ceil((window.start + this.windowMs - time) / 1000));
  }

  private evictExpired(time: number): void {
    for (const [key, window] of this.windows) if (time - window.start >= this.windowMs) this.windows.delete(key);
  }
}
