/**
 * A scanner workstation loses power: its journal or settings file may be left truncated, zeroed or
 * garbage. `patient-docs-sync run` (and the app, which opens the same home) must start anyway: the
 * damaged file is set aside (never deleted), the journal is rebuilt by rescanning with what the
 * server holds adopted (no second document, no new version), and the user is told once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSettingsChecked } from '../electron/sync/home/settings.js';
import { ApiClient } from '../electron/sync/api/api-client.js';
import { runCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { allDocuments, writeFile } from './helpers/sync.js';

const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: '100' };

describe('a power cut damages the sync home', () => {
  let server: ServerProcess;
  let api: ApiClient;
  const scratch = tempDir('local-power-cut');

  /** A home whose folder synced one file to `/name`. */
  async function syncedHome(name: string): Promise<{ home: string; scans: string }> {
    const home = path.join(scratch, name);
    const scans = path.join(scratch, `${name}-scans`);
    writeFile(scans, 'upper.stl', `solid ${name}`);
    expect((await runCli(home, ['connect', '--server', server.url, '--client-id', CLIENT.id, '--organization', ORG], env)).code).toBe(0);
    expect((await runCli(home, ['config', '--settle-ms', '200'], env)).code).toBe(0);
    expect((await runCli(home, ['add-pair', '--folder', scans, '--patient', PATIENT, '--path', `/${name}`], env)).code).toBe(0);
    expect((await runCli(home, ['run', '--once', '--timeout', '60'], env)).code).toBe(0);
    return { home, scans };
  }

  const versions = async (name: string) =>
    (await allDocuments(api, PATIENT, `/${name}`)).map((document) => `${document.fileName} v${document.version}`).sort();

  beforeAll(async () => {
    server = await startServerProcess();
    api = new ApiClient({ serverUrl: server.url, organizationId: ORG, credentials: { tokenUrl: `${server.url}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret } });
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('a garbage journal, then a zeroed settings file: each set aside and repaired, nothing uploaded twice, the user told once', async () => {
    const { home, scans } = await syncedHome('power-cut');
    fs.writeFileSync(path.join(home, 'journal.db'), 'not a database '.repeat(300));
    writeFile(scans, 'lower.stl', 'solid lower');

    const first = await runCli(home, ['run', '--once', '--timeout', '60'], env);
    expect(first.stderr).toMatch(/upload record on this computer was damaged .* rebuilt/);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(fs.readdirSync(home).filter((entry) => /^journal\.db\.unreadable-[^.]*Z$/.test(entry))).toHaveLength(1);
    // The scan already on the server was adopted as it is: one document, still version 1.
    expect(await versions('power-cut')).toEqual(['lower.stl v1', 'upper.stl v1']);

    const settings = path.join(home, 'settings.json');
    fs.writeFileSync(settings, Buffer.alloc(fs.statSync(settings).size));
    writeFile(scans, 'bite.stl', 'solid bite');
    const second = await runCli(home, ['run', '--once', '--timeout', '60'], env);
    expect(second.stderr).toMatch(/settings file on this computer was damaged .* put back/);
    expect(second.stderr).not.toContain('upload record');
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(fs.readdirSync(home).filter((entry) => entry.startsWith('settings.json.unreadable-'))).toHaveLength(1);
    expect(await versions('power-cut')).toEqual(['bite.stl v1', 'lower.stl v1', 'upper.stl v1']);
  });

  it('without a saved copy the settings start from the defaults, and say so', () => {
    const home = path.join(scratch, 'no-copy');
    fs.mkdirSync(home);
    fs.writeFileSync(path.join(home, 'settings.json'), '{"pairs": [');
    const opened = openSettingsChecked(home);
    expect(opened.recovery).toMatchObject({ restored: false, setAsideAs: expect.stringContaining('settings.json.unreadable-') });
    expect(fs.readFileSync(opened.recovery!.setAsideAs, 'utf8')).toBe('{"pairs": [');
    expect(opened.settings.get('pairs')).toEqual([]);
    opened.settings.set('concurrency', 2);
    expect(openSettingsChecked(home).recovery).toBeUndefined();
  });
});
