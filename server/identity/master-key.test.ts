import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config.js';
import { SqliteStore } from '../db/sqlite/store.js';
import { prepareStore } from '../prepare-store.js';
import { masterKeyId, readMasterKeys, SecretWrap } from './master-key.js';

const base64Key = () => randomBytes(32).toString('base64');

describe('master keys from the environment', () => {
  it('reads base64, hex and a raw 32-byte file; unset means none', () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'master-key-'));
    try {
      const raw = randomBytes(32);
      writeFileSync(path.join(directory, 'raw.key'), raw);
      expect(readMasterKeys({ PATIENT_DOCS_KEY_FILE: path.join(directory, 'raw.key') })?.current.id).toBe(masterKeyId(raw));
      expect(readMasterKeys({ PATIENT_DOCS_MASTER_KEY: raw.toString('hex') })?.current.id).toBe(masterKeyId(raw));
      expect(readMasterKeys({ PATIENT_DOCS_MASTER_KEY: raw.toString('base64') })?.current.from).toBe('PATIENT_DOCS_MASTER_KEY');
      expect(readMasterKeys({})).toBeUndefined();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('refuses in one line what cannot be a key, and never prints the key', () => {
    const short = randomBytes(16).toString('base64');
    expect(() => readMasterKeys({ PATIENT_DOCS_MASTER_KEY: short })).toThrow(new ConfigError('PATIENT_DOCS_MASTER_KEY does not hold a 32-byte key (write one with: openssl rand -base64 32)'));
    expect(() => readMasterKeys({ PATIENT_DOCS_MASTER_KEY: base64Key(), PATIENT_DOCS_KEY_FILE: '/x' })).toThrow('give PATIENT_DOCS_KEY_FILE or PATIENT_DOCS_MASTER_KEY, not both');
    expect(() => readMasterKeys({ PATIENT_DOCS_KEY_FILE: '/nonexistent/master.key' })).toThrow('PATIENT_DOCS_KEY_FILE=/nonexistent/master.key cannot be read (ENOENT)');
    expect(() => readMasterKeys({ PATIENT_DOCS_PREVIOUS_MASTER_KEY: base64Key() })).toThrow(/the key being replaced: give the new one as PATIENT_DOCS_KEY_FILE/);
  });
});

describe('wrapping the database secrets', () => {
  it('opens only at the place it was sealed for, and tells a plain or old-key value from a current one', () => {
    const current = readMasterKeys({ PATIENT_DOCS_MASTER_KEY: base64Key() })!;
    const wrap = new SecretWrap(current);
    const sealed = wrap.seal('secret', 'meta/link-signing-key');
    expect(wrap.open(sealed, 'meta/link-signing-key')).toBe('secret');
    expect(() => wrap.open(sealed, 'meta/webhook-secret-key')).toThrow(/damaged or was altered/);
    expect(wrap.stale(sealed)).toBe(false);
    expect(wrap.stale('plain')).toBe(true);
    expect(new SecretWrap(undefined).stale('plain')).toBe(false);
    const rotated = new SecretWrap({ current: readMasterKeys({ PATIENT_DOCS_MASTER_KEY: base64Key() })!.current, previous: current.current });
    expect(rotated.open(sealed, 'meta/link-signing-key')).toBe('secret');
    expect(rotated.stale(sealed)).toBe(true);
  });

  it('keeps a store without a master key as it was: the same link key, in plain text, at every start', async () => {
    const store = SqliteStore.open(':memory:');
    const first = await prepareStore(store);
    const again = await prepareStore(store);
    expect(again.linkKey.equals(first.linkKey)).toBe(true);
    expect(await store.meta.get('link-signing-key')).toBe(first.linkKey.toString('base64'));
    // A key given later wraps the same keys; the values behind them do not change.
    const keys = readMasterKeys({ PATIENT_DOCS_MASTER_KEY: base64Key() })!;
    const wrapped = await prepareStore(store, keys);
    expect(wrapped.linkKey.equals(first.linkKey)).toBe(true);
    expect(wrapped.webhookSecretKey.equals(first.webhookSecretKey)).toBe(true);
    expect(await store.meta.get('link-signing-key')).toMatch(/^enc1:/);
    await expect(prepareStore(store)).rejects.toThrow(/no master key is given/);
    await store.close();
  });
});
