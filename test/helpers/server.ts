/**
 * Starts a real server (in-process, real socket) for tests, on real SQLite in a temp dir, or on a
 * real PostgreSQL when PATIENT_DOCS_TEST_DATABASE=postgres (the `postgres` project of
 * vitest.config.ts runs the store-heavy files so): the worker's cluster (testPostgres), one database per server.
 * Content goes to the local disk in the data dir, or to an S3-compatible server (s3rver, one per
 * test file, a prefix of its own per server) when PATIENT_DOCS_TEST_STORAGE=s3 (the `s3` project);
 * Ceph's RADOS Gateway instead of s3rver when PATIENT_DOCS_TEST_S3=rgw as well.
 * With PATIENT_DOCS_TEST_DEPLOYMENT=nginx (the `deployment` project) a test server is a whole
 * deployment: two instances on one database and one bucket prefix behind one nginx, `url` nginx's.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type ServerConfig } from '../../server/config.js';
import { startServer, type RunningServer, type StartOptions } from '../../server/start.js';
import type { LocalDiskStorage } from '../../server/storage/local-disk.js';
import { S3ContentStorage } from '../../server/storage/s3.js';
import type { ContentStorage } from '../../server/storage/types.js';
import { afterThisFile } from './file-cleanup.js';
import { testPostgres } from './postgres.js';
import { startS3, type S3CompatibleServer, type TestS3 } from './s3.js';

/** The database the test servers of this run use: `sqlite` (the default) or `postgres`. */
export const TEST_DATABASE: 'sqlite' | 'postgres' = process.env.PATIENT_DOCS_TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite';

/** Where the test servers of this run keep content: `disk` (the default) or `s3`. */
export const TEST_STORAGE: 'disk' | 's3' = process.env.PATIENT_DOCS_TEST_STORAGE === 's3' ? 's3' : 'disk';

/** What a test server of this run is: one instance (the default), or `nginx`: two instances behind one nginx (test/helpers/deployment.ts). */
export const TEST_DEPLOYMENT: 'single' | 'nginx' = process.env.PATIENT_DOCS_TEST_DEPLOYMENT === 'nginx' ? 'nginx' : 'single';

/**
 * Which S3-compatible server the `s3` storage is: s3rver (the default), or `rgw`, Ceph's RADOS
 * Gateway on a one-node cluster (test/helpers/ceph-rgw.ts), which checks request signatures.
 */
export const TEST_S3_SERVER: 's3rver' | 'rgw' = process.env.PATIENT_DOCS_TEST_S3 === 'rgw' ? 'rgw' : 's3rver';

let objectStore: Promise<TestS3> | undefined;
let gateway: Promise<S3CompatibleServer> | undefined;

/** This file's S3-compatible server, started on first use and stopped when the file ends. */
export function testS3(): Promise<TestS3> {
  if (!objectStore) {
    const started = startS3();
    objectStore = started;
    afterThisFile(async () => {
      objectStore = undefined;
      await (await started).close();
    });
  }
  return objectStore;
}

/**
 * This file's Ceph RGW, started on first use and stopped when the file ends. Its credentials are
 * the process's meanwhile: an in-process server reads them from the environment, as the AWS SDK does.
 */
