import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { keyringSessionEnv, UNLOCK_KEYRING } from '../../../test/helpers/keyring.js';
import { openSecretStore } from './secrets.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repositoryRoot = path.resolve(here, '..', '..', '..');
const SECRET = 'client-secret-7f3a9c';

function requireBinary(name: string): void {
  const found = spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
  if (!found) {
    throw new Error(`'${name}' is missing: install the system packages 'dbus' and 'gnome-keyring' (apt-get install dbus gnome-keyring) to run the keychain test`);
  }
}

describe('secret store', () => {
  let directory: string;

  beforeEach(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'secrets-'));
  });

  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('keeps secrets in the real system keyring when one is running', async () => {
    requireBinary('dbus-run-session');
    requireBinary('gnome-keyring-daemon');
    const fallbackFile = path.join(directory, 'secrets.enc');
    const script = path.join(directory, 'keyring-round-trip.mts');
    await writeFile(
      script,
      `
      import { createRequire } from 'node:module';
      import { openSecretStore } from ${JSON.stringify(path.join(here, 'secrets.ts'))};
      // Read the keyring directly, bypassing the store, to prove where the secret went.
      const keytar = createRequire(${JSON.stringify(path.join(repositoryRoot, 'package.json'))})('keytar');
      const store = await openSecretStore({ serviceName: 'patient-docs-test', fallbackFile: process.env.FALLBACK_FILE! });
      await store.set('client-secret', ${JSON.stringify(SECRET)});
      const inKeyring = await keytar.getPassword('patient-docs-test', 'client-secret');
      const readBack = await store.get('client-secret');
      const deleted = await store.delete('client-secret');
      const afterDelete = (await store.get('client-secret')) ?? null;
      console.log(JSON.stringify({ backend: store.backend, warning: store.warning ?? null, inKeyring, readBack, deleted, afterDelete }));
      `,
    );
    const result = spawnSync(
      'dbus-run-session',
      ['--', 'sh', '-c', `${UNLOCK_KEYRING}; node --import tsx "$SCRIPT"`],
      { cwd: repositoryRoot, env: { ...keyringSessionEnv(directory), SCRIPT: script, FALLBACK_FILE: fallbackFile }, encoding: 'utf8', timeout: 45_000 },
    );
    const lastLine = result.stdout.trim().split('\n').at(-1) ?? '';
    expect(lastLine, `child output:\n${result.stdout}\n${result.stderr}`).toMatch(/^\{/);
    expect(JSON.parse(lastLine)).toEqual({
      backend: 'keychain',
      warning: null,
      inKeyring: SECRET,
      readBack: SECRET,
      deleted: true,
      afterDelete: null,
    });
    expect(existsSync(fallbackFile)).toBe(false);
  });

  it('finds secrets again when the keychain comes or goes, the newest copy winning, and moves them into the keychain', async () => {
    requireBinary('dbus-run-session');
    requireBinary('gnome-keyring-daemon');
    const fallbackFile = path.join(directory, 'secrets.enc');
    const script = path.join(directory, 'keyring-phase.mts');
    // One launch of the app per phase: a phase without a keychain points D-Bus nowhere.
    await writeFile(
      script,
      `
      import { createRequire } from 'node:module';
      import { openSecretStore } from ${JSON.stringify(path.join(here, 'secrets.ts'))};
      const [phase, write] = process.argv.slice(2);
      const store = await openSecretStore({ serviceName: 'patient-docs-switch', fallbackFile: process.env.FALLBACK_FILE!, probeTimeoutMs: 3000 });
      const seen = (await store.get('client-secret')) ?? null;
      if (write) await store.set('client-secret', write);
      let inKeyring = null;
      if (store.backend === 'keychain') {
        inKeyring = await createRequire(${JSON.stringify(path.join(repositoryRoot, 'package.json'))})('keytar').getPassword('patient-docs-switch', 'client-secret');
      }
      console.log(JSON.stringify({ phase, backend: store.backend, seen, inKeyring }));
      `,
    );
    const noKeychain = 'DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent/patient-docs-bus';
    const phases = [
      `${noKeychain} node --import tsx "$SCRIPT" 1-file from-file`,
      'node --import tsx "$SCRIPT" 2-keychain',
      `${noKeychain} node --import tsx "$SCRIPT" 3-file-again re-entered`,
      'node --import tsx "$SCRIPT" 4-keychain-back',
      `${noKeychain} node --import tsx "$SCRIPT" 5-file-empty`,
    ];
    const result = spawnSync(
      'dbus-run-session',
      ['--', 'sh', '-c', `${UNLOCK_KEYRING}; ${phases.join('; ')}`],
      { cwd: repositoryRoot, env: { ...keyringSessionEnv(directory), SCRIPT: script, FALLBACK_FILE: fallbackFile }, encoding: 'utf8', timeout: 90_000 },
    );
    const lines = result.stdout.trim().split('\n').filter((line) => line.startsWith('{'));
    expect(lines, `child output:\n${result.stdout}\n${result.stderr}`).toHaveLength(5);
    expect(lines.map((line) => JSON.parse(line) as unknown)).toEqual([
      { phase: '1-file', backend: 'encrypted-file', seen: null, inKeyring: null },
      // Written to the file while there was no keychain: found, and moved into the keychain.
      { phase: '2-keychain', backend: 'keychain', seen: 'from-file', inKeyring: 'from-file' },
      // The keychain is out of reach: the file no longer holds it (it moved), so it is entered again.
      { phase: '3-file-again', backend: 'encrypted-file', seen: null, inKeyring: null },
      // The copy entered without the keychain is newer than the keychain's: it wins.
      { phase: '4-keychain-back', backend: 'keychain', seen: 're-entered', inKeyring: 're-entered' },
      // ...and it left the file once the keychain held it.
      { phase: '5-file-empty', backend: 'encrypted-file', seen: null, inKeyring: null },
    ]);
  }, 120_000);

  describe('without a reachable keychain', () => {
    const saved = process.env.DBUS_SESSION_BUS_ADDRESS;

    beforeEach(() => {
      process.env.DBUS_SESSION_BUS_ADDRESS = 'unix:path=/nonexistent/patient-docs-bus';
    });

    afterEach(() => {
      if (saved === undefined) delete process.env.DBUS_SESSION_BUS_ADDRESS;
      else process.env.DBUS_SESSION_BUS_ADDRESS = saved;
    });

    it('falls back to an encrypted file, says so, and never writes the secret in clear', async () => {
      const fallbackFile = path.join(directory, 'state', 'secrets.enc');
      const store = await openSecretStore({ serviceName: 'patient-docs-test', fallbackFile });
      expect(store.backend).toBe('encrypted-file');
      expect(store.warning).toMatch(/No usable system keychain/);
      expect(store.warning).toContain(fallbackFile);

      await store.set('client-secret', SECRET);
      await store.set('webhook-hmac', 'hmac-value-123');
      const onDisk = await readFile(fallbackFile, 'utf8');
      expect(onDisk).not.toContain(SECRET);
      expect(onDisk).not.toContain(Buffer.from(SECRET).toString('base64'));
      expect((await stat(fallbackFile)).mode & 0o777).toBe(0o600);
      expect((await stat(`${fallbackFile}.key`)).mode & 0o777).toBe(0o600);

      const reopened = await openSecretStore({ serviceName: 'patient-docs-test', fallbackFile });
      expect(await reopened.get('client-secret')).toBe(SECRET);
      expect(await reopened.delete('webhook-hmac')).toBe(true);
      expect(await reopened.delete('webhook-hmac')).toBe(false);
      expect(await store.get('webhook-hmac')).toBeUndefined();
    });

    it('sets a tampered file aside (never deleting it), says so, and takes the secret again', async () => {
      const fallbackFile = path.join(directory, 'secrets.enc');
      const store = await openSecretStore({ serviceName: 'patient-docs-test', fallbackFile });
      await store.set('client-secret', SECRET);
      const sealed = JSON.parse(await readFile(fallbackFile, 'utf8')) as { data: string };
      const bytes = Buffer.from(sealed.data, 'base64');
      bytes[0] = bytes[0]! ^ 0xff;
      const tampered = JSON.stringify({ ...sealed, data: bytes.toString('base64') });
      await writeFile(fallbackFile, tampered);
      expect(await store.get('client-secret')).toBeUndefined();
      expect(store.warning).toMatch(/could not be read \(it was altered/);
      const [aside] = (await readdir(directory)).filter((name) => name.startsWith('secrets.enc.unreadable-'));
      expect(await readFile(path.join(directory, aside!), 'utf8')).toBe(tampered);
      await store.set('client-secret', 'entered-again');
      expect(await (await openSecretStore({ serviceName: 'patient-docs-test', fallbackFile })).get('client-secret')).toBe('entered-again');
    });

    const damages: Array<[string, (file: string) => Promise<void>, RegExp]> = [
      ['truncated', async (file) => writeFile(file, (await readFile(file, 'utf8')).slice(0, 30)), /damaged/],
      ['emptied', async (file) => writeFile(file, ''), /damaged/],
      ['without its key file', async (file) => rm(`${file}.key`), /key file .* is missing/],
      ['with a malformed key file', async (file) => writeFile(`${file}.key`, 'short'), /does not hold a 32-byte key/],
    ];
    for (const [label, damage, reason] of damages) {
      it(`opens a secrets file ${label}: sets it aside, says the secrets must be entered again, and accepts new ones`, async () => {
        const fallbackFile = path.join(directory, 'secrets.enc');
        await (await openSecretStore({ serviceName: 'patient-docs-test', fallbackFile })).set('client-secret', SECRET);
        await damage(fallbackFile);
        const damaged = await readFile(fallbackFile);
        const keyBefore = existsSync(`${fallbackFile}.key`);

        const store = await openSecretStore({ serviceName: 'patient-docs-test', fallbackFile });
        expect(store.warning).toMatch(reason);
        expect(store.warning).toMatch(/must be entered again/);
        expect(store.warning).toMatch(/No usable system keychain/);
        // Opening it made no new key: a new key cannot open anything that exists.
        expect(existsSync(`${fallbackFile}.key`)).toBe(keyBefore);
        expect(await store.get('client-secret')).toBeUndefined();
        const aside = (await readdir(directory)).filter((name) => name.startsWith('secrets.enc.unreadable-') && !name.includes('.key'));
        expect(aside).toHaveLength(1);
        expect(await readFile(path.join(directory, aside[0]!))).toEqual(damaged);

        await store.set('client-secret', 'entered-again');
        const reopened = await openSecretStore({ serviceName: 'patient-docs-test', fallbackFile });
        expect(reopened.warning).not.toMatch(/could not be read/);
        expect(await reopened.get('client-secret')).toBe('entered-again');
      });
    }
  });
});
