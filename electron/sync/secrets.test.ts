import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSecretStore } from './secrets.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repositoryRoot = path.resolve(here, '..', '..');
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
      ['--', 'sh', '-c', 'echo -n pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null; node --import tsx "$SCRIPT"'],
      { cwd: repositoryRoot, env: { ...process.env, SCRIPT: script, FALLBACK_FILE: fallbackFile }, encoding: 'utf8', timeout: 45_000 },
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

    it('refuses to read a file that was tampered with', async () => {
      const fallbackFile = path.join(directory, 'secrets.enc');
      const store = await openSecretStore({ serviceName: 'patient-docs-test', fallbackFile });
      await store.set('client-secret', SECRET);
      const sealed = JSON.parse(await readFile(fallbackFile, 'utf8')) as { data: string };
      const bytes = Buffer.from(sealed.data, 'base64');
      bytes[0] = bytes[0]! ^ 0xff;
      await writeFile(fallbackFile, JSON.stringify({ ...sealed, data: bytes.toString('base64') }));
      await expect(store.get('client-secret')).rejects.toThrow(/altered/);
    });
  });
});
