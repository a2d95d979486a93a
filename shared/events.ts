/** The webhook event catalog (DESIGN §3 "Webhooks"). */

export const EVENT_TYPES = [
  'patient.created',
  'patient.updated',
  'order.created',
  'order.updated',
  'document.created',
  'document.uploaded',
  'document.deleted',
  // The stored file of the current version was found missing or damaged (admin `verify --mark-lost`):
  // the document no longer counts as having content and waits for a new upload.
  'document.lost',
  // That stored file is back intact (restored from a backup; admin `verify --mark-restored`) and the
  // document has its content again: same version, same sha256. Not an upload (no new version).
  'document.restored',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export const EVENT_KINDS = ['patient', 'order', 'document'] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/** A subscription may name an event type or `<kind>.all`. */
export function isSubscribableEvent(value: string): boolean {
  if (isEventType(value)) return true;
  return EVENT_KINDS.some((kind) => value === `${kind}.all`);
}

/** Does a subscription's list of names include this event type? */
export function subscriptionMatches(subscribed: readonly string[], eventType: EventType): boolean {
  const kind = eventType.slice(0, eventType.indexOf('.'));
  return subscribed.includes(eventType) || subscribed.includes(`${kind}.all`);
}

export const WEBHOOK_SOURCE = 'patient-docs';
