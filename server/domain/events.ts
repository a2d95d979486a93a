/** Builds outbox events; the webhook dispatcher turns them into messages (SPEC §6.2). */
import { randomUUID } from 'node:crypto';
import type { EventType } from '../../shared/events.js';
import type { OutboxEvent } from '../db/types.js';

export function outboxEvent(
  eventType: EventType,
  fields: { patientId: string | null; organizationId: string | null; operationId: string; data: Record<string, unknown>; occurredAt: string },
): OutboxEvent {
  return { id: randomUUID(), eventType, ...fields };
}
