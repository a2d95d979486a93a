import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { composeMessageBody, deliveryHeaders, messageIdFor, signatureOf, standardSignatureOf, standardWebhooksKey } from './signer.js';

const GUIDES = ['docs/webhooks.md'];

/** The test vector as a receiver's guide prints it: the first text block after its heading. */
function documentedVector(file: string): Record<string, string> {
  const text = fs.readFileSync(path.resolve(import.meta.dirname, '../..', file), 'utf8');
  const block = /#{2,3} (?:Test vector|Receiving webhooks)[\s\S]*?```text\n([\s\S]*?)```/.exec(text)?.[1];
  if (!block) throw new Error(`${file} has no test vector block`);
  return Object.fromEntries(block.trim().split('\n').map((line) => [line.slice(0, line.indexOf(': ')), line.slice(line.indexOf(': ') + 2)]));
}

describe('webhook signatures', () => {
  it.each(GUIDES)('reproduces the test vector of the receiver’s guide in %s exactly', (file) => {
    const vector = documentedVector(file);
    const secret = vector.secret!;
    const body = vector.body!;
    expect(signatureOf(body, secret)).toBe('c6a8b2af668fc2c0732da849f8c533bde32602348a5b24dec6775e716778878610692dce562a3f89a81be8dabf27430d545fe96e449553faaf74d6013cb472fb');
    expect(signatureOf(body, secret)).toBe(vector.Signature);
    expect(standardSignatureOf(vector['webhook-id']!, Number(vector['webhook-timestamp']), body, secret)).toBe(vector['webhook-signature']);
    const headers = deliveryHeaders(vector['webhook-id']!, body, secret, new Date(Number(vector['webhook-timestamp']) * 1000));
    expect(headers).toMatchObject({ signature: vector.Signature, 'webhook-id': vector['webhook-id'], 'webhook-signature': vector['webhook-signature'], 'content-type': 'application/json' });
  });

  it('signs bytes, not objects: one extra space changes the signature', () => {
    const body = '{"a":1}';
    expect(signatureOf(body, 'k')).toBe(createHmac('sha512', 'k').update(body).digest('hex'));
    expect(signatureOf('{"a": 1}', 'k')).not.toBe(signatureOf(body, 'k'));
    expect(signatureOf(Buffer.from(body), 'k')).toBe(signatureOf(body, 'k'));
  });

  it('uses the decoded bytes of a whsec_ secret for the Standard Webhooks signature', () => {
    const raw = Buffer.from('0123456789abcdef0123456789abcdef');
    expect(standardWebhooksKey(`whsec_${raw.toString('base64')}`).equals(raw)).toBe(true);
    expect(standardWebhooksKey('plain').toString()).toBe('plain');
  });

  it('derives one stable UUID per (event, subscription)', () => {
    const id = messageIdFor('event-1', 'subscription-1');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(messageIdFor('event-1', 'subscription-1')).toBe(id);
    // The name-based UUID of RFC 9562 §5.5 over this name: the same value in every release.
    expect(id).toBe('f041305b-6186-59f8-840d-935406e962cf');
    expect(messageIdFor('event-1', 'subscription-2')).not.toBe(id);
  });

  it('writes SPEC §6.2’s fields once, minified, with the subscription’s organization', () => {
    const body = composeMessageBody({ occurredAt: '2026-11-21T09:30:00.000Z', operationId: 'op', dataJson: JSON.stringify({ order: { id: 'o' } }) }, 'order.updated', 'p', 'm', 'org-of-the-subscription');
    expect(body).toBe(
      '{"source":"patient-docs","messageId":"m","timestamp":"2026-11-21T09:30:00.000Z","eventType":"order.updated","operationId":"op","organizationId":"org-of-the-subscription","data":{"order":{"id":"o"}},"patientId":"p"}',
    );
  });

  it('composes from the stored event text the same bytes as JSON.stringify of the message', () => {
    const data = { document: { id: 'd', fileName: 'Zahn "oben" ü\u2028.stl', path: '/a/b', fileSize: null, hasContent: false, version: 0 } };
    for (const patientId of ['p', null]) {
      const event = { id: 'e', eventType: 'document.created' as const, patientId, organizationId: 'o', operationId: 'op', occurredAt: '2026-11-21T09:30:00.000Z', data };
      const expected = JSON.stringify({ source: 'patient-docs', messageId: 'm', timestamp: event.occurredAt, eventType: event.eventType, operationId: 'op', organizationId: 'org', data, ...(patientId === null ? {} : { patientId }) });
      expect(composeMessageBody({ occurredAt: event.occurredAt, operationId: 'op', dataJson: JSON.stringify(data) }, event.eventType, patientId, 'm', 'org')).toBe(expected);
    }
  });
});
