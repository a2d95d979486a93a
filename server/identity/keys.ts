/**
 * RS256 signing keys, persisted in the store so every instance signs and verifies alike.
 * Rotation with overlap: `rotate` adds a key that signs from then on; the old key stays in the
 * JWKS (so tokens it signed still verify) until `prune` removes keys retired longer than the
 * token lifetime ago.
 */
import { randomUUID } from 'node:crypto';
import type { CryptoKey, JWK } from 'jose';
import type { SigningKeyRecord, SigningKeyRepository } from '../db/types.js';
import { SecretWrap } from './master-key.js';

export interface ActiveKey {
  kid: string;
  privateKey: CryptoKey;
}

export class KeyStore {
  private cache: { loadedAt: number; records: SigningKeyRecord[]; active: ActiveKey } | undefined;

  constructor(
    private readonly repository: SigningKeyRepository,
    private readonly reloadIntervalMs = 5000,
    private readonly now: () => number = Date.now,
    /** Wraps the private keys at rest when a master key is given (master-key.ts). */
    private readonly wrap: SecretWrap = new SecretWrap(undefined),
  ) {}

  /**
   * Creates the first key when there is none. Every private key is opened once (a missing or wrong
   * master key stops the start here, in one line) and one not wrapped with the current master key
   * is wrapped again with it.
   */
  async ensureKey(): Promise<void> {
    const keys = await this.repository.list();
    for (const key of keys) {
      const plain = this.wrap.open(key.privateJwk, place(key.kid));
      if (this.wrap.stale(key.privateJwk)) await this.repository.replacePrivateJwk(key.kid, this.wrap.seal(plain, place(key.kid)));
    }
    if (!keys.some((key) => key.retiredAt === null)) await this.rotate();
  }

  async rotate(): Promise<string> {
    // jose is loaded when a key is made or used, not with this module: the admin CLI's commands
    // open the key store at each start and most never touch a key.
    const { exportJWK, generateKeyPair } = await import('jose');
    const { publicKey, privateKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
    const kid = randomUUID();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256' };
    const createdAt = new Date(this.now()).toISOString();
    for (const key of await this.repository.list()) {
      if (key.retiredAt === null) await this.repository.retire(key.kid, createdAt);
    }
    await this.repository.add({ kid, privateJwk: this.wrap.seal(JSON.stringify(privateJwk), place(kid)), publicJwk: JSON.stringify(publicJwk), createdAt, retiredAt: null });
    this.cache = undefined;
    return kid;
  }

  /** Removes keys retired more than `overlapSeconds` ago; returns the removed kids. */
  async prune(overlapSeconds: number): Promise<string[]> {
    const cutoff = this.now() - overlapSeconds * 1000;
    const removed: string[] = [];
    for (const key of await this.repository.list()) {
      if (key.retiredAt !== null && Date.parse(key.retiredAt) < cutoff) {
        await this.repository.remove(key.kid);
        removed.push(key.kid);
      }
    }
    this.cache = undefined;
    return removed;
  }

  private async load(): Promise<NonNullable<KeyStore['cache']>> {
    if (this.cache && this.now() - this.cache.loadedAt < this.reloadIntervalMs) return this.cache;
    const records = await this.repository.list();
    const newest = records.filter((key) => key.retiredAt === null).at(-1);
    if (!newest) throw new Error('no active signing key');
    const { importJWK } = await import('jose');
    const privateKey = (await importJWK(JSON.parse(this.wrap.open(newest.privateJwk, place(newest.kid))) as JWK, 'RS256')) as CryptoKey;
    this.cache = { loadedAt: this.now(), records, active: { kid: newest.kid, privateKey } };
    return this.cache;
  }

  async activeKey(): Promise<ActiveKey> {
    return (await this.load()).active;
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    const { records } = await this.load();
    return { keys: records.map((key) => JSON.parse(key.publicJwk) as JWK) };
  }

  /**
   * Whether a key still verifies, from what was loaded last (no await: asked on every request for a
   * token verified before). A load older than the reload interval starts a fresh one in the
   * background, so a key pruned by another process (`keys prune`, even with --overlap 0 as an
   * emergency revocation) stops verifying the tokens it signed within about that interval.
   */
  isTrusted(kid: string): boolean {
    if (!this.cache) return false;
    if (this.now() - this.cache.loadedAt >= this.reloadIntervalMs && !this.reloading) {
      this.reloading = this.load()
        .catch(() => undefined)
        .finally(() => (this.reloading = undefined));
    }
    return this.cache.records.some((key) => key.kid === kid);
  }

  private reloading: Promise<unknown> | undefined;

  /** Forces the next read to reload (a token names a kid we have not seen: maybe just rotated). */
  invalidate(): void {
    this.cache = undefined;
  }
}

/** Where a private key is, for the master key's associated data. */
function place(kid: string): string {
  return `signing-key/${kid}`;
}
