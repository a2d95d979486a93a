import { afterEach, describe, expect, it } from 'vitest';
import { SecretVerifier } from './secret-verifier.js';
import { decoyHash, hashSecret } from './secrets.js';

describe('checking client secrets on threads of their own', () => {
  let verifier: SecretVerifier | undefined;
  afterEach(async () => {
    await verifier?.close();
  });

  it('tells a match from a mismatch, and never matches the decoy', async () => {
    verifier = new SecretVerifier({ threads: 1, queue: 4 });
    const stored = await hashSecret('right-secret-0123456789');
    expect(await verifier.verify('right-secret-0123456789', stored)).toBe('match');
    expect(await verifier.verify('wrong-secret-0123456789', stored)).toBe('mismatch');
    expect(await verifier.verify('right-secret-0123456789', decoyHash())).toBe('mismatch');
  });

  it('answers busy at once past the threads and the queue, and takes checks again once they are done', async () => {
    verifier = new SecretVerifier({ threads: 1, queue: 2 });
    const stored = await hashSecret('right-secret-0123456789');
    const checks = Array.from({ length: 5 }, () => verifier!.verify('right-secret-0123456789', stored));
    expect(await Promise.all(checks)).toEqual(['match', 'match', 'match', 'busy', 'busy']);
    expect(verifier.inFlight).toBe(0);
    expect(await verifier.verify('right-secret-0123456789', stored)).toBe('match');
  });

  it('serves urgent checks first, from a queue of their own', async () => {
    verifier = new SecretVerifier({ threads: 1, queue: 1 });
    const stored = await hashSecret('right-secret-0123456789');
    const order: string[] = [];
    const check = (name: string, urgent: boolean) => verifier!.verify('right-secret-0123456789', stored, urgent).then((verdict) => order.push(`${name}:${verdict}`));
    await Promise.all([check('first', false), check('guess', false), check('flood', false), check('workstation', true)]);
    expect(order).toEqual(['flood:busy', 'first:match', 'workstation:match', 'guess:match']);
  });
});
