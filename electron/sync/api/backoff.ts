/**
 * When to try again after a temporary failure: exponential backoff with jitter (so a hundred
 * files that failed together do not return together), or exactly what the server asked for
 * (Retry-After) plus a little jitter.
 */
export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1000, maxMs: 5 * 60_000 };

/** `attempt` counts from 1 (the first retry). */
export function retryDelayMs(policy: BackoffPolicy, attempt: number, retryAfterSeconds: number | null, random: () => number = Math.random): number {
  if (retryAfterSeconds !== null) {
    const asked = retryAfterSeconds * 1000;
    return Math.min(Math.max(asked, 0), Math.max(policy.maxMs, asked)) + Math.floor(random() * Math.min(1000, policy.baseMs));
  }
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, Math.min(30, attempt - 1)));
  // "Equal jitter": at least half the ceiling, so retries still slow down as failures pile up.
  return Math.floor(ceiling / 2 + random() * (ceiling / 2));
}
