/**
 * `patient-docs-admin migrate` end to end: an embedded installation in use (a real server process on
 * SQLite and its content folder: 500 documents, some with several versions, one of 50 MB,
 * thumbnails, subscriptions with pending and dead messages, the audit log) moved to a real
 * PostgreSQL and a new content folder; a first run killed half-way through the files and run again;
 * a second run killed half-way and run again, changing nothing; then a server on the new target
 * serves all of it, and what clients hold from before (a token, a signed link, a subscription's
 * hmac) still works. The same installation moved to PostgreSQL and an S3-compatible store
 * (s3rver), and to the store alone keeping SQLite, is served from there.
 */
import { spawn } from 'node:child_process';
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../server/db/sqlite/store.js';
import type { DocumentRecord } from '../server/db/types.js';
import { timeOrderedUuid } from '../server/domain/ids.js';
import { readMasterKeys } from '../server/identity/master-key.js';
import { prepareStore } from '../server/prepare-store.js';
import { LocalDiskStorage } from '../server/storage/local-disk.js';
import { makePng } from './fixtures/scans.js';
import { ADMIN_CLI, ROOT, freePort, runAdmin, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { ADMIN_TOKEN, CLIENT, ORG, PATIENT, tempDir, testPostgres } from './helpers/server.js';
import { startS3, TEST_S3_CREDENTIALS } from './helpers/s3.js';
import { makeTestCertificates, type TestCertificates } from './helpers/tls.js';

/** The installation (bench/migrate.mjs measures 100,000). */
const DOCUMENTS = 500;
/** Documents with three versions, besides the pictures (also three each). */
const VERSIONED = 20;
const PICTURES = 4;
/**
 * Uploaded through the server: the pictures (their thumbnails rendered by it) and the large file.
 * The others, the versioned ones first, go straight into the embedded store through its
 * repositories and content folder (what the server's uploads write), as an earlier import would
 * have left them: uploads over HTTP would multiply this file's time and show nothing more.
 */
const UPLOADED = PICTURES + 1;
/** Every version of every document. */
const VERSION_COUNT = DOCUMENTS + (VERSIONED + PICTURES) * 2;
const LARGE_BYTES = 50 * 1024 * 1024;
const PARALLEL = 8;

interface Receiver {
  url: string;
  received: Array<{ path: string; signature: string; raw: Buffer; messageId: string }>;
  /** Status by path prefix, or 'hang' (never answers). */
  behaviour: Map<string, number | 'hang'>;
  stop(): Promise<void>;
}

async function startReceiver(tls: TestCertificates): Promise<Receiver> {
  const received: Receiver['received'] = [];
  const behaviour = new Map<string, number | 'hang'>();
  const hanging = new Set<ServerResponse>();
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks);
      const route = request.url ?? '';
      const outcome = [...behaviour].find(([prefix]) => route.startsWith(prefix))?.[1] ?? 200;
      if (outcome === 'hang') {
        hanging.add(response);
        return;
      }
      if (outcome === 200) received.push({ path: route, signature: String(request.headers.signature), raw, messageId: String(request.headers['webhook-id']) });
      response.writeHead(outcome).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `https://127.0.0.1:${port}`,
    received,
    behaviour,
    stop: async () => {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
const hmac512 = (secret: string, raw: Buffer): string => createHmac('sha512', secret).update(raw).digest('hex');

async function inParallel<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await work(items[(next += 1) - 1]!);
    }),
  );
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 20_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/**
 * A request sent again, as the sync engine does, when the embedded database was busy (503 with
 * Retry-After; an upload's connection is closed then before its body is sent, which fetch reports
 * as a failure) or the request's headers came too slowly (408): a loaded machine makes parallel
 * writers meet the server's 250 ms busy limit, and can starve a sender past the headers' timeout.
 */
async function busyRetried(send: () => Promise<Response>): Promise<Response> {
  for (let attempt = 1; ; attempt += 1) {
    const response = await send().catch((error: unknown) => (attempt < 5 ? undefined : Promise.reject(error)));
    if (response && ((response.status !== 503 && response.status !== 408) || attempt >= 5)) return response;
    await response?.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
  }
}

