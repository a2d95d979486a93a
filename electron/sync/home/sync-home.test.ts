import { createHash } from 'node:crypto';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSecretStore } from './secrets.js';
import { openSyncHome, serviceName } from './sync-home.js';

describe('sync home secrets without a keychain', () => {
  const saved = process.env.DBUS_SESSION_BUS_ADDRESS;
  let parent: string;

  beforeEach(async () => {
    process.env.DBUS_SESSION_BUS_ADDRESS = 'unix:path=/nonexistent/patient-docs-bus';
    parent = await mkdtemp(path.join(tmpdir(), 'sync-home-'));
  });

  afterEach(async () => {
    if (saved === undefined) delete process.env.DBUS_SESSION_BUS_ADDRESS;
    else process.env.DBUS_SESSION_BUS_ADDRESS = saved;
    await rm(parent, { recursive: true, force: true });
  });

  it('still reads its secrets after the home folder was moved', async () => {
    const before = path.join(parent, 'patient-docs');
    const home = await openSyncHome(before);
    expect(home.secrets.backend).toBe('encrypted-file');
    await home.secrets.set('client-secret', 'kept-across-the-move');
    const after = path.join(parent, 'moved-elsewhere');
    await rename(before, after);

    const moved = await openSyncHome(after);
    expect(moved.secrets.warning).not.toMatch(/could not be read/);
    expect(await moved.secrets.get('client-secret')).toBe('kept-across-the-move');
  });

  it('keeps reading a home made before its keychain name was kept in the folder (named after its path)', async () => {
    const directory = path.join(parent, 'older-home');
    const legacyName = `Patient Docs (${createHash('sha256').update(path.resolve(directory)).digest('hex').slice(0, 12)})`;
    const older = await openSecretStore({ serviceName: legacyName, fallbackFile: path.join(directory, 'secrets.enc') });
    await older.set('client-secret', 'written-by-an-earlier-version');

    expect(serviceName(directory)).toBe(legacyName);
    const home = await openSyncHome(directory);
    expect(await home.secrets.get('client-secret')).toBe('written-by-an-earlier-version');
  });
});
