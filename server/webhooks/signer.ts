/**
 * Message identity, body and signatures (SPEC §6.2–6.3, DESIGN §3 "Webhooks"), plus the
 * Standard Webhooks headers (https://www.standardwebhooks.com/) so receivers can reject replays.
 */
import { createHmac, hash } from 'node:crypto';
import { WEBHOOK_SOURCE } from '../../shared/events.js';
import type { StoredEvent } from '../db/types.js';

/** The messageId of an (event, subscription) pair: a name-based UUID (v5 layout), the same on every fan-out and retry. */
export function messageIdFor(eventId: string, subscriptionId: string): string {
  // One-shot hash (fan-out computes one per message): the first 128 bits, version nibble 5, variant 10.
  const hex = hash('sha1', `patient-docs/webhook-message/${eventId}/${subscriptionId}`, 'hex');
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The minified JSON body, SPEC §6.2's fields in its order, organizationId once: the subscription's.
 * Composed from the event as stored: `data` is spliced in as the JSON text written with the change
 * (itself minified JSON), so every attempt sends exactly the same bytes.
 */
export function composeMessageBody(event: StoredEvent, eventType: string, patientId: string | null, messageId: string, organizationId: string): string {
  const text = JSON.stringify;
  const patient = patientId === null ? '' : `,"patientId":${text(patientId)}`;
  return `{"source":${text(WEBHOOK_SOURCE)},"messageId":${text(messageId)},"timestamp":${text(event.occurredAt)},"eventType":${text(eventType)},"operationId":${text(event.operationId)},"organizationId":${text(organizationId)},"data":${event.dataJson}${patient}}`;
}

/** `Signature`: lowercase hex HMAC-SHA512 of exactly the body bytes, keyed by the hmac's UTF-8 bytes. */
export function signatureOf(body: string | Buffer, hmac: string): string {
  return createHmac('sha512', Buffer.from(hmac, 'utf8')).update(body).digest('hex');
}

/**
 * The Standard Webhooks key: a `whsec_<base64>` hmac means the base64-decoded bytes (as that
 * spec's libraries do); any other hmac is used as its UTF-8 bytes, the same key as `Signature`.
 */
export function standardWebhooksKey(hmac: string): Buffer {
  if (hmac.startsWith('whsec_')) return Buffer.from(hmac.slice('whsec_'.length), 'base64');
  return Buffer.from(hmac, 'utf8');
}

export function standardSignatureOf(messageId: string, timestampSeconds: number, body: string, hmac: string): string {
  const mac = createHmac('sha256', standardWebhooksKey(hmac)).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** Every header of one attempt; the timestamp is the attempt's, so replays of old attempts are detectable. */
export function deliveryHeaders(messageId: string, body: string, hmac: string, attemptAt: Date): Record<string, string> {
  const timestamp = Math.floor(attemptAt.getTime() / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': 'patient-docs-webhooks/1',
    signature: signatureOf(body, hmac),
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardSignatureOf(messageId, timestamp, body, hmac),
  };
}
