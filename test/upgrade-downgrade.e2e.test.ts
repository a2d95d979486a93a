/**
 * Going back after a failed update: the built server and sync CLI started on a data directory or a
 * sync home that a newer version has already migrated. Each refuses in one line (who wrote it, what
 * to do) and leaves every byte as the newer version left it, instead of running its own code over
 * tables it does not know (or, for the journal, taking it for damage and rebuilding it).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqlite } from '../server/db/sqlite/database.js';
import { SQLITE_MIGRATIONS } from '../server/db/sqlite/store.js';
import { openJournal } from '../electron/sync/journal/open-journal.js';
import { openSettingsChecked } from '../electron/sync/home/settings.js';
import { ADMIN_CLI, ROOT, SERVER_MAIN as SERVER, SYNC_CLI } from './helpers/processes.js';
import { ADMIN_TOKEN, tempDir } from './helpers/server.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function dir(prefix: string): string {
  const made = tempDir(prefix);
  dirs.push(made);
  return made;
}

/** Every file under `directory` with the sha256 of its bytes. */
function snapshot(directory: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of fs.readdirSync(directory, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    out[path.relative(directory, file)] = createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  }
  return out;
}

/** The sync CLI's stderr without its keychain warnings: the lines that tell the problem. */
function problemLines(stderr: string): string[] {
  return stderr
    .trim()
    .split('\n')
    .filter((line) => !line.startsWith('warning:'));
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [file, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

describe('a server started on a database a newer server wrote', () => {
  it('refuses in one line naming the version and what to do, and changes nothing', async () => {
    const dataDir = dir('downgrade-server');
    const file = path.join(dataDir, 'patient-docs.sqlite');
    // What a newer server leaves: this build's migrations, then one it does not know.
    const newer = openSqlite(file, [...SQLITE_MIGRATIONS, { name: '900-from-a-newer-version', sql: 'CREATE TABLE newer_things (id TEXT PRIMARY KEY)' }]);
    newer.prepare("UPDATE schema_migrations SET app_version = '9.4.0' WHERE name = '900-from-a-newer-version'").run();
    newer.close();
    const before = snapshot(dataDir);

    const env = { HOST: '127.0.0.1', PORT: '0', PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN, PATIENT_DOCS_LOG_LEVEL: 'warn' };
    const server = await run(SERVER, [], env);
    expect(server.code).toBe(2);
    expect(server.stdout).not.toContain('listening');
    const lines = server.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^patient-docs-server: PATIENT_DOCS_DATA_DIR=.*: the database .*patient-docs\.sqlite was written by a newer Patient Docs server \(9\.4\.0; this one is \d+\.\d+\.\d+\)/);
    expect(lines[0]).toContain('900-from-a-newer-version');
    expect(lines[0]).toContain('Start the newer version again, or restore the backup taken before the update');

    // The admin CLI opens the same database: it refuses the same way.
    const admin = await run(ADMIN_CLI, ['keys', 'list'], env);
    expect(admin.code).toBe(2);
    expect(admin.stderr.trim().split('\n')).toHaveLength(1);
    expect(admin.stderr).toContain('written by a newer Patient Docs server (9.4.0;');

    // The server's empty lock file may be left; the database is as the newer server left it.
    const after = snapshot(dataDir);
    delete after['server.lock'];
    expect(after).toEqual(before);
    // The newer server can still open it, as it left it.
    const again = new Database(file, { readonly: true });
    expect(again.prepare("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'newer_things'").pluck().get()).toBe(1);
    again.close();
  });

  it('records which version applied each migration (so a later downgrade can name it)', () => {
    const dataDir = dir('migration-version');
    const db = openSqlite(path.join(dataDir, 'patient-docs.sqlite'), SQLITE_MIGRATIONS);
    const versions = db.prepare('SELECT DISTINCT app_version FROM schema_migrations').pluck().all();
    db.close();
    expect(versions).toEqual([JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version]);
  });
});

describe('a sync engine started on a journal a newer version wrote', () => {
  function newerJournal(home: string): string {
    const file = path.join(home, 'journal.db');
    openJournal(file).close();
    const db = new Database(file);
    db.exec("CREATE TABLE newer_things (id INTEGER PRIMARY KEY); INSERT INTO migrations (name, applied_at) VALUES ('900-from-a-newer-version', 1)");
    db.prepare("INSERT INTO files (pair_id, relative_path, remote_path, file_name, size, mtime_ms, state, updated_at) VALUES ('p', 'scan.stl', '/', 'scan.stl', 3, 1, 'failed', 1)").run();
    db.close();
    return file;
  }

  it('is refused, not set aside or rebuilt, and left as it was', () => {
    const home = dir('downgrade-journal');
    const file = newerJournal(home);
    const before = snapshot(home);
    expect(() => openJournal(file)).toThrow(/written by a newer version of Patient Docs .*900-from-a-newer-version.*Install the newer version again/);
    expect(snapshot(home)).toEqual(before);
  });

  it('the sync CLI says so in one line and exits without touching it', async () => {
    const home = dir('downgrade-sync-home');
    newerJournal(home);
    const before = snapshot(home);
    const status = await run(SYNC_CLI, ['status'], { PATIENT_DOCS_SYNC_HOME: home });
    expect(status.code).toBe(1);
    const problem = problemLines(status.stderr);
    expect(problem).toHaveLength(1);
    expect(problem[0]).toMatch(/^patient-docs-sync: The upload record .*journal\.db was written by a newer version of Patient Docs/);
    const after = snapshot(home);
    // The CLI may create its own small files beside the journal (settings, installation id), never change it.
    expect(after['journal.db']).toBe(before['journal.db']);
    expect(Object.keys(after).filter((name) => name.startsWith('journal.db'))).toEqual(Object.keys(before).filter((name) => name.startsWith('journal.db')));
  });
});

describe('a sync engine started on settings a newer version wrote', () => {
  /** This version's settings with one folder, plus a setting of that folder this version does not know. */
  function newerSettings(home: string): string {
    const { settings } = openSettingsChecked(home);
    settings.set('pairs', [{ id: '7d8c2f4e-0a41-4a55-9c1e-1f2a3b4c5d6e', folder: path.join(home, 'scans'), patientId: '5f0e8a3c-1d2b-4c3d-8e9f-000000000001', remoteBasePath: '/', paused: false }]);
    const file = path.join(home, 'settings.json');
    const written = JSON.parse(fs.readFileSync(file, 'utf8')) as { pairs: Array<Record<string, unknown>> };
    written.pairs[0]!.scannerProfile = 'cbct';
    fs.writeFileSync(file, JSON.stringify(written, null, '\t'));
    fs.rmSync(path.join(home, 'settings.last-good.json'), { force: true });
    return file;
  }

  it('is refused in plain words, not taken for damage: the folders are kept for the newer version', () => {
    const home = dir('downgrade-settings');
    newerSettings(home);
    const before = snapshot(home);
    expect(() => openSettingsChecked(home)).toThrow(/settings file .*settings\.json was written by a newer version of Patient Docs.*Install the newer version again/);
    expect(snapshot(home)).toEqual(before);
  });

  it('the sync CLI says so in one line and leaves the settings file as it was', async () => {
    const home = dir('downgrade-settings-cli');
    const file = newerSettings(home);
    const before = fs.readFileSync(file, 'utf8');
    const status = await run(SYNC_CLI, ['status'], { PATIENT_DOCS_SYNC_HOME: home });
    expect(status.code).toBe(1);
    const problem = problemLines(status.stderr);
    expect(problem).toEqual([expect.stringMatching(/^patient-docs-sync: The settings file .* was written by a newer version of Patient Docs/)]);
    expect(status.stdout).not.toContain('repaired');
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
    expect(fs.readdirSync(home).filter((name) => name.includes('unreadable'))).toEqual([]);
  });
});
