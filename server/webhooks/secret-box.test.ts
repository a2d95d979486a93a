import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox } from './secret-box.js';

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  it('seals without the plain value and opens it again', () => {
    const sealed = box.seal('my-hmac-secret', 'subscription-1');
    expect(sealed).not.toContain('my-hmac-secret');
    expect(sealed).not.toBe(box.seal('my-hmac-secret', 'subscription-1'));
    expect(box.open(sealed, 'subscription-1')).toBe('my-hmac-secret');
  });

  it('refuses a sealed value moved to another subscription, tampered with, or under another key', () => {
    const sealed = box.seal('my-hmac-secret', 'subscription-1');
    expect(() => box.open(sealed, 'subscription-2')).toThrow();
    const parts = sealed.split('.');
    parts[3] = Buffer.from('x'.repeat(14)).toString('base64url');
    expect(() => box.open(parts.join('.'), 'subscription-1')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'subscription-1')).toThrow();
  });
});
