import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Links } from './links.js';

const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const OTHER_ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a02';
const holder = { clientId: 'scanner-pc-1', organizationId: ORG };
const key = Buffer.alloc(32, 7);

describe('signed links', () => {
  it('are valid 15 to 16 minutes, stable within a minute, and refuse tampering and expiry', () => {
    let now = Date.parse('2026-11-21T09:30:20Z');
    const links = new Links('http://server', key, () => now);
    const first = new URL(links.signed('doc-1', 2, 'content', holder));
    const expires = Number(first.searchParams.get('expires'));
    const validity = expires - now / 1000;
    expect(validity).toBeGreaterThanOrEqual(15 * 60);
    expect(validity).toBeLessThanOrEqual(16 * 60);
    expect(links.signed('doc-1', 2, 'content', holder)).toBe(first.toString());
    const signature = first.searchParams.get('sig')!;
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'content', expires, holder }, signature)).toBe('valid');
    expect(links.check({ documentId: 'doc-1', version: 3, kind: 'content', expires, holder }, signature)).toBe('invalid');
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'thumbnail', expires, holder }, signature)).toBe('invalid');
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'content', expires: expires + 60, holder }, signature)).toBe('invalid');
    now += 17 * 60 * 1000;
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'content', expires, holder }, signature)).toBe('expired');
    expect(links.signed('doc-1', 2, 'content', holder)).not.toBe(first.toString());
  });

  it('carry the client and organization they were handed to, under the signature', () => {
    const now = Date.parse('2026-11-21T09:30:20Z');
    const links = new Links('http://server', key, () => now);
    const link = new URL(links.signed('doc-1', 2, 'content', holder));
    expect(link.searchParams.get('client')).toBe('scanner-pc-1');
    expect(link.searchParams.get('org')).toBe(ORG);
    const expires = Number(link.searchParams.get('expires'));
    const signature = link.searchParams.get('sig')!;
    // Another client's or organization's name on the same signature is a forgery.
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'content', expires, holder: { clientId: 'scanner-pc-2', organizationId: ORG } }, signature)).toBe('invalid');
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'content', expires, holder: { clientId: 'scanner-pc-1', organizationId: OTHER_ORG } }, signature)).toBe('invalid');
    // Nor can the holder be stripped to pass it off as a link from before the audit log.
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'content', expires }, signature)).toBe('invalid');
  });

  it('hands each client its own link, the same one all minute', () => {
    const now = Date.parse('2026-11-21T09:30:20Z');
    const links = new Links('http://server', key, () => now);
    const mine = links.signed('doc-1', 2, 'content', holder);
    const theirs = links.signed('doc-1', 2, 'content', { clientId: 'scanner-pc-2', organizationId: ORG });
    const otherOrganization = links.signed('doc-1', 2, 'content', { clientId: 'scanner-pc-1', organizationId: OTHER_ORG });
    expect(new URL(theirs).searchParams.get('client')).toBe('scanner-pc-2');
    expect(new URL(otherOrganization).searchParams.get('org')).toBe(OTHER_ORG);
    expect(new Set([mine, theirs, otherOrganization]).size).toBe(3);
    expect(links.signed('doc-1', 2, 'content', holder)).toBe(mine);
  });

  it('still honours a link signed before the update (no holder) until it expires', () => {
    let now = Date.parse('2026-11-21T09:30:20Z');
    const links = new Links('http://server', key, () => now);
    const expires = links.currentExpiry();
    // As the previous release signed it.
    const legacy = createHmac('sha256', key).update(`doc-1\n2\ncontent\n${expires}`).digest('base64url');
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'content', expires }, legacy)).toBe('valid');
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'content', expires, holder }, legacy)).toBe('invalid');
    now += 17 * 60 * 1000;
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'content', expires }, legacy)).toBe('expired');
  });
});
