/**
 * Ids of records the server creates and stores in indexes that grow with the data: documents and
 * outbox events. They are UUID version 7 (RFC 9562): 48 bits of Unix milliseconds first, so a new
 * id lands at the end of its index instead of on a random page of it, which keeps a create's
 * writes to a few hot pages. The rest comes from randomUUID (Node's pooled CSPRNG): 74 random
 * bits, the version nibble set to 7 and the RFC variant kept. The `uuid` package's v7 draws from
 * crypto.getRandomValues on every call, which cost more than the insert it was meant to speed up.
 */
import { randomUUID } from 'node:crypto';

export function timeOrderedUuid(now: number = Date.now()): string {
  const time = now.toString(16).padStart(12, '0');
  // randomUUID(): xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx; keep from the 3 digits after the version on.
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`;
}
