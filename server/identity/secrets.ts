/** Client secrets are stored as scrypt hashes: `scrypt$N$r$p$salt$hash` (base64url). */
import { randomBytes, scrypt as scryptCallback, scryptSync, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const PARAMS = { N: 16384, r: 8, p: 1 };
const KEY_LENGTH = 32;

function scrypt(secret: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCallback(secret, salt, KEY_LENGTH, { ...options, maxmem: 64 * 1024 * 1024 }, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(secret, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(secret, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * The same check, computed on the calling thread: for the token endpoint's own threads
 * (secret-verifier.ts), which keep this work off libuv's thread pool.
 */
export function verifySecretSync(secret: string, stored: string): boolean {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = scryptSync(secret, Buffer.from(salt, 'base64url'), KEY_LENGTH, { N: Number(n), r: Number(r), p: Number(p), maxmem: 64 * 1024 * 1024 });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * A stored hash that no secret matches, with the parameters of real ones: checking a secret against
 * it costs what checking against a client's own costs, so an unknown client id answers as slowly as
 * a known one with a wrong secret.
 */
export function decoyHash(): string {
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, randomBytes(16).toString('base64url'), randomBytes(KEY_LENGTH).toString('base64url')].join('$');
}

export function generateSecret(): string {
  return randomBytes(32).toString('base64url');
}