/** Downloaded through a migrated server: the pictures (thumbnails), the large file, five with three versions, and every 25th of the others. */
const sample = (): Scan[] => [...scans.slice(0, UPLOADED), ...scans.slice(UPLOADED, UPLOADED + 5), ...scans.slice(UPLOADED + VERSIONED).filter((_, index) => index % 25 === 0)];

/** A client of one server: token, JSON calls, uploads. */
function client(url: string) {
  let bearer: string | undefined;
  const token = async (): Promise<string> => {
    if (bearer) return bearer;
    const response = await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }) });
    bearer = ((await response.json()) as { access_token: string }).access_token;
    return bearer;
  };
  const call = async (method: string, route: string, body?: unknown, as?: { token?: string; admin?: boolean }): Promise<{ status: number; body: any }> => {
    const headers: Record<string, string> = { authorization: `Bearer ${as?.admin ? ADMIN_TOKEN : (as?.token ?? (await token()))}` };
    if (!as?.admin) headers['organization-id'] = ORG;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await busyRetried(() => fetch(`${url}${route}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  /** `replacing`: the sha256 of the current content, for a new version (If-Match). */
  const upload = async (storageUrl: string, id: string, bytes: Buffer, type: string, fileName: string, replacing?: string): Promise<{ sha256: string; version: number }> => {
    const form = new FormData();
    form.append('Id', id);
    form.append('Type', type);
    form.append('file', new Blob([new Uint8Array(bytes)]), fileName);
    const headers: Record<string, string> = { authorization: `Bearer ${await token()}` };
    if (replacing) headers['if-match'] = `"${replacing}"`;
    const response = await busyRetried(() => fetch(`${storageUrl}/file`, { method: 'POST', headers, body: form }));
    if (response.status !== 201) throw new Error(`upload failed: ${response.status} ${await response.text()}`);
    return (await response.json()) as { sha256: string; version: number };
  };
  return { token, call, upload };
}

interface Scan {
  id: string;
  /** sha256 of each version, oldest first. */
  versions: string[];
  type: string;
}

let tls: TestCertificates;
let receiver: Receiver;
let databaseUrl: string;
let port: number;
let sourceDir: string;
let targetDir: string;
let embedded: ServerProcess | undefined;
const scans: Scan[] = [];
let tokenBefore: string;
let linkBefore: { url: string; sha256: string };
let thumbnailBefore: { url: string; bytes: Buffer };
let largeId: string;
let subscriptions: { pending: string; dead: string };
let auditBefore: unknown[];

function serverEnv(extra: Record<string, string>): Record<string, string> {
  return {
    PORT: String(port),
    NODE_EXTRA_CA_CERTS: tls.caFile,
    PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true',
    PATIENT_DOCS_WEBHOOK_RETRY_DELAYS: '100ms,100ms',
    PATIENT_DOCS_WEBHOOK_TIMEOUT: '2s',
    ...extra,
  };
}

/** The embedded installation in use: documents, versions, a large file, thumbnails, subscriptions, audit entries. */
async function populate(url: string): Promise<void> {
  const api = client(url);
  subscriptions = {
    dead: (await api.call('POST', '/v1/webhooks/subscribe', { events: ['order.all'], callback: `${receiver.url}/dead`, hmac: 'dead-secret' })).body.id,
    pending: (await api.call('POST', '/v1/webhooks/subscribe', { events: ['patient.created'], callback: `${receiver.url}/pending`, hmac: 'pending-secret' })).body.id,
  };
  receiver.behaviour.set('/dead', 503);
  receiver.behaviour.set('/pending', 'hang');
  for (const status of ['scheduled', 'done']) expect((await api.call('POST', '/admin/v1/orders', { patientId: PATIENT, organizationId: ORG, status }, { admin: true })).status).toBe(201);

  const plan = Array.from({ length: UPLOADED }, (_, index) => ({ index, type: index < PICTURES ? 'PNG' : 'BIN', versions: index === PICTURES ? 1 : 3 }));
  const uploaded: Scan[] = [];
  await inParallel(plan, PARALLEL, async ({ index, type, versions }) => {
    const fileName = `scan-${String(index).padStart(4, '0')}.${type.toLowerCase()}`;
    const created = await api.call('POST', `/v1/patients/${PATIENT}/documents`, { fileName, path: `/cases/case-${index % 20}` });
    expect(created.status).toBe(201);
    const scan: Scan = { id: created.body.id, versions: [], type };
    for (let version = 1; version <= versions; version += 1) {
      const bytes = index === PICTURES ? randomBytes(LARGE_BYTES) : makePng(64 + index + version, 48);
      scan.versions.push((await api.upload(created.body.storageUrl, scan.id, bytes, type, fileName, scan.versions.at(-1))).sha256);
    }
    if (index === PICTURES) largeId = scan.id;
    uploaded[index] = scan;
  });
  scans.push(...uploaded, ...(await addStoredDocuments(UPLOADED, DOCUMENTS - UPLOADED)));
  // Dead letters: the receiver refused every attempt of both orders' messages.
  await waitFor('two dead letters', async () => (await api.call('GET', `/v1/webhooks/${subscriptions.dead}/dead-letters`)).body.total === 2);
  // Thumbnails rendered, and what clients keep from before the move: a token, a signed link, a thumbnail link.
  const picture = scans.find((scan) => scan.type === 'PNG')!;
  const shown = await waitFor('a thumbnail', async () => {
    const document = (await api.call('GET', `/v1/patients/${PATIENT}/documents/${picture.id}`)).body;
    return document.thumbnailDownloadUri ? (document as { thumbnailDownloadUri: string; storageDownloadUri: string }) : false;
  });
  tokenBefore = await api.token();
  linkBefore = { url: shown.storageDownloadUri, sha256: picture.versions.at(-1)! };
  thumbnailBefore = { url: shown.thumbnailDownloadUri, bytes: Buffer.from(await (await fetch(shown.thumbnailDownloadUri)).arrayBuffer()) };
  expect(thumbnailBefore.bytes.subarray(1, 4).toString()).toBe('PNG');
  for (const scan of scans.filter((item) => item.type === 'PNG')) {
    await waitFor('every thumbnail', async () => (await api.call('GET', `/v1/patients/${PATIENT}/documents/${scan.id}/versions`)).body.versions.every((version: { thumbnailStatus: string }) => version.thumbnailStatus === 'ready'));
  }
  auditBefore = (await api.call('GET', `/admin/v1/audit?documentId=${largeId}`, undefined, { admin: true })).body.entries;
  expect(auditBefore.length).toBeGreaterThanOrEqual(2);
  // Pending messages: new patients whose messages the hanging receiver has not taken when the server stops.
  for (const [index, name] of ['Ada Pending', 'Bo Pending', 'Cy Pending'].entries()) {
    const chart = { identifiers: [{ system: 'chart', value: `1023${index}` }], birthDate: `198${index}-01-02` };
    expect((await api.call('POST', '/admin/v1/patients', { name, organizations: [ORG], consents: [ORG], ...chart }, { admin: true })).status).toBe(201);
  }
}

/**
 * `count` documents put straight into the embedded store beside its running server (as the admin
 * CLI writes there), the first VERSIONED of them with three versions, the others with one: each
 * file into its content folder, the rows through its repositories as uploads leave them (the
 * document, each version, each upload's audit entry).
 */
async function addStoredDocuments(first: number, count: number): Promise<Scan[]> {
  const store = SqliteStore.open(path.join(sourceDir, 'patient-docs.sqlite'));
  store.setBusyTimeout(10_000);
  const content = new LocalDiskStorage(path.join(sourceDir, 'content'));
  const added: Scan[] = [];
  try {
    for (let index = first; index < first + count; index += 1) {
      const at = new Date().toISOString();
      const fileName = `scan-${String(index).padStart(4, '0')}.bin`;
      const document: DocumentRecord = {
        id: timeOrderedUuid(),
        patientId: PATIENT,
        organizationId: ORG,
        fileName,
        fileType: 'BIN',
        path: `/cases/case-${index % 20}`,
        createdAt: at,
        lastModifiedAt: at,
        hasContent: false,
        fileSize: null,
        sha256: null,
        version: 0,
        contentKey: null,
        contentType: null,
        thumbnailKey: null,
        createdBy: CLIENT.id,
        scannedAt: null,
      };
      await store.documents.create(document, []);
      const scan: Scan = { id: document.id, versions: [], type: 'BIN' };
      for (let version = 1; version <= (index < first + VERSIONED ? 3 : 1); version += 1) {
        const bytes = randomBytes(1000 + ((index * 37 + version) % 3000));
        const key = `documents/${document.id}/v${version}-${randomUUID()}`;
        await content.put(key, bytes, { durable: false });
        const stored = { documentId: document.id, version, fileType: 'BIN', originalFileName: fileName, fileSize: bytes.length, sha256: sha256(bytes), contentKey: key };
        const uploadedAt = new Date().toISOString();
        expect(
          await store.content.commitVersion(
            { ...stored, contentType: 'application/octet-stream', thumbnailKey: null, thumbnailStatus: 'none', thumbnailError: null, uploadedAt, uploadedBy: CLIENT.id, contentLostAt: null, scannedAt: null },
            version - 1,
            [],
          ),
        ).toBe(true);
        scan.versions.push(stored.sha256);
      }
      added.push(scan);
    }
    const audit = (scan: Scan, version: number) => ({ documentId: scan.id, version, requestId: randomUUID(), remoteAddress: '127.0.0.1', detail: null });
    await store.audit.append(
      added.flatMap((scan) =>
        scan.versions.map((_, index) => ({ at: new Date().toISOString(), action: 'upload', outcome: 'allowed', status: 201, organizationId: ORG, clientId: CLIENT.id, patientId: PATIENT, ...audit(scan, index + 1) })),
      ),
    );
  } finally {
    await store.close();
  }
  return added;
}

/**
 * What a server on a migrated installation must serve: what clients hold from before (a token, a
 * signed link, a thumbnail link: same keys, same public URL), every document with its current
 * sha256 in one search, and every version of the `downloaded` ones, fetched and hashed.
 */
async function expectServed(api: ReturnType<typeof client>, downloaded: readonly Scan[]): Promise<void> {
  const before = await api.call('GET', `/v1/patients/${PATIENT}/documents/${largeId}`, undefined, { token: tokenBefore });
  expect(before.status).toBe(200);
  const linked = Buffer.from(await (await fetch(linkBefore.url)).arrayBuffer());
  expect(sha256(linked)).toBe(linkBefore.sha256);
  expect(Buffer.from(await (await fetch(thumbnailBefore.url)).arrayBuffer())).toEqual(thumbnailBefore.bytes);

  const search = await api.call('POST', `/v1/patients/${PATIENT}/documents/search`, { limit: 1000, hasContent: true });
  expect(search.body.total).toBe(DOCUMENTS);
  const found = new Map<string, { sha256: string; storageDownloadUri: string }>(search.body.documents.map((document: { id: string }) => [document.id, document]));
  expect(new Map([...found].map(([id, document]) => [id, document.sha256]))).toEqual(new Map(scans.map((scan) => [scan.id, scan.versions.at(-1)])));
  await inParallel(downloaded, PARALLEL, async (scan) => {
    const downloads = [found.get(scan.id)!.storageDownloadUri];
    if (scan.versions.length > 1) {
      const { body } = await api.call('GET', `/v1/patients/${PATIENT}/documents/${scan.id}/versions`);
      expect(body.versions.map((version: { sha256: string }) => version.sha256).reverse()).toEqual(scan.versions);
      if (scan.type === 'PNG') expect(body.versions.map((version: { thumbnailStatus: string }) => version.thumbnailStatus)).toEqual(['ready', 'ready', 'ready']);
      downloads.push(...body.versions.slice(1).map((version: { storageDownloadUri: string }) => version.storageDownloadUri));
    }
    const hashes = await Promise.all(downloads.map(async (uri) => sha256(Buffer.from(await (await fetch(uri)).arrayBuffer()))));
    expect(hashes).toEqual([...scan.versions].reverse());
  });
}

/**
 * Every version a migrated database records, as the documents were made (their sha256, in order),
 * and its bytes in the new content folder hashed to that sha256; every thumbnail it records there too.
 */
async function expectStoredIn(storage: LocalDiskStorage, database: string): Promise<void> {
  const versions = await query<{ document_id: string; sha256: string; content_key: string; thumbnail_key: string | null }>(
    database,
    'SELECT document_id, sha256, content_key, thumbnail_key FROM document_versions ORDER BY document_id, version',
  );
  const recorded = new Map<string, string[]>();
  for (const row of versions) recorded.set(row.document_id, [...(recorded.get(row.document_id) ?? []), row.sha256]);
  expect(recorded).toEqual(new Map(scans.map((scan) => [scan.id, scan.versions])));
  await inParallel(versions, PARALLEL, async (row) => {
    // Read whole (the files are small but one): a stream per file would take a 4 MiB buffer each.
    expect({ key: row.content_key, sha256: sha256(await fs.promises.readFile(storage.localPath(row.content_key))) }).toEqual({ key: row.content_key, sha256: row.sha256 });
    if (row.thumbnail_key) expect((await fs.promises.stat(storage.localPath(row.thumbnail_key))).size).toBeGreaterThan(0);
  });
  expect(versions.filter((row) => row.thumbnail_key).length).toBe(PICTURES * 3);
}

/** Each table's rows in the embedded database, as PostgreSQL returns them (booleans, numbers), key order. */
function sourceRows(tables: ReadonlyArray<readonly [string, string]>): Record<string, unknown[]> {
  const db = new Database(path.join(sourceDir, 'patient-docs.sqlite'), { readonly: true });
  try {
    const booleans: Record<string, string> = { documents: 'has_content', patient_document_counts: 'has_content' };
    return Object.fromEntries(
      tables.map(([table, key]) => {
        const rows = db.prepare(`SELECT * FROM ${table} ORDER BY ${key}`).all() as Array<Record<string, unknown>>;
        const column = booleans[table];
        return [table, column ? rows.map((row) => ({ ...row, [column]: row[column] === 1 })) : rows];
      }),
    );
  } finally {
    db.close();
  }
}

async function query<T>(database: string, sql: string): Promise<T[]> {
  const connection = new pg.Client({ connectionString: database });
  connection.setTypeParser(20, Number);
  await connection.connect();
  try {
    return (await connection.query(sql)).rows as T[];
  } finally {
    await connection.end();
  }
}

/** Each table's rows in PostgreSQL, key order, over one connection. */
async function targetRows(tables: ReadonlyArray<readonly [string, string]>): Promise<Record<string, unknown[]>> {
  const connection = new pg.Client({ connectionString: databaseUrl });
  connection.setTypeParser(20, Number);
  await connection.connect();
  try {
    const rows: Record<string, unknown[]> = {};
    for (const [table, key] of tables) rows[table] = (await connection.query(`SELECT * FROM ${table} ORDER BY ${key}`)).rows;
    return rows;
  } finally {
    await connection.end();
  }
}

function migrate(extra: string[] = []) {
  return runAdmin(sourceDir, ['migrate', '--to-database', databaseUrl, '--to-storage', pathToFileURL(path.join(targetDir, 'content')).href, ...extra]);
}

/** A migration to the PostgreSQL database and content folder, to be killed: its progress so far, and kill -9. */
function spawnMigrate() {
  const child = spawn(process.execPath, [ADMIN_CLI, 'migrate', '--to-database', databaseUrl, '--to-storage', pathToFileURL(path.join(targetDir, 'content')).href], {
    cwd: ROOT,
    env: { ...process.env, PATIENT_DOCS_DATA_DIR: sourceDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let progress = '';
  child.stderr!.on('data', (chunk: Buffer) => (progress += chunk.toString()));
  child.stdout!.resume();
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
  return {
    child,
    progress: () => progress,
    kill: (): Promise<NodeJS.Signals | null> => {
      child.kill('SIGKILL');
      return exited;
    },
  };
}

beforeAll(async () => {
  tls = makeTestCertificates('migrate');
  receiver = await startReceiver(tls);
  databaseUrl = await (await testPostgres()).createDatabase();
  port = await freePort();
  sourceDir = tempDir('migrate-source');
  targetDir = tempDir('migrate-target');
  embedded = await startServerProcess(serverEnv({ PATIENT_DOCS_DATA_DIR: sourceDir }));
  await populate(embedded.url);
}, 180_000);

afterAll(async () => {
  await embedded?.stop();
  await receiver?.stop();
  for (const dir of [sourceDir, targetDir, tls?.dir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('admin migrate from the embedded default', () => {
  it('is refused with one line while the server runs, for bad URLs and for an unreachable database', async () => {
    const running = await migrate();
    expect(running.code).not.toBe(0);
    expect(running.stderr.trim().split('\n')).toEqual([expect.stringMatching(/is in use by another Patient Docs server \(pid \d+\); stop it before migrating \(nothing was copied\)$/)]);
    await embedded!.stop();
    embedded = undefined;

    // Three runs at once: the two URLs refused take no lock, the third alone holds the data folder's.
    const awayPort = await freePort();
    const [bad, noBucket, away] = await Promise.all([
      runAdmin(sourceDir, ['migrate', '--to-database', 'mysql://db/docs']),
      runAdmin(sourceDir, ['migrate', '--to-storage', 'ftp://files/docs']),
      runAdmin(sourceDir, ['migrate', '--to-database', `postgres://nobody:secret@127.0.0.1:${awayPort}/docs`]),
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe('patient-docs-admin: --to-database mysql://db/docs must be a postgres:// URL (PostgreSQL 15 or newer)');
    expect(noBucket.stderr.trim()).toBe('patient-docs-admin: --to-storage ftp://files/docs must be an s3://bucket[/prefix] or file:///folder URL');
    expect(away.code).not.toBe(0);
    expect(away.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^patient-docs-admin: --to-database postgres:\/\/nobody@127\.0\.0\.1:\d+\/docs: the database cannot be reached/)]);
  }, 60_000);

  it('copies everything; a first run killed half-way through the files resumes when run again; a second run killed half-way changes nothing when run again', async () => {
    // Killed while it copies the files: the records are in, the content partly.
    const first = spawnMigrate();
    const copied = path.join(targetDir, 'content', 'objects', 'documents');
    const countCopied = (): number => (fs.existsSync(copied) ? fs.readdirSync(copied).length : 0);
    await waitFor('half of the documents copied', async () => countCopied() >= DOCUMENTS / 2 || first.child.exitCode !== null, 60_000, 5);
    expect(await first.kill()).toBe('SIGKILL');
    expect(first.progress()).toMatch(/copying documents: \d+\/\d+/);
    expect(countCopied()).toBeLessThan(DOCUMENTS);

    // A server does not start on the half-filled database (it would take the missing content for orphans).
    const early = await startServerProcess(serverEnv({ PATIENT_DOCS_DATA_DIR: targetDir, PATIENT_DOCS_DATABASE_URL: databaseUrl })).then(
      (started) => started.stop().then(() => 'started'),
      (error: Error) => error.message,
    );
    expect(early).toMatch(/the database is being filled by admin migrate from PATIENT_DOCS_DATA_DIR=.*, which has not completed/);

    const resumed = await migrate();
    expect(resumed.stderr).toMatch(/copying files: \d+\/\d+, .*MiB/);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(new RegExp(`^migrated: 2 organizations, \\d+ patients, 2 clients, 1 signing key, ${DOCUMENTS} documents with ${VERSION_COUNT} versions, 2 subscriptions with \\d+ messages, \\d+ audit entries in postgres://`));
    expect(resumed.stdout).toMatch(new RegExp(`${VERSION_COUNT} stored files \\(5\\d MiB\\) in file://.*, each checked against its sha256 \\((\\d+) copied, .*\\), ${PICTURES * 3} thumbnails`));
    const copiedByResume = Number(/each checked against its sha256 \((\d+) copied/.exec(resumed.stdout)![1]);
    expect(copiedByResume).toBeGreaterThan(0);
    expect(copiedByResume).toBeLessThan(VERSION_COUNT);

    // A second run killed half-way, while it compares the records (held at the audit log by a lock taken here).
    const holder = new pg.Client({ connectionString: databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE audit_log IN SHARE MODE');
      const second = spawnMigrate();
      await waitFor('the second run at the audit log', async () => {
        if (second.child.exitCode !== null) throw new Error(`the second run ended: ${second.progress()}`);
        if (!/copying audit log: 0\//.test(second.progress())) return false;
        const waiting = await holder.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
        return (waiting.rowCount ?? 0) > 0;
      });
      expect(await second.kill()).toBe('SIGKILL');
      expect(second.progress()).toMatch(/copying documents: \d+\/\d+ in/);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }

    const again = await migrate();
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/\(0 rows written\).*\(0 copied, 0 B\).*\(0 copied\); nothing changed \(the target already held all of it\)/);

    // Every record as the embedded database holds it; the per-patient totals kept by the trigger from here on.
    const tables = [
      ['organizations', 'id'],
      ['patients', 'id'],
      ['patient_identifiers', 'patient_id, system, value'],
      ['patient_identifier_owners', 'organization_id, system, value'],
      ['patient_consents', 'patient_id, organization_id'],
      ['clients', 'client_id'],
      ['signing_keys', 'kid'],
      ['documents', 'id'],
      ['document_versions', 'document_id, version'],
      ['outbox_events', 'sequence'],
      ['webhook_subscriptions', 'id'],
      ['webhook_messages', 'seq'],
      ['webhook_attempts', 'sequence'],
      ['webhook_cursor', 'id'],
      ['audit_log', 'id'],
      ['meta', 'key'],
      ['patient_document_counts', 'patient_id, has_content'],
      ['patient_document_versions', 'patient_id'],
    ] as const;
    const [there, here] = [await targetRows(tables), sourceRows(tables)];
    // The columns the embedded database has (PostgreSQL's own, such as a webhook message's claim by an instance, start empty).
    const columnsOf = (rows: unknown[]): string[] => Object.keys((rows[0] ?? {}) as object);
    const only = (rows: unknown[], columns: string[]): unknown[] => rows.map((row) => Object.fromEntries(columns.map((column) => [column, (row as Record<string, unknown>)[column]])));
    for (const [table] of tables) expect({ table, rows: only(there[table]!, columnsOf(here[table]!)) }).toEqual({ table, rows: here[table] });
    expect(await query(databaseUrl, "SELECT tgenabled FROM pg_trigger WHERE tgname = 'documents_keep_counts'")).toEqual([{ tgenabled: 'O' }]);
  }, 180_000);

  it('a server on the new target serves every document, version, thumbnail and audit entry; tokens, signed links and subscriptions from before keep working', async () => {
    await expectStoredIn(new LocalDiskStorage(path.join(targetDir, 'content'), { create: false }), databaseUrl);
    receiver.behaviour.clear();
    const moved = await startServerProcess(serverEnv({ PATIENT_DOCS_DATA_DIR: targetDir, PATIENT_DOCS_DATABASE_URL: databaseUrl }));
    try {
      expect(moved.url).toBe(`http://127.0.0.1:${port}`);
      const api = client(moved.url);
      await expectServed(api, sample());

      // The audit entries of before are there as they were.
      const audit = await api.call('GET', `/admin/v1/audit?documentId=${largeId}`, undefined, { admin: true });
      expect(audit.body.entries.slice(-auditBefore.length)).toEqual(auditBefore);

      // Subscriptions: the pending messages are delivered, signed with the hmac given before; a dead letter sent again too.
      const pending = await waitFor('the pending messages', async () => {
        const delivered = receiver.received.filter((item) => item.path === '/pending');
        return delivered.length >= 3 ? delivered : false;
      });
      for (const item of pending) expect(item.signature).toBe(hmac512('pending-secret', item.raw));
      const queued = (sourceRows([['webhook_messages', 'seq']]).webhook_messages as Array<{ id: string; subscription_id: string; state: string }>).filter((row) => row.subscription_id === subscriptions.pending && row.state === 'pending');
      expect(queued.length).toBeGreaterThan(0);
      expect(pending.map((item) => item.messageId)).toEqual(expect.arrayContaining(queued.map((row) => row.id)));
      const dead = await api.call('GET', `/v1/webhooks/${subscriptions.dead}/dead-letters`);
      expect(dead.body.total).toBe(2);
      const messageId = dead.body.messages[0].messageId as string;
      expect((await api.call('POST', `/v1/webhooks/${subscriptions.dead}/dead-letters/${messageId}/redeliver`)).status).toBe(202);
      const redelivered = await waitFor('the dead letter sent again', async () => receiver.received.find((item) => item.path === '/dead'));
      expect(redelivered.signature).toBe(hmac512('dead-secret', redelivered.raw));
      expect(JSON.parse(redelivered.raw.toString())).toMatchObject({ eventType: 'order.created' });
    } finally {
      await moved.stop();
    }
  }, 240_000);

  it('refuses to copy again onto a database servers have used since', async () => {
    const stale = await migrate();
    expect(stale.code).not.toBe(0);
    expect(stale.stderr.trim().split('\n')).toEqual([expect.stringMatching(/made after this installation's last \(a server ran on it since the migration\); migrating again would put back older records, so nothing was copied$/)]);
  }, 60_000);

  it('moves the content alone to an S3-compatible store keeping SQLite, then the records to PostgreSQL beside it: a server on each serves the documents', async () => {
    const s3 = await startS3();
    const storeEnv = { PATIENT_DOCS_S3_ENDPOINT: s3.endpoint, ...TEST_S3_CREDENTIALS };
    const storageUrl = `s3://${s3.bucket}/clinic`;
    const database = await (await testPostgres()).createDatabase();
    const instanceDir = tempDir('migrate-s3-instance');
    const serves = async (env: Record<string, string>, downloaded: readonly Scan[]): Promise<void> => {
      const server = await startServerProcess(serverEnv(env));
      try {
        await expectServed(client(server.url), downloaded);
      } finally {
        await server.stop();
      }
    };
    try {
      // The clinic grows in two steps: its content to the store first, keeping SQLite…
      const alone = await runAdmin(sourceDir, ['migrate', '--to-storage', storageUrl], storeEnv);
      expect({ code: alone.code, stderr: alone.stderr }).toMatchObject({ code: 0 });
      expect(alone.stdout).toMatch(
        new RegExp(`^migrated: ${VERSION_COUNT} stored files \\(5\\d MiB\\) in ${storageUrl}, each checked against its sha256 \\(${VERSION_COUNT} copied, .*\\), ${PICTURES * 3} thumbnails \\(${PICTURES * 3} copied\\); start the servers with PATIENT_DOCS_STORAGE_URL=${storageUrl}`),
      );
      expect(alone.stdout).not.toContain('postgres://');
      await serves({ PATIENT_DOCS_DATA_DIR: sourceDir, ...s3.env('clinic') }, sample());

      // …then its records to PostgreSQL, the content already where it goes (nothing copied again).
      const both = await runAdmin(sourceDir, ['migrate', '--to-database', database, '--to-storage', storageUrl], storeEnv);
      expect({ code: both.code, stderr: both.stderr }).toMatchObject({ code: 0 });
      expect(both.stdout).toMatch(new RegExp(`${DOCUMENTS} documents with ${VERSION_COUNT} versions, .* in postgres://.*; ${VERSION_COUNT} stored files \\(5\\d MiB\\) in ${storageUrl}, each checked against its sha256 \\(0 copied, 0 B\\)`));
      // The same objects as the first server's: the 50 MB one is not fetched again.
      await serves({ PATIENT_DOCS_DATA_DIR: instanceDir, PATIENT_DOCS_DATABASE_URL: database, ...s3.env('clinic') }, sample().filter((scan) => scan.id !== largeId));
    } finally {
      await s3.close();
      fs.rmSync(instanceDir, { recursive: true, force: true });
    }
  }, 300_000);

  it('needs the master key that seals the installation\'s secrets, and carries them sealed', async () => {
    const masterKey = randomBytes(32).toString('base64');
    const sealedDir = tempDir('migrate-sealed');
    try {
      const store = SqliteStore.open(path.join(sealedDir, 'patient-docs.sqlite'));
      await prepareStore(store, readMasterKeys({ PATIENT_DOCS_MASTER_KEY: masterKey }));
      await store.close();
      const target = await (await testPostgres()).createDatabase();
      const withoutKey = await runAdmin(sealedDir, ['migrate', '--to-database', target]);
      expect(withoutKey.code).not.toBe(0);
      expect(withoutKey.stderr.trim().split('\n')).toEqual([expect.stringMatching(/secrets are encrypted .* and no master key is given: set PATIENT_DOCS_KEY_FILE \(or PATIENT_DOCS_MASTER_KEY\) to that key$/)]);
      const withKey = await runAdmin(sealedDir, ['migrate', '--to-database', target], { PATIENT_DOCS_MASTER_KEY: masterKey });
      expect(withKey.code).toBe(0);
      const connection = new pg.Client({ connectionString: target });
      await connection.connect();
      try {
        const sealed = (await connection.query("SELECT private_jwk FROM signing_keys UNION ALL SELECT value FROM meta WHERE key = 'link-signing-key'")).rows;
        expect(sealed.length).toBe(2);
        for (const row of sealed) expect(Object.values(row)[0]).toMatch(/^enc1:/);
      } finally {
        await connection.end();
      }
    } finally {
      fs.rmSync(sealedDir, { recursive: true, force: true });
    }
  }, 60_000);
});
