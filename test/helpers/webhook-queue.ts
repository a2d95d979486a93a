/**
 * A webhook queue as the server's dispatcher leaves it, written through the store: for tests of
 * what removes the queue's ended rows (`webhooks prune`, the automatic retention).
 */
import { randomUUID } from 'node:crypto';
import type { OutboxEvent, Store } from '../../server/db/types.js';

const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-0000000000aa';
export const QUEUE_SUBSCRIPTION = 'sub-1';

/**
 * On subscription `sub-1`: two delivered messages (m-delivered-1, m-delivered-2), a dead letter
 * (m-dead) and one waiting for its retry an hour from now (m-retrying), each of its own event
 * (data `{ name }`) and with one attempt, all at `at`.
 */
export async function fillWebhookQueue(store: Store, at: string): Promise<void> {
  await store.organizations.upsert({ id: ORG, name: 'Smile Clinic', createdAt: at });
  await store.patients.create({ id: PATIENT, name: 'Jane Roe', organizations: [ORG], consents: [ORG], identifiers: [], birthDate: null, createdAt: at, updatedAt: at }, []);
  await store.webhooks.createSubscription({ id: QUEUE_SUBSCRIPTION, organizationId: ORG, clientId: 'lab', events: ['order.all'], callback: 'https://lab.example/hook', sealedSecret: 's', status: 'active', disabledReason: null, createdAt: at });
  const names = ['delivered-1', 'delivered-2', 'dead', 'retrying'];
  const events: OutboxEvent[] = names.map((name) => ({ id: randomUUID(), eventType: 'order.updated', patientId: PATIENT, organizationId: ORG, operationId: randomUUID(), occurredAt: at, data: { name } }));
  await store.orders.create({ id: randomUUID(), patientId: PATIENT, organizationId: ORG, status: 'new', createdAt: at, updatedAt: at }, events);
  const heads = await store.outbox.headsAfter(await store.webhooks.cursor(), 10);
  await store.webhooks.enqueue(
    names.map((name, n) => ({ id: `m-${name}`, subscriptionId: QUEUE_SUBSCRIPTION, eventId: events[n]!.id, eventType: 'order.updated' as const, patientId: PATIENT, nextAttemptAt: 0, createdAt: at })),
    heads.at(-1)!.sequence,
  );
  await store.webhooks.claimDue([{ subscriptionId: QUEUE_SUBSCRIPTION, limit: 10, skip: new Set() }], 1);
  const outcome = { delivered: ['delivered', 200], dead: ['dead', 500], retrying: ['retry', 500] } as const;
  await store.webhooks.recordAttempts(
    names.map((name) => {
      const [result, statusCode] = outcome[name.replace(/-\d$/, '') as keyof typeof outcome];
      const state = result === 'retry' ? ('pending' as const) : result;
      return {
        attempt: { messageId: `m-${name}`, subscriptionId: QUEUE_SUBSCRIPTION, attempt: 1, attemptedAt: at, statusCode, latencyMs: 5, error: statusCode === 200 ? null : 'HTTP 500', outcome: result },
        state,
        nextAttemptAt: Date.now() + 3_600_000,
      };
    }),
  );
}
