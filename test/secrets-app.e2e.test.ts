/**
 * The headless app when its secrets are not where it left them: a keychain that came or went, a
 * damaged encrypted file. It starts, says plainly what is missing, accepts the secret again, and
 * syncs; the bundled server's secret is never made again when it merely moved between stores.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { demoFolderBeside, launchHeadless, type HeadlessApp } from '../electron/headless/main.js';
import { keyringSessionEnv, UNLOCK_KEYRING } from './helpers/keyring.js';
import { freePort, ROOT } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, startTestServer, tempDir, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/sync.js';

async function dropAndWait(headless: HeadlessApp, name: string): Promise<string> {
  const pair = headless.app.settings.get('pairs')[0]!;
  fs.writeFileSync(path.join(pair.folder, name), `scan ${name}`);
  const file = await waitFor(`${name} settled`, () => headless.app.engine.fileViews(pair.id).find((view) => view.fileName === name && (view.state === 'synced' || view.state === 'failed')), 30_000);
  return file.state;
}

describe('secrets missing or unreadable at start (no keychain)', () => {
  const saved = process.env.DBUS_SESSION_BUS_ADDRESS;
  let server: TestServer;
  let home: string;
  let headless: HeadlessApp | undefined;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  beforeEach(() => {
    process.env.DBUS_SESSION_BUS_ADDRESS = 'unix:path=/nonexistent/patient-docs-bus';
    home = tempDir('secrets-app');
  });
  afterEach(async () => {
    await headless?.stop();
    headless = undefined;
    if (saved === undefined) delete process.env.DBUS_SESSION_BUS_ADDRESS;
    else process.env.DBUS_SESSION_BUS_ADDRESS = saved;
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(demoFolderBeside(home), { recursive: true, force: true });
  });

  it('a damaged secrets file: the app starts, shows the client secret missing (not online), and syncs once it is entered again', async () => {
    headless = await launchHeadless({ home, firstRun: 'choose', rendererDir: null, log: () => undefined });
    await headless.app.setupRemote({ serverUrl: server.url, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG });
    const folder = tempDir('secrets-app-folder');
    await headless.app.addPair({ folder, patientId: PATIENT });
    await headless.stop();
    const file = path.join(home, 'secrets.enc');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').slice(0, 30));

    headless = await launchHeadless({ home, firstRun: 'choose', rendererDir: null, log: () => undefined });
    await headless.app.updateSettings({ settleMs: 300, webhook: { port: await freePort() } });
    const status = await headless.app.status();
    expect(status.mode).toBe('remote');
    expect(status.online).toBe(false);
    expect(status.secrets.clientSecretMissing).toBe(true);
    expect(status.secrets.warning).toMatch(/could not be read .*moved to .*unreadable-.*entered again/);
    expect(fs.readdirSync(home).some((name) => name.startsWith('secrets.enc.unreadable-'))).toBe(true);

    await headless.app.updateSettings({ clientSecret: CLIENT.secret });
    expect((await headless.app.status()).secrets.clientSecretMissing).toBe(false);
    expect(await dropAndWait(headless, 'after-reentry.pdf')).toBe('synced');
    expect((await headless.app.status()).online).toBe(true);
    fs.rmSync(folder, { recursive: true, force: true });
  });

  it('the bundled server, secrets file without its key: starts and syncs with the server seeded anew', async () => {
    headless = await launchHeadless({ home, rendererDir: null, log: () => undefined });
    await headless.stop();
    // What names the demo clinic and patient is for this user only, like the settings.
    for (const name of ['embedded-server.json', 'settings.json']) expect(fs.statSync(path.join(home, name)).mode & 0o777, name).toBe(0o600);
    fs.rmSync(path.join(home, 'secrets.enc.key'));

    headless = await launchHeadless({ home, rendererDir: null, log: () => undefined });
    await headless.app.updateSettings({ settleMs: 300, webhook: { port: await freePort() } });
    expect((await headless.app.status()).secrets).toMatchObject({ clientSecretMissing: false, warning: expect.stringMatching(/key file .* is missing/) });
    expect(await dropAndWait(headless, 'after-lost-key.pdf')).toBe('synced');
  });
});

describe('keychain that comes and goes (real keyring)', () => {
  it('the bundled server keeps syncing in every launch, and its secret is not made again when it only moved stores', () => {
    const home = tempDir('keychain-switch');
    const script = path.join(home, 'phase.mjs');
    fs.writeFileSync(
      script,
      `
      import fs from 'node:fs';
      import path from 'node:path';
      import { launchHeadless } from ${JSON.stringify(path.join(ROOT, 'dist/electron/headless/main.js'))};
      const [home, label] = process.argv.slice(2);
      const headless = await launchHeadless({ home, rendererDir: null, log: () => undefined });
      await headless.app.updateSettings({ settleMs: 300, webhook: { port: 0 } });
      const pair = headless.app.settings.get('pairs')[0];
      fs.writeFileSync(path.join(pair.folder, label + '.pdf'), 'scan ' + label);
      const deadline = Date.now() + 30_000;
      let view;
      while (Date.now() < deadline) {
        view = headless.app.engine.fileViews(pair.id).find((file) => file.fileName === label + '.pdf' && (file.state === 'synced' || file.state === 'failed'));
        if (view) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const status = await headless.app.status();
      const embedded = await headless.app.secrets.get('embedded-client-secret');
      console.log(JSON.stringify({ label, backend: status.secrets.backend, online: status.online, missing: status.secrets.clientSecretMissing, file: view?.state ?? 'stuck', embedded }));
      await headless.stop();
      process.exit(0);
      `,
    );
    const run = (label: string, keychain: boolean) =>
      `${keychain ? '' : 'DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent/patient-docs-bus '}node "$SCRIPT" "$APP_HOME" ${label}`;
    const phases = [run('1-file', false), run('2-keychain', true), run('3-no-keychain', false), run('4-keychain-back', true)];
    const result = spawnSync('dbus-run-session', ['--', 'sh', '-c', `${UNLOCK_KEYRING}; ${phases.join('; ')}`], {
      cwd: ROOT,
      env: { ...keyringSessionEnv(home), SCRIPT: script, APP_HOME: path.join(home, 'app') },
      encoding: 'utf8',
      timeout: 240_000,
    });
    fs.rmSync(home, { recursive: true, force: true });
    const launches = result.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { label: string; backend: string; online: boolean; missing: boolean; file: string; embedded: string });
    expect(launches.map(({ embedded: _embedded, ...rest }) => rest), `child output:\n${result.stdout}\n${result.stderr}`).toEqual([
      { label: '1-file', backend: 'encrypted-file', online: true, missing: false, file: 'synced' },
      { label: '2-keychain', backend: 'keychain', online: true, missing: false, file: 'synced' },
      { label: '3-no-keychain', backend: 'encrypted-file', online: true, missing: false, file: 'synced' },
      { label: '4-keychain-back', backend: 'keychain', online: true, missing: false, file: 'synced' },
    ]);
    // Moving into the keychain kept the bundled server's secret; only a launch that could not
    // reach the keychain at all had to make (and seed) a new one, which the keychain then took.
    expect(launches[1]!.embedded).toBe(launches[0]!.embedded);
    expect(launches[2]!.embedded).not.toBe(launches[1]!.embedded);
    expect(launches[3]!.embedded).toBe(launches[2]!.embedded);
  }, 260_000);
});
