import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSettings, SETTINGS_DEFAULTS } from './settings.js';
import type { SyncPair } from './settings.js';

const pair: SyncPair = {
  id: 'scanner-export',
  folder: '/home/clinic/scans',
  patientId: '7b0f2c1e-4a5d-4e6f-8a9b-0c1d2e3f4a5b',
  patientName: 'Jane Roe',
  remoteBasePath: '/Scans/Intraoral',
  paused: false,
};

describe('settings', () => {
  let directory: string;

  beforeEach(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'settings-'));
  });

  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('starts with sensible defaults', () => {
    const settings = openSettings(directory);
    expect(settings.store).toEqual(SETTINGS_DEFAULTS);
    expect(settings.get('concurrency')).toBe(3);
    expect(settings.get('settleMs')).toBe(2000);
    expect(settings.path).toBe(path.join(directory, 'settings.json'));
  });

  it('keeps the connection, pairs and webhook across a restart', async () => {
    const settings = openSettings(directory);
    settings.set('serverUrl', 'https://docs.clinic.example');
    settings.set('organizationId', 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d');
    settings.set('pairs', [pair]);
    settings.set('webhook', { port: 0, publicUrl: 'https://tunnel.example/webhooks/patient-docs' });

    const reopened = openSettings(directory);
    expect(reopened.get('pairs')).toEqual([pair]);
    expect(reopened.get('webhook').publicUrl).toBe('https://tunnel.example/webhooks/patient-docs');
    expect(JSON.parse(await readFile(settings.path, 'utf8'))).toMatchObject({ serverUrl: 'https://docs.clinic.example' });
  });

  it('refuses values that would break syncing, naming the setting', () => {
    const settings = openSettings(directory);
    expect(() => settings.set('concurrency', 0)).toThrow(/concurrency/);
    expect(() => settings.set('serverUrl', 'docs.clinic.example')).toThrow(/serverUrl/);
    expect(() => settings.set('pairs', [{ ...pair, remoteBasePath: 'Scans' }])).toThrow(/remoteBasePath/);
    expect(() => settings.set('pairs', [{ ...pair, patientId: 'jane' }])).toThrow(/patientId/);
    expect(settings.get('pairs')).toEqual([]);
  });

  it('has no place for a secret', () => {
    const settings = openSettings(directory);
    const untyped = settings as unknown as { set(key: string, value: unknown): void };
    expect(() => untyped.set('clientSecret', 'hunter2')).toThrow(/additional properties/);
  });

  it('writes the settings file readable by this user only', async () => {
    const settings = openSettings(directory);
    settings.set('concurrency', 4);
    expect((await stat(settings.path)).mode & 0o777).toBe(0o600);
  });
});
