/** The request log never holds a working download link or a secret sent in a query string. */
import fs from 'node:fs';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../server/app.js';
import { loadConfig } from '../server/config.js';
import { createContext } from '../server/context.js';
import { hashAdminToken } from '../server/routes/admin.js';
import { tempDir } from './helpers/server.js';

describe('request log', () => {
  it('logs signed links and token requests with their signature and secrets replaced', async () => {
    const dataDir = tempDir('log-redaction');
    const config = loadConfig({ PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_LOG_LEVEL: 'info' });
    const context = await createContext(config);
    const lines: string[] = [];
    const stream = new Writable({ write: (chunk, _encoding, done) => (lines.push(chunk.toString()), done()) });
    const app = await buildApp(context, { adminTokenHash: hashAdminToken('x'), logger: { level: 'info', stream } });
    try {
      await app.inject({ method: 'GET', url: '/storage/v1/documents/00000000-0000-4000-8000-000000000001/content?v=1&expires=1900000000&sig=SIGNATURE-VALUE' });
      await app.inject({ method: 'POST', url: '/oauth2/token?client_id=c1&client_secret=QUERY-SECRET', payload: 'grant_type=client_credentials', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      const log = lines.join('');
      expect(log).toContain('"url":"/storage/v1/documents/00000000-0000-4000-8000-000000000001/content?v=1&expires=1900000000&sig=[redacted]"');
      expect(log).toContain('client_secret=[redacted]');
      expect(log).not.toContain('SIGNATURE-VALUE');
      expect(log).not.toContain('QUERY-SECRET');
    } finally {
      await app.close();
      await context.store.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
