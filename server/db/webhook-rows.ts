/**
 * The outbox's and the webhook tables' rows as both stores read them (the same columns on SQLite and PostgreSQL),
 * and the records they become.
 */
import type { OutboxEvent, WebhookAttemptRecord, WebhookCounts, WebhookSubscriptionRecord } from './types.js';

export interface SubscriptionRow {
  id: string;
  organization_id: string;
  client_id: string;
  events: string;
  callback: string;
  sealed_secret: string;
  status: WebhookSubscriptionRecord['status'];
  disabled_reason: string | null;
  created_at: string;
  from_sequence: number;
}

export const subscriptionFromRow = (row: SubscriptionRow): WebhookSubscriptionRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  clientId: row.client_id,
  events: JSON.parse(row.events) as string[],
  callback: row.callback,
  sealedSecret: row.sealed_secret,
  status: row.status,
  disabledReason: row.disabled_reason,
  createdAt: row.created_at,
  fromSequence: row.from_sequence,
});

export interface AttemptRow {
  message_id: string;
  subscription_id: string;
  attempt: number;
  attempted_at: string;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  outcome: WebhookAttemptRecord['outcome'];
}

export const attemptFromRow = (row: AttemptRow): WebhookAttemptRecord => ({
  messageId: row.message_id,
  subscriptionId: row.subscription_id,
  attempt: row.attempt,
  attemptedAt: row.attempted_at,
  statusCode: row.status_code,
  latencyMs: row.latency_ms,
  error: row.error,
  outcome: row.outcome,
});

/** The messages counted by state (`SELECT state, count(*) AS n … GROUP BY state`) and the failed attempts, as WebhookCounts. */
export function webhookCounts(byState: ReadonlyArray<{ state: string; n: number }>, failed: number): WebhookCounts {
  const count = (state: string): number => byState.find((row) => row.state === state)?.n ?? 0;
  return { queued: count('pending') + count('delivering'), delivered: count('delivered'), dead: count('dead'), cancelled: count('cancelled'), failed };
}

/** A subscription not deleted (deletion keeps the row for the delivery log). */
export const LIVE = 'deleted_at IS NULL';

export interface OutboxRow {
  sequence: number;
  id: string;
  event_type: OutboxEvent['eventType'];
  patient_id: string | null;
  organization_id: string | null;
  operation_id: string;
  occurred_at: string;
  data: string;
}

/** An outbox event as stored, with its sequence. */
export const outboxEventFromRow = (row: OutboxRow): OutboxEvent & { sequence: number } => ({
  sequence: row.sequence,
  id: row.id,
  eventType: row.event_type,
  patientId: row.patient_id,
  organizationId: row.organization_id,
  operationId: row.operation_id,
  occurredAt: row.occurred_at,
  data: JSON.parse(row.data) as Record<string, unknown>,
});
