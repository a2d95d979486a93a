/**
 * The sync home holds the client secret (encrypted, with its key), the journal of every scan and
 * the bundled server: nothing in it is readable by another user of the workstation. Files are
 * 0600 and folders 0700 whatever the umask, for what the app creates and for what an earlier
 * version left looser (tightened at start).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { launchHeadless, type HeadlessApp } from '../electron/headless/main.js';
import { freePort } from './helpers/processes.js';
import { tempDir } from './helpers/server.js';

/** Every entry of the home with a mode looser than 0600 (files) or 0700 (folders), as `name 0644`. */
function looseEntries(home: string): string[] {
  const loose: string[] = [];
  const visit = (target: string, relative: string) => {
    const stats = fs.lstatSync(target);
    if (stats.isSymbolicLink()) return;
    const mode = stats.mode & 0o777;
    const wanted = stats.isDirectory() ? 0o700 : 0o600;
    if ((mode & ~wanted) !== 0) loose.push(`${relative || '.'} ${mode.toString(8).padStart(4, '0')}`);
    if (stats.isDirectory()) for (const name of fs.readdirSync(target)) visit(path.join(target, name), relative ? `${relative}/${name}` : name);
  };
  visit(home, '');
  return loose;
}

describe('the sync home is private to its user', () => {
  const scratch = tempDir('home-modes');
  let headless: HeadlessApp | undefined;
  const umask = process.umask(0o022);

  afterEach(async () => {
    await headless?.stop();
    headless = undefined;
  });
  afterAll(() => {
    process.umask(umask);
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('creates the journal, the bundled server marker and everything else 0600/0700 under a 022 umask', async () => {
    const home = path.join(scratch, 'new-home');
    headless = await launchHeadless({ home, firstRun: 'embedded', rendererDir: null, log: () => undefined });
    await headless.app.updateSettings({ webhook: { port: await freePort() } });
    expect(fs.existsSync(path.join(home, 'journal.db'))).toBe(true);
    expect(fs.existsSync(path.join(home, 'embedded.json'))).toBe(true);
    expect(looseEntries(home)).toEqual([]);
  });

  it('tightens what an earlier version left readable to others, at start', async () => {
    const home = path.join(scratch, 'old-home');
    headless = await launchHeadless({ home, firstRun: 'embedded', rendererDir: null, log: () => undefined });
    await headless.app.updateSettings({ webhook: { port: await freePort() } });
    await headless.stop();
    headless = undefined;
    fs.chmodSync(home, 0o755);
    for (const name of ['journal.db', 'embedded.json', 'settings.json']) fs.chmodSync(path.join(home, name), 0o644);
    fs.mkdirSync(path.join(home, 'left-over'), { mode: 0o755 });
    fs.writeFileSync(path.join(home, 'left-over', 'notes.txt'), 'x', { mode: 0o644 });
    fs.chmodSync(path.join(home, 'server-data'), 0o755);
    expect(looseEntries(home).length).toBeGreaterThanOrEqual(7);

    headless = await launchHeadless({ home, firstRun: 'embedded', rendererDir: null, log: () => undefined });
    expect(looseEntries(home)).toEqual([]);
  });
});
