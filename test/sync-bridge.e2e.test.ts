/**
 * The headless app end to end through its HTTP bridge: first run with the embedded server and the
 * demo folder, a file dropped in syncs, the launch token guards every call, payloads are validated,
 * the connection test names exactly what is wrong, the history exports as CSV.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BridgeEnvelope, BridgeEvent, ConnectionTestResult, FileView, PairView } from '../shared/bridge.js';
import { bridgeCallPath } from '../shared/bridge-http.js';
import { demoFolderBeside, launchHeadless, type HeadlessApp } from '../electron/headless/main.js';
import { openSettings } from '../electron/sync/home/settings.js';
import type { SettingsFileEvent } from '../electron/sync/app/sync-app.js';
import { freePort } from './helpers/processes.js';
import { CLIENT, ORG, OTHER_ORG, READ_ONLY_CLIENT, startTestServer, tempDir, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/sync.js';

describe('headless app and its bridge', () => {
  let headless: HeadlessApp;
  let home: string;
  let server: TestServer;
  const events: BridgeEvent[] = [];

  const call = async <T>(method: string, args: unknown, token: string | null = headless.token): Promise<{ status: number; envelope: BridgeEnvelope<T> }> => {
    const response = await fetch(`${headless.http.url}${bridgeCallPath(method as never)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(args),
    });
    return { status: response.status, envelope: response.status === 200 ? ((await response.json()) as BridgeEnvelope<T>) : (undefined as never) };
  };
  const value = async <T>(method: string, args: unknown[] = []): Promise<T> => {
    const { envelope } = await call<T>(method, args);
    if (!envelope.ok) throw new Error(`${method}: ${JSON.stringify(envelope.error)}`);
    return envelope.value;
  };

  beforeAll(async () => {
    home = tempDir('headless-home');
    server = await startTestServer();
    headless = await launchHeadless({ home, firstRun: 'embedded', rendererDir: null, log: () => undefined });
    headless.app.onEvent((event) => events.push(event));
    await headless.app.updateSettings({ settleMs: 300, webhook: { port: await freePort() } });
  });
  afterAll(async () => {
    await headless?.stop();
    await server?.close();
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(demoFolderBeside(home), { recursive: true, force: true });
  });

  it('first run starts the embedded server with a demo folder; a dropped file syncs and shows through the bridge', async () => {
    const status = await value<{ mode: string; server: { url: string; organizationName: string } }>('getStatus');
    expect(status.mode).toBe('embedded');
    expect(status.server.organizationName).toBe('My Clinic');
    const [pair] = await value<PairView[]>('listPairs');
    expect(pair!.patientName).toBe('Demo Patient');
    fs.writeFileSync(path.join(pair!.folder, 'first scan.stl'), Buffer.alloc(5000, 3));
    const synced = await waitFor('synced', async () => {
      const { files } = await value<{ files: FileView[] }>('listFiles', [{ pairId: pair!.id }]);
      return files.find((file) => file.state === 'synced');
    }, 20_000);
    expect(synced).toMatchObject({ relativePath: 'first scan.stl', remotePath: '/scans', bytesDone: 5000, version: 1, error: null });
    const history = await value<Array<{ event: string }>>('fileHistory', [synced.id]);
    expect(history.map((entry) => entry.event)).toEqual(['queued', 'uploaded', 'verified']);
    const documents = await value<{ total: number; documents: Array<{ fileName: string }> }>('searchDocuments', [pair!.patientId, { offset: 0, limit: 10 }]);
    expect(documents.documents.map((document) => document.fileName)).toEqual(['first scan.stl']);
    const patients = await value<{ patients: Array<{ name: string }> }>('listPatients', [{ name: 'demo' }]);
    expect(patients.patients.map((patient) => patient.name)).toEqual(['Demo Patient']);
    const csv = await value<string>('exportHistoryCsv');
    expect(csv.split('\r\n')[0]).toBe('time,folder,patient,file,server path,event,version,sha256,detail,found missing on the server at');
    expect(csv).toContain('first scan.stl,/scans/first scan.stl,verified,1,');
    // Snapshots for the UI follow within a publish interval.
    await waitFor('file and pair events', () => events.some((event) => event.type === 'files') && events.some((event) => event.type === 'pairs'), 5000);
  });

  it('pauses and resumes a pair', async () => {
    const [pair] = await value<PairView[]>('listPairs');
    expect((await value<PairView>('pausePair', [pair!.id])).state).toBe('paused');
    fs.writeFileSync(path.join(pair!.folder, 'while paused.pdf'), '%PDF-1.4 paused');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const { files } = await value<{ files: FileView[] }>('listFiles', [{ pairId: pair!.id, states: ['queued'] }]);
    expect(files.map((file) => file.relativePath)).toEqual(['while paused.pdf']);
    expect((await value<PairView>('resumePair', [pair!.id])).paused).toBe(false);
    await waitFor('synced after resume', async () => (await value<PairView>('listPairs').then((pairs: unknown) => (pairs as PairView[])[0]!)).counts.synced === 2, 20_000);
  });

  it('guards every call with the launch token and validates every payload', async () => {
    expect((await call('getStatus', [], null)).status).toBe(401);
    expect((await call('getStatus', [], 'wrong-token')).status).toBe(401);
    const events = await fetch(`${headless.http.url}/bridge/events?token=wrong`);
    expect(events.status).toBe(401);
    // DNS rebinding: a page on another name that resolves to 127.0.0.1 is refused.
    const hostile = await new Promise<number>((resolve, reject) => {
      http.get(`${headless.http.url}/`, { headers: { host: 'evil.example:80' } }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      }).on('error', reject);
    });
    expect(hostile).toBe(421);
    for (const [method, args] of [
      ['listFiles', [{ pairId: 5 }]],
      ['addPair', [{ folder: '/tmp', patientId: 'not-a-uuid' }]],
      ['retryFailed', [{ fileId: -1 }]],
      ['getStatus', ['extra']],
      ['updateSettings', [{ concurrency: 1000 }]],
      ['searchDocuments', [ORG, { limit: 5000 }]],
      ['noSuchMethod', []],
    ] as const) {
      const { status, envelope } = await call(method, args);
      expect(status).toBe(200);
      expect(envelope.ok, method).toBe(false);
      if (!envelope.ok) expect(envelope.error.code).toBe('INVALID_INPUT');
    }
    // A method name that is not valid percent-encoding is refused like any other bad call, not a 500.
    const garbled = await fetch(`${headless.http.url}/bridge/call/%E0%A4%A`, { method: 'POST', headers: { authorization: `Bearer ${headless.token}` }, body: '[]' });
    expect(garbled.status).toBe(200);
    expect(await garbled.json()).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT', detail: 'the method name is not valid percent-encoding' } });
    // An absolute-form request target that is no URL at all.
    const malformed = await new Promise<number>((resolve, reject) => {
      http
        .request({ host: '127.0.0.1', port: headless.http.port, path: 'http://[bad/', headers: { host: `127.0.0.1:${headless.http.port}` } }, (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        })
        .on('error', reject)
        .end();
    });
    expect(malformed).toBe(400);
    const missing = await call('addPair', [{ folder: '/no/such/folder', patientId: ORG }]);
    expect(missing.envelope).toMatchObject({ ok: false, error: { code: 'FOLDER_MISSING' } });
  });

  it('names exactly what is wrong with a connection', async () => {
    const test = (input: Record<string, string>) => value<ConnectionTestResult>('testConnection', [{ serverUrl: server.url, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG, ...input }]);
    expect(await test({})).toMatchObject({ ok: true, step: null, error: null });
    expect(await test({ serverUrl: `http://127.0.0.1:${await freePort()}` })).toMatchObject({ ok: false, step: 'reach', error: { code: 'UNREACHABLE' } });
    expect(await test({ clientSecret: 'wrong-secret-0123456789' })).toMatchObject({ ok: false, step: 'authenticate', error: { code: 'BAD_CREDENTIALS' } });
    expect(await test({ clientId: READ_ONLY_CLIENT.id, clientSecret: READ_ONLY_CLIENT.secret })).toMatchObject({ ok: false, step: 'scope', error: { code: 'MISSING_SCOPE' } });
    expect(await test({ organizationId: OTHER_ORG })).toMatchObject({ ok: false, step: 'organization', error: { code: 'WRONG_ORGANIZATION' } });
  });

  it('refuses a webhook public URL the server could never call, and a refused patch saves nothing', async () => {
    const before = await value<{ concurrency: number; webhook: { publicUrl: string | null } }>('getSettings');
    const plain = await call('updateSettings', [{ webhook: { publicUrl: 'http://clinic-tunnel.example' } }]);
    expect(plain.envelope).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT', detail: expect.stringMatching(/https:\/\//) } });
    const garbled = await call('updateSettings', [{ concurrency: before.concurrency + 1, webhook: { publicUrl: 'https://exa mple.com' } }]);
    expect(garbled.envelope).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT', detail: expect.stringMatching(/not a valid address/) } });
    expect(await value('getSettings')).toEqual(before);
  });

  it('sets how often synced files are checked on the server: bounds said in plain words, the engine follows at once', async () => {
    const settingsFile = () => JSON.parse(fs.readFileSync(path.join(home, 'settings.json'), 'utf8')) as Record<string, unknown>;
    expect(await value('getSettings')).toMatchObject({ recheckMinutes: 240 });
    // The default is not written: a settings file never changed here stays readable by versions before this setting.
    expect(settingsFile()).not.toHaveProperty('recheckMinutes');
    const before = await value('getSettings');
    for (const minutes of [5, 14, 10081, 100_000]) {
      const refused = await call('updateSettings', [{ concurrency: 2, recheckMinutes: minutes }]);
      expect(refused.envelope).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT', message: expect.stringMatching(/every 15 minutes at the most and every 7 days \(10080 minutes\) at the least, or never \(0\)/) } });
    }
    expect((await call('updateSettings', [{ recheckMinutes: -1 }])).envelope).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect((await call('updateSettings', [{ recheckMinutes: 30.5 }])).envelope).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect(await value('getSettings')).toEqual(before);

    // The last check was 20 minutes ago: due under a 15-minute interval, not under the default 4 hours.
    const lastCheck = Date.now() - 20 * 60_000;
    headless.app.journal.setLastRecheckAt(lastCheck);
    expect(await value('updateSettings', [{ recheckMinutes: 15 }])).toMatchObject({ recheckMinutes: 15 });
    expect(settingsFile()).toMatchObject({ recheckMinutes: 15 });
    await waitFor('the engine to check the synced files under the new interval, without a restart', () => (headless.app.journal.lastRecheckAt() ?? 0) > lastCheck, 10_000);

    // Off: no pass, however long ago the last one.
    expect(await value('updateSettings', [{ recheckMinutes: 0 }])).toMatchObject({ recheckMinutes: 0 });
    headless.app.journal.setLastRecheckAt(lastCheck);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(headless.app.journal.lastRecheckAt()).toBe(lastCheck);
    expect(await value('updateSettings', [{ recheckMinutes: 10080 }])).toMatchObject({ recheckMinutes: 10080 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(headless.app.journal.lastRecheckAt()).toBe(lastCheck);
  });

  it('takes up settings another process saved, and says in its status why a broken settings file is not', async () => {
    const file = path.join(home, 'settings.json');
    const told: SettingsFileEvent[] = [];
    const stopListening = headless.app.onSettingsFileChange((event) => told.push(event));
    const notices = async () => (await value<{ notices: string[] }>('getStatus')).notices;
    try {
      // `patient-docs-sync config` in another process: conf there replaces the file by a rename.
      openSettings(home).set('bandwidthLimit', 250_000);
      await waitFor('the change to be applied', () => told.length === 1, 10_000);
      expect(told[0]).toEqual({ kind: 'applied', message: `Settings changed in ${file}, applied without a restart: upload limit: 250000 bytes/s (was none).` });
      const good = fs.readFileSync(file, 'utf8');

      fs.writeFileSync(file, '{"concurrency": ');
      await waitFor('the broken file to be told', () => told.length === 2, 10_000);
      const problem = `The settings file ${file} was changed but cannot be used (it is not valid JSON): the settings from before stay in force until it is fixed.`;
      expect(told[1]).toEqual({ kind: 'problem', message: problem });
      expect(await notices()).toContain(problem);
      // The settings in force are still shown; a change is refused rather than saved over the file IT is editing.
      expect(await value('getSettings')).toMatchObject({ bandwidthLimitBytesPerSecond: 250_000 });
      expect((await call('updateSettings', [{ concurrency: 2 }])).envelope).toMatchObject({ ok: false, error: { code: 'UNAVAILABLE', message: `${problem} Nothing was changed.` } });
      expect(fs.readFileSync(file, 'utf8')).toBe('{"concurrency": ');
      // Still syncing meanwhile.
      const [pair] = await value<PairView[]>('listPairs');
      fs.writeFileSync(path.join(pair!.folder, 'while broken.stl'), Buffer.alloc(3000, 7));
      await waitFor('a scan dropped meanwhile to be synced', async () => (await value<{ files: FileView[] }>('listFiles', [{ pairId: pair!.id, states: ['synced'] }])).files.some((entry) => entry.relativePath === 'while broken.stl'), 20_000);

      fs.writeFileSync(file, good);
      await waitFor('the fixed file to be told', () => told.length === 3, 10_000);
      expect(told[2]).toEqual({ kind: 'applied', message: `The settings file ${file} can be used again; nothing in it changed.` });
      expect(await notices()).not.toContain(problem);

      // The app's own changes are in force as they are saved: the watch finds nothing more to say.
      expect((await value<PairView>('pausePair', [pair!.id])).paused).toBe(true);
      await value('updateSettings', [{ concurrency: 2 }]);
      await new Promise((resolve) => setTimeout(resolve, 2500));
      expect((await value<PairView[]>('listPairs'))[0]!.paused).toBe(true);
      expect(told).toHaveLength(3);
      expect((await value<PairView>('resumePair', [pair!.id])).paused).toBe(false);
    } finally {
      stopListening();
      await headless.app.updateSettings({ bandwidthLimitBytesPerSecond: 0 });
    }
  });
});
