/**
 * The database's secrets at rest: the token-signing private key, the link-signing key and the key
 * that seals subscription hmacs. With a master key from a file (PATIENT_DOCS_KEY_FILE), a backup of
 * the database opens none of them; the server refuses to start in one line without the key or with
 * another; a new key takes over with the old one given as PATIENT_DOCS_PREVIOUS_KEY_FILE (every
 * value wrapped again at start, tokens signed before still valid), after which the old key alone no
 * longer opens the database.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { clientToken, freePort, runAdmin, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { ORG, PATIENT, tempDir } from './helpers/server.js';

const scratch = tempDir('secrets-at-rest');
/** Each test starts the server three or four times (a process each, up to 30 s apiece on a loaded machine). */
const START_BUDGET_MS = 150_000;

function keyFile(name: string): string {
  const file = path.join(scratch, name);
  fs.writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  return file;
}

/** What the database file holds for each secret, as stored. */
function storedSecrets(databaseFile: string): string[] {
  const db = new Database(databaseFile, { readonly: true });
  try {
    const privateKeys = (db.prepare('SELECT private_jwk AS value FROM signing_keys').all() as Array<{ value: string }>).map((row) => row.value);
    const meta = (db.prepare("SELECT value FROM meta WHERE key IN ('link-signing-key', 'webhook-secret-key')").all() as Array<{ value: string }>).map((row) => row.value);
    expect(privateKeys.length).toBeGreaterThan(0);
    expect(meta).toHaveLength(2);
    return [...privateKeys, ...meta];
  } finally {
    db.close();
  }
}

async function documentsStatus(url: string, accessToken: string): Promise<number> {
  const response = await fetch(`${url}/v1/patients/${PATIENT}/documents/search`, {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'organization-id': ORG, 'content-type': 'application/json' },
    body: '{}',
  });
  await response.arrayBuffer();
  return response.status;
}

/** The one line a refused start prints (startServerProcess rejects with the process's output). */
async function refusedStart(env: Record<string, string>): Promise<string> {
  const error = await startServerProcess(env).then(
    async (server) => {
      await server.stop();
      return new Error('the server started');
    },
    (failure: unknown) => failure as Error,
  );
  const [first, ...rest] = error.message.split('\n');
  expect(first).toBe('server exited (2):');
  const lines = rest.filter((line) => line.trim() !== '');
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe('secrets at rest', () => {
  const running: ServerProcess[] = [];
  afterAll(async () => {
    for (const server of running) await server.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('keeps every key of the database encrypted with the master key, so a backup alone opens none of them', async () => {
    const dataDir = path.join(scratch, 'encrypted');
    const key = keyFile('master.key');
    const server = await startServerProcess({ PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_KEY_FILE: key });
    running.push(server);
    const accessToken = await clientToken(server.url);
    expect(await documentsStatus(server.url, accessToken)).toBe(200);

    const backup = path.join(scratch, 'backup');
    const made = await runAdmin(dataDir, ['backup', '--to', backup], { PATIENT_DOCS_KEY_FILE: key });
    expect(made.code, made.stderr).toBe(0);
    for (const value of storedSecrets(path.join(backup, 'patient-docs.sqlite'))) {
      expect(value).toMatch(/^enc1:[0-9a-f]{16}:/);
      // No private RSA parameter, no base64 key of 32 bytes.
      expect(value).not.toContain('"d"');
      expect(Buffer.from(value, 'base64').length).not.toBe(32);
    }
    // The backup without the key: refused in one line that says what to give.
    const line = await refusedStart({ PATIENT_DOCS_DATA_DIR: backup, PORT: String(await freePort()) });
    expect(line).toMatch(/^patient-docs-server: the database's secrets are encrypted .* no master key is given: set PATIENT_DOCS_KEY_FILE/);
    // With another key: refused, naming the key it needs.
    const other = await refusedStart({ PATIENT_DOCS_DATA_DIR: backup, PORT: String(await freePort()), PATIENT_DOCS_KEY_FILE: keyFile('other.key') });
    expect(other).toMatch(/is encrypted with master key [0-9a-f]{16}, not with PATIENT_DOCS_KEY_FILE=.*other\.key \(key [0-9a-f]{16}\)/);
  }, START_BUDGET_MS);

  it('rotates to a new master key: the old one is read once, every value is wrapped again, tokens stay valid', async () => {
    const dataDir = path.join(scratch, 'rotated');
    const oldKey = keyFile('old.key');
    const newKey = keyFile('new.key');
    const port = String(await freePort());
    const first = await startServerProcess({ PATIENT_DOCS_DATA_DIR: dataDir, PORT: port, PATIENT_DOCS_KEY_FILE: oldKey });
    const issuedBefore = await clientToken(first.url);
    await first.stop();

    const rotated = await startServerProcess({ PATIENT_DOCS_DATA_DIR: dataDir, PORT: port, PATIENT_DOCS_KEY_FILE: newKey, PATIENT_DOCS_PREVIOUS_KEY_FILE: oldKey });
    running.push(rotated);
    expect(await documentsStatus(rotated.url, issuedBefore)).toBe(200);
    const prefixes = new Set(storedSecrets(path.join(dataDir, 'patient-docs.sqlite')).map((value) => value.split(':').slice(0, 2).join(':')));
    expect(prefixes.size).toBe(1);
    await rotated.stop();

    const line = await refusedStart({ PATIENT_DOCS_DATA_DIR: dataDir, PORT: port, PATIENT_DOCS_KEY_FILE: oldKey });
    expect(line).toContain('is encrypted with master key');
    const after = await startServerProcess({ PATIENT_DOCS_DATA_DIR: dataDir, PORT: port, PATIENT_DOCS_KEY_FILE: newKey });
    running.push(after);
    expect(await documentsStatus(after.url, issuedBefore)).toBe(200);
  }, START_BUDGET_MS);

  it('encrypts the secrets of a database that had them in plain text once a key is given, and keeps them plain without one', async () => {
    const dataDir = path.join(scratch, 'plain-first');
    const port = String(await freePort());
    const plain = await startServerProcess({ PATIENT_DOCS_DATA_DIR: dataDir, PORT: port });
    await plain.stop();
    expect(storedSecrets(path.join(dataDir, 'patient-docs.sqlite')).some((value) => value.startsWith('enc1:'))).toBe(false);
    const encrypted = await startServerProcess({ PATIENT_DOCS_DATA_DIR: dataDir, PORT: port, PATIENT_DOCS_MASTER_KEY: randomBytes(32).toString('base64') });
    running.push(encrypted);
    expect(await documentsStatus(encrypted.url, await clientToken(encrypted.url))).toBe(200);
    expect(storedSecrets(path.join(dataDir, 'patient-docs.sqlite')).every((value) => value.startsWith('enc1:'))).toBe(true);
  }, START_BUDGET_MS);
});
