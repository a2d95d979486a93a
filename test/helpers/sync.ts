/** Helpers for sync-engine tests: an engine wired to a real server, temp folders, waiting. */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ApiClient } from '../../electron/sync/api/api-client.js';
import type { BandwidthLimiter } from '../../electron/sync/upload/bandwidth.js';
import type { DocumentApi } from '../../electron/sync/api/document-api.js';
import { SyncEngine, type EngineOptions, type EngineTuning } from '../../electron/sync/engine/engine.js';
import { sha256File } from '../../electron/sync/upload/hash.js';
import type { Journal } from '../../electron/sync/journal/journal.js';
import { openJournal } from '../../electron/sync/journal/open-journal.js';
import { syncFile, type PipelineDeps, type PipelineOutcome, type PipelinePair } from '../../electron/sync/upload/pipeline.js';
import type { SyncPair } from '../../electron/sync/home/settings.js';
import { statIfPresent } from '../../electron/sync/watch/stability.js';
import type { PieceProbe } from '../../electron/sync/api/tus-upload.js';
import { SyncApp } from '../../electron/sync/app/sync-app.js';
import { openSyncHome } from '../../electron/sync/home/sync-home.js';
import { afterAll, beforeAll } from 'vitest';
import { startServerProcess, type ServerProcess } from './processes.js';
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
  options: {
    tuning?: Partial<EngineTuning>;
    folder?: string;
    remoteBasePath?: string;
    resumableThreshold?: number;
    backoffMs?: number;
    publishEveryMs?: number;
    certificateAuthority?: string[];
    limiter?: BandwidthLimiter;
    pieceProbe?: PieceProbe;
    /** Engine options beyond these (e.g. recheckMs, probeMs). */
    engine?: Partial<Omit<EngineOptions, 'journal' | 'api' | 'tuning'>>;
  } = {},
): Promise<EngineUnderTest> {
  const home = tempDir('engine');
  const folder = options.folder ?? tempDir('folder');
  const journal = openJournal(path.join(home, 'journal.db'));
  const api = new ApiClient({
    serverUrl,
    organizationId: ORG,
    credentials: { tokenUrl: `${serverUrl}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret },
    ...(options.resumableThreshold !== undefined ? { resumableThreshold: options.resumableThreshold } : {}),
    ...(options.certificateAuthority ? { certificateAuthority: options.certificateAuthority } : {}),
    ...(options.limiter ? { limiter: options.limiter } : {}),
    ...(options.pieceProbe ? { pieceProbe: options.pieceProbe } : {}),
  });
  const engine = new SyncEngine({
    journal,
    api,
    tuning: { concurrency: 4, settleMs: 300, rescanMinutes: 0, ignorePatterns: [], ...options.tuning },
    backoff: { baseMs: options.backoffMs ?? 200, maxMs: Math.max(2000, options.backoffMs ?? 200) },
    publishEveryMs: options.publishEveryMs ?? 50,
    idlePollMs: 500,
    folderCheckMs: 200,
    ...options.engine,
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

/**
 * The per-file pipeline driven by hand (the unit the engine runs per file), with the engine's real
 * client and folder against a real server process and a journal of its own (the engine is
 * stopped), so that a crash or a change lands at an exact step. Call it in a describe block: it
 * starts everything before the block's tests and stops it after them.
 */
export interface PipelineBench {
  readonly server: ServerProcess;
  readonly sut: EngineUnderTest;
  readonly journal: Journal;
  readonly pair: PipelinePair;
  /** One run of the pipeline for a row, with quick backoff (and any dependency replaced). */
  run(fileId: number, overrides?: Partial<PipelineDeps>): Promise<PipelineOutcome>;
  /** The engine's client with its upload replaced: where a test makes something happen mid-upload. */
  withUpload(upload: DocumentApi['upload']): DocumentApi;
}

export function usePipelineBench(options: Parameters<typeof startEngine>[1]): PipelineBench {
  let state: { server: ServerProcess; sut: EngineUnderTest; journal: Journal; home: string } | undefined;
  const started = () => {
    if (!state) throw new Error('the pipeline bench runs inside its describe block only');
    return state;
  };
  beforeAll(async () => {
    const server = await startServerProcess();
    const sut = await startEngine(server.url, options);
    await sut.engine.stop();
    const home = tempDir('pipeline-journal');
    state = { server, sut, journal: openJournal(path.join(home, 'journal.db')), home };
  });
  afterAll(async () => {
    if (!state) return;
    state.journal.close();
    fs.rmSync(state.home, { recursive: true, force: true });
    await state.sut.close();
    await state.server.stop();
  });
  return {
    get server() {
      return started().server;
    },
    get sut() {
      return started().sut;
    },
    get journal() {
      return started().journal;
    },
    get pair() {
      return { id: 'pair-1', folder: started().sut.folder, patientId: PATIENT };
    },
    withUpload(upload) {
      const { api } = started().sut;
      return {
        createDocument: (...args) => api.createDocument(...args),
        search: (...args) => api.search(...args),
        listPatients: (query) => api.listPatients(query),
        abandonUpload: (...args) => api.abandonUpload(...args),
        upload,
      };
    },
    run(fileId, overrides = {}) {
      const { sut, journal } = started();
      return syncFile(fileId, this.pair, { journal, api: sut.api, backoff: { baseMs: 10, maxMs: 10 }, now: Date.now, stat: statIfPresent, hash: sha256File, ...overrides });
    },
  };
}

/**
 * A sync home set up as `connect`, `config --settle-ms 200` and `add-pair` would (in-process: quicker
 * than three CLI runs, each a Node start), for tests of the CLI's `run`, `status`, `add-pair` and
 * `retry`. Without `folder`, no pair is added. The webhook listener of a later `run` takes any free
 * port: the default (8787) is one port for every test file running at the same time.
 */
export async function prepareSyncHome(home: string, options: { serverUrl: string; folder?: string; remoteBasePath?: string; patientName?: string }): Promise<void> {
  const opened = await openSyncHome(home);
  const app = new SyncApp({ home, settings: opened.settings, secrets: opened.secrets, shell: 'headless', version: 'test', webhooks: false });
  try {
    await app.setupRemote({ serverUrl: options.serverUrl, clientId: CLIENT.id, clientSecret: CLIENT.secret, organizationId: ORG });
    await app.updateSettings({ settleMs: 200, webhook: { port: 0 } });
    if (options.folder) await app.addPair({ folder: options.folder, patientId: PATIENT, remoteBasePath: options.remoteBasePath ?? '/scans', ...(options.patientName ? { patientName: options.patientName } : {}) });
  } finally {
    await app.stop();
  }
}
