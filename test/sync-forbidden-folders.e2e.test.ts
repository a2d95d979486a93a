/**
 * A scan folder is never the app's own state: the sync home (settings, journal, secrets.enc and its
 * key), the bundled server's data folder (its database and stored files, which would upload
 * themselves) or a system folder such as /proc. The headless app's bridge and `patient-docs-sync
 * add-pair` refuse such a folder in plain words, a link that leads there included; a pair whose
 * link is turned towards the sync home later stops syncing and says why, and nothing of the home
 * reaches the server.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BridgeEnvelope, PairView } from '../shared/bridge.js';
import { bridgeCallPath } from '../shared/bridge-http.js';
import { launchHeadless, type HeadlessApp } from '../electron/headless/main.js';
import { freePort, runCli } from './helpers/processes.js';
import { tempDir } from './helpers/server.js';
import { waitFor } from './helpers/sync.js';

const HOME_REFUSAL = 'where Patient Docs keeps its settings, journal and secrets';
const SERVER_DATA_REFUSAL = 'where the bundled server keeps its database and stored files';

describe('folders that hold the app itself are never synced', () => {
  let headless: HeadlessApp;
  let home: string;
  const scratch = tempDir('forbidden-folders');

  const call = async <T>(method: string, args: unknown[]): Promise<BridgeEnvelope<T>> => {
    const response = await fetch(`${headless.http.url}${bridgeCallPath(method as never)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${headless.token}` },
      body: JSON.stringify(args),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as BridgeEnvelope<T>;
  };
  const pairs = async () => {
    const envelope = await call<PairView[]>('listPairs', []);
    if (!envelope.ok) throw new Error(JSON.stringify(envelope.error));
    return envelope.value;
  };
  const demoPatient = async () => (await pairs())[0]!.patientId;

  beforeAll(async () => {
    home = path.join(scratch, 'home');
    headless = await launchHeadless({ home, firstRun: 'embedded', rendererDir: null, log: () => undefined, engine: { folderCheckMs: 200 } });
    await headless.app.updateSettings({ settleMs: 200, webhook: { port: await freePort() } });
  });
  afterAll(async () => {
    await headless?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('keeps the first-run demo folder outside the sync home', async () => {
    const [demo] = await pairs();
    expect(path.relative(home, demo!.folder).startsWith('..')).toBe(true);
    expect(demo!.folderError).toBeNull();
  });

  it('refuses the sync home, the server data folder, /proc/self and links to them, through the bridge', async () => {
    const patientId = await demoPatient();
    fs.symlinkSync(home, path.join(scratch, 'looks like scans'));
    const candidates: Array<[string, string]> = [
      [home, HOME_REFUSAL],
      [path.join(home, 'server-data'), SERVER_DATA_REFUSAL],
      [scratch, HOME_REFUSAL],
      [path.join(scratch, 'looks like scans'), HOME_REFUSAL],
      ['/proc/self', "system folder '/proc'"],
      ['/dev', "system folder '/dev'"],
    ];
    for (const [folder, reason] of candidates) {
      const envelope = await call<PairView>('addPair', [{ folder, patientId }]);
      expect(envelope.ok, folder).toBe(false);
      if (!envelope.ok) expect(envelope.error.message, folder).toContain(reason);
    }
    expect((await pairs()).map((pair) => pair.folder)).not.toContain(home);
    expect(await pairs()).toHaveLength(1);
  });

  it('refuses them in patient-docs-sync add-pair, in one plain line', async () => {
    const patientId = await demoPatient();
    const refused = await runCli(home, ['add-pair', '--folder', path.join(home, 'server-data'), '--patient', patientId]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(SERVER_DATA_REFUSAL);
    expect(refused.stderr).toContain('it can never be a scan folder');
    const proc = await runCli(home, ['add-pair', '--folder', '/proc/self', '--patient', patientId]);
    expect(proc.code).toBe(1);
    expect(proc.stderr).toContain("system folder '/proc'");
  });

  it('stops syncing a folder whose link is turned towards the sync home later, and says why', async () => {
    const patientId = await demoPatient();
    const scans = path.join(scratch, 'chair-1');
    fs.mkdirSync(scans);
    const link = path.join(scratch, 'chair-1 (link)');
    fs.symlinkSync(scans, link);
    fs.writeFileSync(path.join(scans, 'upper.stl'), Buffer.alloc(3000, 1));
    const added = await call<PairView>('addPair', [{ folder: link, patientId, remoteBasePath: '/chair-1' }]);
    if (!added.ok) throw new Error(JSON.stringify(added.error));
    await waitFor('the scan synced', async () => (await pairs()).find((pair) => pair.id === added.value.id)?.counts.synced === 1, 20_000);

    fs.rmSync(link);
    fs.symlinkSync(home, link);
    const stopped = await waitFor('the pair stopped', async () => (await pairs()).find((pair) => pair.id === added.value.id && pair.folderError !== null), 20_000);
    expect(stopped.folderError!.message).toContain(HOME_REFUSAL);
    expect(stopped.state).toBe('attention');
    // Given time for a scan and uploads, nothing of the home went to the server.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const documents = await headless.app.apiClient().search(patientId, { offset: 0, limit: 100 });
    expect(documents.documents.map((document) => document.fileName)).toEqual(['upper.stl']);
    expect(headless.app.engine.fileViews(added.value.id).map((file) => file.relativePath)).toEqual(['upper.stl']);
  }, 60_000);
});
