/**
 * What both stores' webhook prune share (sqlite/webhook-retention.ts, postgres/webhook-retention.ts).
 *
 * A prune walks each table in key order, a batch of rows per transaction, from its start: the old
 * rows are there. It stops at the first batch whose rows are all newer than `before` by more than
 * ROW_ORDER_SLACK_MS: rows are written in about the order of their times (a message is queued when
 * its event is fanned out, an attempt is logged within moments of being made), and a row that
 * could still be pruned lies behind it by at most that much.
 */
import { WEBHOOK_PRUNE_BATCH, type WebhookMessageState, type WebhookPruneOptions, type WebhookPruneReport } from './types.js';

/** How a prune walks a table: `size` rows per transaction, until a batch is all newer than `end` or `signal` aborts. */
export interface WalkOptions {
  size: number;
  end: string;
  signal: AbortSignal | undefined;
}

/**
 * Generous against the clocks of several instances, transactions that commit a while after their
 * event occurred, and attempts logged at their end (within the delivery timeout, at most 10
 * minutes, and twice that waiting for a connection).
 */
export const ROW_ORDER_SLACK_MS = 3_600_000;

/** The time past which a batch of rows is surely too new to hold anything `before` prunes. */
function walkEnd(before: string): string {
  return new Date(Date.parse(before) + ROW_ORDER_SLACK_MS).toISOString();
}

/** How a prune with these options walks each table. */
export function walkOptions(options: WebhookPruneOptions): WalkOptions {
  return { size: options.batch ?? WEBHOOK_PRUNE_BATCH, end: walkEnd(options.before), signal: options.signal };
}

/** The ended states a prune removes: delivered and cancelled always, dead letters when asked. */
export function prunedStates(options: WebhookPruneOptions): WebhookMessageState[] {
  return options.dead ? ['delivered', 'cancelled', 'dead'] : ['delivered', 'cancelled'];
}

export function emptyPruneReport(): WebhookPruneReport {
  return { delivered: 0, cancelled: 0, dead: 0, attempts: 0, events: 0 };
}

/** Adds removed messages to the report by their state. */
export function countRemoved(report: WebhookPruneReport, states: readonly string[]): void {
  for (const state of states) {
    if (state === 'delivered' || state === 'cancelled' || state === 'dead') report[state] += 1;
  }
}

/** Lets other work of this process (requests, delivery) run between two batches. */
export function betweenBatches(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
