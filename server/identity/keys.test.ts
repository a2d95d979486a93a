import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../db/sqlite/store.js';
import { KeyStore } from './keys.js';
import { TokenService } from './tokens.js';

describe('signing-key rotation with overlap', () => {
  it('keeps verifying tokens of the retired key until it is pruned after the token lifetime', async () => {
    let now = Date.parse('2026-11-21T09:00:00Z');
    const store = SqliteStore.open(':memory:');
    const keys = new KeyStore(store.signingKeys, 0, () => now);
    await keys.ensureKey();
    const tokens = new TokenService(keys, { issuer: 'http://issuer', audience: 'api://patient-docs', lifetimeSeconds: 1800, tenantId: 't' }, () => now);
    const before = await tokens.issue('client-a', ['Patient.File.Read'], '127.0.0.1');

    const newKid = await keys.rotate();
    const after = await tokens.issue('client-a', ['Patient.File.Read'], '127.0.0.1');
    expect(JSON.parse(Buffer.from(after.accessToken.split('.')[0]!, 'base64url').toString()).kid).toBe(newKid);
    expect((await keys.jwks()).keys).toHaveLength(2);
    // A fresh verifier (another instance) accepts both during the overlap.
    const verifier = new TokenService(new KeyStore(store.signingKeys, 0, () => now), { issuer: 'http://issuer', audience: 'api://patient-docs', lifetimeSeconds: 1800, tenantId: 't' }, () => now);
    await expect(verifier.verify(before.accessToken)).resolves.toMatchObject({ clientId: 'client-a' });
    await expect(verifier.verify(after.accessToken)).resolves.toMatchObject({ clientId: 'client-a' });

    expect(await keys.prune(1800)).toEqual([]);
    now += 1801 * 1000;
    expect(await keys.prune(1800)).toHaveLength(1);
    expect((await keys.jwks()).keys.map((key) => key.kid)).toEqual([newKid]);
    const late = new TokenService(new KeyStore(store.signingKeys, 0, () => now), { issuer: 'http://issuer', audience: 'api://patient-docs', lifetimeSeconds: 3600 * 24, tenantId: 't' }, () => now - 1000 * 1000);
    await expect(late.verify(before.accessToken)).rejects.toThrow('unknown key');
    await store.close();
  });

  it('stops accepting tokens it has already verified once their key is pruned elsewhere (emergency revocation)', async () => {
    let now = Date.parse('2026-11-21T09:00:00Z');
    const store = SqliteStore.open(':memory:');
    const settings = { issuer: 'http://issuer', audience: 'api://patient-docs', lifetimeSeconds: 1800, tenantId: 't' };
    const admin = new KeyStore(store.signingKeys, 5000, () => now);
    await admin.ensureKey();
    const server = new TokenService(new KeyStore(store.signingKeys, 5000, () => now), settings, () => now);
    const token = (await server.issue('client-a', ['Patient.File.Read'], '127.0.0.1')).accessToken;
    await expect(server.verify(token)).resolves.toMatchObject({ clientId: 'client-a' });

    // The admin CLI, another process: rotate, then prune at once.
    await admin.rotate();
    now += 1;
    expect(await admin.prune(0)).toHaveLength(1);
    await expect(server.verify(token)).resolves.toMatchObject({ clientId: 'client-a' }); // within the reload interval
    now += 5000;
    await server.verify(token).catch(() => undefined); // starts the reload
    await new Promise((resolve) => setTimeout(resolve, 20));
    await expect(server.verify(token)).rejects.toThrow('unknown key');
    await store.close();
  });
});
