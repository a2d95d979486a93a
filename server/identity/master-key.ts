/**
 * Envelope encryption of the secrets the database holds: the token-signing private keys, the
 * link-signing key and the key that seals subscription hmacs. With a master key given from outside
 * the database (PATIENT_DOCS_KEY_FILE or PATIENT_DOCS_MASTER_KEY), each is stored AES-256-GCM
 * encrypted, so a copy of the database (a backup) alone opens nothing. The store keeps opaque
 * strings; wrapping happens here, above it, alike for every store.
 *
 * Stored form: `enc1:<key id>:<iv>:<tag>:<ciphertext>` (base64url parts); the key id is the first
 * 8 bytes of the master key's SHA-256, so a wrong key is named as such instead of failing as
 * "damaged". The associated data names the value's place (`meta/link-signing-key`,
 * `signing-key/<kid>`): a wrapped value copied elsewhere does not open.
 *
 * Rotation: the new key as the master key and the old one as PATIENT_DOCS_PREVIOUS_KEY_FILE (or
 * PATIENT_DOCS_PREVIOUS_MASTER_KEY); the old one is only read, and every value it wrapped is
 * wrapped again with the new one when the server (or an admin command) starts.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config.js';

const PREFIX = 'enc1';
const KEY_BYTES = 32;

/** A master key and the variable it came from (named in errors; never the key itself). */
export interface MasterKey {
  key: Buffer;
  id: string;
  from: string;
}

export interface MasterKeys {
  current: MasterKey;
  previous?: MasterKey;
}

type Env = Record<string, string | undefined>;

export function masterKeyId(key: Buffer): string {
  return createHash('sha256').update(key).digest().subarray(0, 8).toString('hex');
}

/** 32 bytes written as base64 (what `openssl rand -base64 32` prints) or 64 hex digits; a file may also hold the 32 bytes as they are. */
function decodeKey(text: Buffer, from: string): Buffer {
  if (text.length === KEY_BYTES) return Buffer.from(text);
  const written = text.toString('utf8').trim();
  const key = /^[0-9a-f]{64}$/i.test(written) ? Buffer.from(written, 'hex') : /^[A-Za-z0-9+/_-]+={0,2}$/.test(written) ? Buffer.from(written, 'base64') : Buffer.alloc(0);
  if (key.length !== KEY_BYTES) throw new ConfigError(`${from} does not hold a 32-byte key (write one with: openssl rand -base64 32)`);
  return key;
}

function readKey(env: Env, valueVariable: string, fileVariable: string): MasterKey | undefined {
  const value = env[valueVariable]?.trim();
  const file = env[fileVariable]?.trim();
  if (value && file) throw new ConfigError(`give ${fileVariable} or ${valueVariable}, not both`);
  if (value) {
    const key = decodeKey(Buffer.from(value, 'utf8'), valueVariable);
    return { key, id: masterKeyId(key), from: valueVariable };
  }
  if (!file) return undefined;
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new ConfigError(`${fileVariable}=${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  const key = decodeKey(bytes, `${fileVariable}=${file}`);
  return { key, id: masterKeyId(key), from: `${fileVariable}=${file}` };
}

/** The master keys the environment gives, or undefined (secrets stay as they are: plain). */
export function readMasterKeys(env: Env): MasterKeys | undefined {
  const current = readKey(env, 'PATIENT_DOCS_MASTER_KEY', 'PATIENT_DOCS_KEY_FILE');
  const previous = readKey(env, 'PATIENT_DOCS_PREVIOUS_MASTER_KEY', 'PATIENT_DOCS_PREVIOUS_KEY_FILE');
  if (!current) {
    if (previous) throw new ConfigError(`${previous.from.split('=')[0]} is the key being replaced: give the new one as PATIENT_DOCS_KEY_FILE or PATIENT_DOCS_MASTER_KEY too`);
    return undefined;
  }
  return previous && previous.id !== current.id ? { current, previous } : { current };
}

/** Wraps and opens the database's secrets with the master keys; without keys, values pass as they are. */
export class SecretWrap {
  constructor(private readonly keys: MasterKeys | undefined) {}

  get enabled(): boolean {
    return this.keys !== undefined;
  }

  static isWrapped(stored: string): boolean {
    return stored.startsWith(`${PREFIX}:`);
  }

  /** The value as it is to be stored. */
  seal(plain: string, place: string): string {
    if (!this.keys) return plain;
    const { key, id } = this.keys.current;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(place, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [PREFIX, id, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join(':');
  }

  /** The plain value of a stored one; a one-line ConfigError when the key to open it is not given. */
  open(stored: string, place: string): string {
    if (!SecretWrap.isWrapped(stored)) return stored;
    const [, id, iv, tag, ciphertext] = stored.split(':');
    if (!id || iv === undefined || tag === undefined || ciphertext === undefined) throw new ConfigError(`the database's ${describePlace(place)} is damaged (not a value this server wrote)`);
    const key = this.keyFor(id, place);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(place, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new ConfigError(`the database's ${describePlace(place)} does not open with the master key from ${key.from} (key ${id}), although it names that key: the database is damaged or was altered`);
    }
  }

  /** True when the stored value is not wrapped with the current key (plain, or the previous key's). */
  stale(stored: string): boolean {
    if (!this.keys) return false;
    return !stored.startsWith(`${PREFIX}:${this.keys.current.id}:`);
  }

  private keyFor(id: string, place: string): MasterKey {
    if (!this.keys) {
      throw new ConfigError(`the database's secrets are encrypted (${describePlace(place)}, master key ${id}) and no master key is given: set PATIENT_DOCS_KEY_FILE (or PATIENT_DOCS_MASTER_KEY) to that key`);
    }
    const { current, previous } = this.keys;
    if (id === current.id) return current;
    if (id === previous?.id) return previous;
    const given = previous ? `${current.from} (key ${current.id}) and ${previous.from} (key ${previous.id})` : `${current.from} (key ${current.id})`;
    throw new ConfigError(`the database's ${describePlace(place)} is encrypted with master key ${id}, not with ${given}: give that key, as PATIENT_DOCS_PREVIOUS_KEY_FILE while rotating to a new one`);
  }
}

function describePlace(place: string): string {
  if (place.startsWith('signing-key/')) return `token-signing key ${place.slice('signing-key/'.length)}`;
  return place.replace(/^meta\//, '');
}
