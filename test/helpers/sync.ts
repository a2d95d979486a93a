/** Helpers for sync-engine tests: an engine wired to a real server, temp folders, waiting. */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ApiClient } from '../../electron/sync/api-client.js';
import { SyncEngine, type EngineTuning } from '../../electron/sync/engine.js';
import { openJournal, type Journal } from '../../electron/sync/journal.js';
import type { SyncPair } from '../../electron/sync/settings.js';
import { CLIENT, ORG, PATIENT, tempDir } from './server.js';

export interface EngineUnderTest {
  engine: SyncEngine;
  journal: Journal;
  api: ApiClient;
  pair: SyncPair;
  folder: string;
  home: string;
  close(): Promise<void>;
}

export async function startEngine(
  serverUrl: string,
  options: { tuning?: Partial<EngineTuning>; folder?: string; remoteBasePath?: string; resumableThreshold?: number; backoffMs?: number; publishEveryMs?: number } = {},
): Promise<EngineUnderTest> {
  const home = tempDir('engine');
  const folder = options.folder ?? tempDir('folder');
  const journal = openJournal(path.join(home, 'journal.db'));
  const api = new ApiClient({
    serverUrl,
    organizationId: ORG,
    credentials: { tokenUrl: `${serverUrl}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret },
    ...(options.resumableThreshold !== undefined ? { resumableThreshold: options.resumableThreshold } : {}),
  });
  const engine = new SyncEngine({
    journal,
    api,
    tuning: { concurrency: 4, settleMs: 300, rescanMinutes: 0, ignorePatterns: [], ...options.tuning },
    backoff: { baseMs: options.backoffMs ?? 200, maxMs: 2000 },
    publishEveryMs: options.publishEveryMs ?? 50,
    idlePollMs: 500,
    folderCheckMs: 200,
  });
  const pair: SyncPair = { id: 'pair-1', folder, patientId: PATIENT, patientName: 'Jane Roe', remoteBasePath: options.remoteBasePath ?? '/scans', paused: false };
  await engine.start([pair]);
  return {
    engine,
    journal,
    api,
    pair,
    folder,
    home,
    close: async () => {
      await engine.stop();
      journal.close();
      fs.rmSync(home, { recursive: true, force: true });
      if (!options.folder) fs.rmSync(folder, { recursive: true, force: true });
    },
  };
}

export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(everyMs);
  }
}

export function writeFile(folder: string, relativePath: string, content: Buffer | string): string {
  const target = path.join(folder, ...relativePath.split('/'));
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.writeFileSync(target, content);
  return target;
}

/** Every document of the patient (SPEC §4.3 rule 2: same sort, offset += page size, stop at total). */
export async function allDocuments(api: ApiClient, patientId = PATIENT, path = '/'): Promise<Array<Awaited<ReturnType<ApiClient['search']>>['documents'][number]>> {
  const documents = [];
  for (let offset = 0; ; ) {
    const page = await api.search(patientId, { path, offset, limit: 1000, sortBy: 'fileName', sortDirection: 'ASC' } as never);
    documents.push(...page.documents);
    offset += page.documents.length;
    if (page.documents.length === 0 || offset >= page.total) return documents;
  }
}