export function testRgw(): Promise<S3CompatibleServer> {
  if (!gateway) {
    const before = { AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY, AWS_REGION: process.env.AWS_REGION };
    // Imported here: ceph-rgw.ts takes its ports from processes.ts, which imports this module.
    const started = import('./ceph-rgw.js')
      .then(({ startCephRgw }) => startCephRgw())
      .then((rgw) => {
        Object.assign(process.env, rgw.credentials);
        return rgw;
      });
    gateway = started;
    afterThisFile(async () => {
      gateway = undefined;
      for (const [name, value] of Object.entries(before)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      await (await started).close();
    });
  }
  return gateway;
}

/** The run's S3-compatible server (TEST_S3_SERVER) for this file. */
export function testObjectStore(): Promise<S3CompatibleServer> {
  return TEST_S3_SERVER === 'rgw' ? testRgw() : testS3();
}

/**
 * What a test server's environment adds for the run's storage: a bucket prefix of its own, or
 * nothing (the local disk). A server started again on the same data names the same `prefix`.
 */
export async function testStorageEnv(prefix = `server-${randomUUID().slice(0, 8)}`): Promise<Record<string, string>> {
  if (TEST_STORAGE !== 's3') return {};
  return (await testObjectStore()).env(prefix);
}

export { testPostgres };

/** What a test server's environment adds for the run's database: a new PostgreSQL database each, or nothing (SQLite in its data dir). */
export async function testDatabaseEnv(): Promise<Record<string, string>> {
  if (TEST_DATABASE !== 'postgres') return {};
  return { PATIENT_DOCS_DATABASE_URL: await (await testPostgres()).createDatabase() };
}

export const SEED_FILE = path.resolve(import.meta.dirname, '../fixtures/seed.json');
export const ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
export const OTHER_ORG = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a02';
export const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
export const PATIENT_WITHOUT_CONSENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000002';
export const OTHER_ORG_PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000003';
export const CLIENT = { id: 'scanner-pc-1', secret: 'scanner-pc-1-secret-0123456789' };
export const READ_ONLY_CLIENT = { id: 'read-only', secret: 'read-only-secret-0123456789' };
export const ADMIN_TOKEN = 'test-admin-token-0123456789';
/** PATIENT_DOCS_METRICS_TOKEN of the tests that read /metrics (it is off without one). */
export const METRICS_TOKEN = 'test-metrics-token-0123456789';

export interface TestServer {
  /** Where clients reach it (in a deployment, nginx's address). */
  url: string;
  /** The server (in a deployment, its first instance). */
  server: RunningServer;
  /** Every instance serving it: the server alone, or a deployment's two (each reachable past nginx on its own `url`). */
  instances: readonly RunningServer[];
  dataDir: string;
  token(client?: { id: string; secret: string }, scope?: string): Promise<string>;
  /** JSON request with a bearer token and the organization header. */
  api(method: string, route: string, options?: { body?: unknown; token?: string | null; organization?: string | null; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

/** A new folder under the system's temp folder, removed when the test file ends. */
export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `patient-docs-${prefix}-`));
  afterThisFile(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** What a test sets beyond the environment: configuration no variable sets, and the server's start options. */
export interface TestServerOptions {
  config?: Partial<ServerConfig>;
  start?: StartOptions;
}

export async function startTestServer(env: Record<string, string> = {}, options: TestServerOptions = {}): Promise<TestServer> {
  if (TEST_DEPLOYMENT === 'nginx') {
    const { startTestDeployment } = await import('./deployment.js');
    return testClient(await startTestDeployment(env, options));
  }
  const one = await startTestInstance({ ...(await testDatabaseEnv()), ...(await testStorageEnv()), ...env }, options);
  return testClient({ url: one.server.url, instances: [one.server], ...one });
}

/** One server in this process on a temp data dir (the caller's env decides database and storage), checked to run on what the run asks for. */
export async function startTestInstance(env: Record<string, string>, options: TestServerOptions = {}): Promise<Pick<TestServer, 'server' | 'dataDir' | 'close'>> {
  // A data dir the caller names is the caller's to remove; one made here is removed here.
  const owned = env.PATIENT_DOCS_DATA_DIR === undefined;
  const dataDir = env.PATIENT_DOCS_DATA_DIR ?? tempDir('server');
  const loaded = loadConfig({
    PORT: '0',
    PATIENT_DOCS_DATA_DIR: dataDir,
    PATIENT_DOCS_SEED: SEED_FILE,
    PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN,
    PATIENT_DOCS_LOG_LEVEL: 'silent',
    ...env,
  });
  const config = { ...loaded, ...options.config };
  const server = await startServer(config, { logger: false, ...options.start });
  if ((server.context.content.storage.shared ? 's3' : 'disk') !== TEST_STORAGE && !env.PATIENT_DOCS_STORAGE_URL) throw new Error(`the test server keeps content in ${server.context.content.storage.location}, not on ${TEST_STORAGE}`);
  const expected = config.databaseUrl?.startsWith('postgres') ? 'postgres' : 'sqlite';
  if (server.context.store.kind !== expected) throw new Error(`the test server runs on ${server.context.store.kind}, not ${expected}`);
  return {
    server,
    dataDir,
    close: async () => {
      await server.close();
      if (owned) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A test server's token and JSON helpers, on its `url`. */
function testClient(running: Pick<TestServer, 'url' | 'server' | 'instances' | 'dataDir' | 'close'>): TestServer {
  const { url } = running;
  const tokens = new Map<string, string>();
  const token = async (client = CLIENT, scope?: string): Promise<string> => {
    const key = `${client.id}|${scope ?? ''}`;
    const cached = tokens.get(key);
    if (cached) return cached;
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret });
    if (scope) form.set('scope', scope);
    const response = await fetch(`${url}/oauth2/token`, { method: 'POST', body: form });
    const body = (await response.json()) as { access_token?: string };
    if (!body.access_token) throw new Error(`token request failed: ${response.status} ${JSON.stringify(body)}`);
    tokens.set(key, body.access_token);
    return body.access_token;
  };
  const api: TestServer['api'] = async (method, route, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    const bearer = options.token === undefined ? await token() : options.token;
    if (bearer !== null) headers.authorization = `Bearer ${bearer}`;
    const organization = options.organization === undefined ? ORG : options.organization;
    if (organization !== null) headers['organization-id'] = organization;
    let body: string | Blob | undefined;
    if (options.body !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = typeof options.body === 'string' ? options.body : Buffer.isBuffer(options.body) ? new Blob([new Uint8Array(options.body)]) : JSON.stringify(options.body);
    }
    const response = await fetch(`${url}${route}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, body: parsed, headers: response.headers };
  };
  return { ...running, token, api };
}

/**
 * What a test server holds in one area of its content storage: `tmp` (received, not committed) or
 * `uploads` (resumable uploads) — files in the data dir, or object keys under the bucket prefix.
 */
export async function storedIn(t: TestServer, area: 'tmp' | 'uploads'): Promise<string[]> {
  return storedKeys(t.server.context.content.storage, area);
}

/**
 * What a content storage holds in one area: `tmp`, `uploads`, or `objects` (committed objects, as
 * the keys rows name them) — files under its folder, or object keys under its bucket prefix.
 */
export async function storedKeys(storage: ContentStorage, area: 'tmp' | 'uploads' | 'objects'): Promise<string[]> {
  if (storage instanceof S3ContentStorage) {
    const keys: string[] = [];
    for await (const object of storage.list(`${area}/`)) keys.push(area === 'objects' ? object.Key!.slice(`${storage.where.prefix}objects/`.length) : object.Key!);
    return keys.sort();
  }
  const root = path.join((storage as LocalDiskStorage).root, area);
  if (area !== 'objects') return fs.readdirSync(root).sort();
  return (fs.readdirSync(root, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .sort();
}

/** Asserts the SPEC §7 problem shape and returns it. */
export function expectProblem(response: { status: number; body: any; headers: Headers }, status: number): any {
  const problem = response.body;
  const shape = ['type', 'title', 'status', 'detail', 'instance', 'messageKey', 'occurredAt'];
  for (const field of shape) {
    if (!(field in (problem ?? {}))) throw new Error(`problem lacks ${field}: ${JSON.stringify(problem)}`);
  }
  if (response.status !== status || problem.status !== status) {
    throw new Error(`expected ${status}, got ${response.status}: ${JSON.stringify(problem)}`);
  }
  if (!response.headers.get('content-type')?.startsWith('application/problem+json')) throw new Error('problem content type missing');
  return problem;
}
