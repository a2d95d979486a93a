import { describe, expect, it } from 'vitest';
import { clientKey, MemoryTokenLimiter, sourceKey } from './rate-limit.js';

describe('token request limits', () => {
  it('keys any client id, however long, by a fixed-size digest, and IPv6 addresses by their /64', () => {
    expect(clientKey('x'.repeat(8192))).toHaveLength(22);
    expect(clientKey('scanner-pc-1')).toBe(clientKey('scanner-pc-1'));
    expect(clientKey('scanner-pc-1')).not.toBe(clientKey('scanner-pc-2'));
    expect(sourceKey('2001:db8:1:2:aaaa::1')).toBe(sourceKey('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(sourceKey('2001:db8:1:2::1')).not.toBe(sourceKey('2001:db8:1:3::1'));
    expect(sourceKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(sourceKey('192.0.2.7')).toBe('192.0.2.7');
  });

  it('holds at most its capacity per table, whatever number of clients and addresses is tried', () => {
    const limiter = new MemoryTokenLimiter({ requestsPerClientAndSource: 5, failuresPerSource: 1_000_000, failuresPerClient: 3, capacity: 100 });
    for (let index = 0; index < 10_000; index += 1) {
      const attempt = { client: clientKey(`made-up-${index}`), source: `10.0.${index >> 8}.${index & 255}` };
      limiter.admit(attempt);
      limiter.settle(attempt, 'failure');
    }
    expect(limiter.size).toBeLessThanOrEqual(400);
  });

  it('refuses a client after its failures from many addresses, except where it obtained a token, until the window ends', () => {
    let now = 0;
    const limiter = new MemoryTokenLimiter({ requestsPerClientAndSource: 100, failuresPerSource: 100, failuresPerClient: 3 }, () => now);
    const client = clientKey('scanner-pc-1');
    const home = { client, source: '192.0.2.1' };
    expect(limiter.admit(home)).toBe(0);
    limiter.settle(home, 'success');
    for (let index = 0; index < 3; index += 1) {
      const attempt = { client, source: `198.51.100.${index}` };
      expect(limiter.admit(attempt)).toBe(0);
      limiter.settle(attempt, 'failure');
    }
    expect(limiter.admit({ client, source: '198.51.100.99' })).toBe(60);
    expect(limiter.admit(home)).toBe(0);
    now = 60_000;
    expect(limiter.admit({ client, source: '198.51.100.99' })).toBe(0);
  });
});
