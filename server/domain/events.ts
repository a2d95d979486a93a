/** Builds outbox events; the webhook dispatcher turns them into messages (SPEC §6.2). */
import { timeOrderedUuid } from './ids.js';
import type { EventType } from '../../shared/events.js';
import type { OutboxEvent } from '../db/types.js';

export function outboxEvent(
  eventType: EventType,
  fields: { patientId: string | null; organizationId: string | null; operationId: string; data: Record<string, unknown>; occurredAt: string },
): OutboxEvent {
  // Time-ordered (see ids.ts): event ids are appended to the outbox id index.
  return { id: timeOrderedUuid(), eventType, ...fields };
}
