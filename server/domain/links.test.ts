import { describe, expect, it } from 'vitest';
import { Links } from './links.js';

describe('signed links', () => {
  it('are valid 15 to 16 minutes, stable within a minute, and refuse tampering and expiry', () => {
    let now = Date.parse('2026-11-21T09:30:20Z');
    const links = new Links('http://server', Buffer.alloc(32, 7), () => now);
    const first = new URL(links.signed('doc-1', 2, 'content'));
    const expires = Number(first.searchParams.get('expires'));
    const validity = expires - now / 1000;
    expect(validity).toBeGreaterThanOrEqual(15 * 60);
    expect(validity).toBeLessThanOrEqual(16 * 60);
    expect(links.signed('doc-1', 2, 'content')).toBe(first.toString());
    const signature = first.searchParams.get('sig')!;
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'content', expires }, signature)).toBe('valid');
    expect(links.check({ documentId: 'doc-1', version: 3, kind: 'content', expires }, signature)).toBe('invalid');
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'thumbnail', expires }, signature)).toBe('invalid');
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'content', expires: expires + 60 }, signature)).toBe('invalid');
    now += 17 * 60 * 1000;
    expect(links.check({ documentId: 'doc-1', version: 2, kind: 'content', expires }, signature)).toBe('expired');
    expect(links.signed('doc-1', 2, 'content')).not.toBe(first.toString());
  });
});
