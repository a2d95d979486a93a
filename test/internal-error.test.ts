/** A 500 says nothing about internals, carries the request id, and the log has the cause. */
import fs from 'node:fs';
import { Writable } from 'node:stream';
import { describe, expect, it, onTestFinished } from 'vitest';
import { buildApp } from '../server/app.js';
import { loadConfig } from '../server/config.js';
import { createContext } from '../server/context.js';
import { hashAdminToken } from '../server/routes/admin.js';
import { SEED_FILE, PATIENT, ORG, CLIENT, tempDir } from './helpers/server.js';
import { readSeedFile } from '../server/domain/seed-file.js';

describe('unexpected failures', () => {
  it('answer 500 problem details with a request id and no internals, and log the cause', async () => {
    const dataDir = tempDir('internal');
    onTestFinished(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const config = loadConfig({ PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_LOG_LEVEL: 'error' });
    const context = await createContext(config);
    await context.directory.applySeed(readSeedFile(SEED_FILE));
    const lines: string[] = [];
    const stream = new Writable({ write: (chunk, _encoding, done) => (lines.push(chunk.toString()), done()) });
    const app = await buildApp(context, { adminTokenHash: hashAdminToken('x'), logger: { level: 'error', stream } });
    const token = await app.inject({ method: 'POST', url: '/oauth2/token', payload: `grant_type=client_credentials&client_id=${CLIENT.id}&client_secret=${CLIENT.secret}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const accessToken = token.json().access_token as string;
    // The database goes away under the running app.
    const store = context.store as unknown as { db: { close(): void } };
    store.db.close();
    const response = await app.inject({
      method: 'POST',
      url: `/v1/patients/${PATIENT}/documents/search`,
      headers: { authorization: `Bearer ${accessToken}`, 'organization-id': ORG, 'content-type': 'application/json' },
      payload: {},
    });
    expect(response.statusCode).toBe(500);
    const problem = response.json();
    expect(problem).toMatchObject({ status: 500, messageKey: 'INTERNAL_ERROR', title: 'Internal Server Error' });
    expect(problem.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(problem.detail).toContain(problem.requestId);
    expect(JSON.stringify(problem)).not.toMatch(/database|sqlite|at .*\.js|Error:/i);
    expect(lines.join('')).toContain(problem.requestId);
    expect(lines.join('')).toContain('database connection is not open');
    await app.close();
  });
});
