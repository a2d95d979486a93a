/**
 * New case folders of a scanner inbox (issues 27 and 30): a scanner writes a case folder and its
 * files within a second — nested, renamed into place from a temp folder, with and without pauses —
 * and staff (or identification) give it a patient while it is still being written. Every file of
 * every case ends synced to that patient with the periodic rescan off, so none waits for it: the
 * case's pair lists its folder when it starts, and its watch lists folders that appear after.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SyncApp } from '../electron/sync/app/sync-app.js';
import { openSyncHome } from '../electron/sync/home/sync-home.js';
import { startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { planRound, ScanWriter, seededRandom, type RoundKind } from './helpers/scan-writer.js';
import { allDocuments, waitFor } from './helpers/sync.js';

const ROUNDS = 40;
const KINDS: RoundKind[] = ['new folder', 'nested new folders', 'nested one by one', 'renamed from a temp folder inside', 'renamed from outside', 'new folder in an old one'];
const SEED = Math.floor(Math.random() * 2 ** 31);

describe(`new case folders in an inbox reach their patient without a rescan (seed ${SEED})`, () => {
  const scratch = tempDir('inbox-new-cases');
  const inbox = path.join(scratch, 'exports');
  const staging = path.join(scratch, 'staging');
  let server: ServerProcess;
  let app: SyncApp;
  let writer: ScanWriter;

  beforeAll(async () => {
    fs.mkdirSync(inbox, { recursive: true });
    fs.mkdirSync(staging, { recursive: true });
    server = await startServerProcess();
    const opened = await openSyncHome(path.join(scratch, 'home'));
    app = new SyncApp({ home: path.join(scratch, 'home'), settings: opened.settings, secrets: opened.secrets, shell: 'headless', version: 'test', webhooks: false, inboxPollMs: 50 });
    await app.setupRemote({ serverUrl: server.url, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG });
    await app.updateSettings({ settleMs: 300, rescanMinutes: 0, concurrency: 4 });
    await app.inbox.addInbox({ folder: inbox, remoteBasePath: '/inbox' }, []);
    await app.start();
    writer = ScanWriter.start();
  });
  afterAll(async () => {
    await writer?.close();
    await app?.stop();
    await server?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it(`${ROUNDS} rounds: every file of every case is synced to the patient the case was given while being written`, async () => {
    const random = seededRandom(SEED);
    const inboxId = app.inbox.inboxes()[0]!.id;
    const expected: string[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const kind = round === 0 ? 'new folder' : KINDS[Math.floor(random() * KINDS.length)]!;
      const plan = planRound({ root: inbox, staging, round, kind, paused: random() < 0.5, random, maxFiles: 60 });
      const name = plan.files[0]!.split('/')[0]!;
      const writing = writer.run(plan.steps);
      // Given a patient as soon as the app sees the case, while the scanner may still be writing it.
      await waitFor(`case ${name} to be seen`, () => app.inbox.cases(inboxId).some((item) => item.name === name), 20_000, 10);
      if (app.inbox.cases(inboxId).find((item) => item.name === name)!.patientId === null) await app.inbox.assign(inboxId, name, PATIENT);
      await writing;
      expected.push(...plan.files.map((file) => `/inbox/${file}`));
    }
    const deadline = Date.now() + 120_000;
    let filed: string[] = [];
    while (Date.now() < deadline) {
      filed = (await allDocuments(app.apiClient(), PATIENT, '/')).filter((document) => document.hasContent && document.path.startsWith('/inbox')).map((document) => `${document.path}/${document.fileName}`);
      if (filed.length >= expected.length) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(expected.filter((file) => !filed.includes(file)), `files never synced (seed ${SEED})`).toEqual([]);
    // The server holds every file; the app calls a case synced once it has checked each upload (hasContent), moments later.
    const unsynced = () => app.inbox.cases(inboxId).filter((item) => item.state !== 'synced').map((item) => item.name);
    await waitFor('every case to be synced', () => unsynced().length === 0, 30_000).catch(() => undefined);
    expect(unsynced()).toEqual([]);
  }, 300_000);
});
