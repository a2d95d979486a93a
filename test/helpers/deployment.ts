/**
 * A deployment of several instances (DESIGN §6) for end-to-end tests: N server processes from
 * dist/ (as `npm run server`) on one PostgreSQL database and one shared data folder, behind a real
 * nginx doing round-robin with TLS (the site of docs/nginx.conf.example, its `proxy_pass` pointed
 * at an upstream of the instances). Started once per test file; an instance can be killed (-9),
 * stopped and started again on its port, and PostgreSQL stopped and started under them.
 *
 * startTestDeployment is the lighter one startTestServer gives under PATIENT_DOCS_TEST_DEPLOYMENT=nginx
 * (the `deployment` project): two instances in the test's own process, behind the same nginx site.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import tls from 'node:tls';
import { Agent, setGlobalDispatcher } from 'undici';
import { afterAll, beforeAll } from 'vitest';
import { exampleSite, nginxPort, startNginx, type Nginx } from './nginx.js';
import { startPostgres, type TestPostgres } from './postgres.js';
import { freePort, ROOT, SERVER_MAIN } from './processes.js';
import { ADMIN_TOKEN, CLIENT, ORG, SEED_FILE, TEST_DATABASE, TEST_STORAGE, startTestInstance, tempDir, testDatabaseEnv, testStorageEnv, type TestServer, type TestServerOptions } from './server.js';
import { makeTestCertificates } from './tls.js';

type SiteChanges = Array<[from: string | RegExp, to: string]>;

export interface Instance {
  readonly index: number;
  readonly port: number;
  /** Its own address (http://127.0.0.1:PORT), past nginx. */
  readonly url: string;
  readonly running: boolean;
  /** The process id while it runs (for /proc/<pid>/stat). */
  readonly pid: number | undefined;
  /** What it printed (its last 64 KiB). */
  output(): string;
  /** SIGKILL, as a power cut or the OOM killer would: resolves once it is gone. */
  kill(): Promise<void>;
  /** SIGTERM (a clean stop): resolves once it has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port, environment and data folder. */
  start(): Promise<void>;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
  raw: Buffer;
}

export interface RequestOptions {
  body?: unknown;
  /** A bearer token; undefined takes the seed client's, null sends none. */
  token?: string | null;
  organization?: string | null;
  headers?: Record<string, string>;
  /** Another base URL than nginx's (an instance's own). */
  via?: string;
}

export interface Deployment {
  /** nginx's https:// address: the one the clients use, and every instance's PATIENT_DOCS_PUBLIC_URL. */
  readonly url: string;
  readonly instances: readonly Instance[];
  readonly nginx: Nginx;
  readonly postgres: TestPostgres;
  readonly databaseUrl: string;
  /** The data folder every instance shares (content files). */
  readonly dataDir: string;
  /** The test CA's certificate (PEM) that signed nginx's, also trusted by the instances (NODE_EXTRA_CA_CERTS: a webhook receiver may use it). */
  readonly caFile: string;
  /** A certificate and key of that CA for 127.0.0.1 and localhost (a webhook receiver's). */
  readonly leaf: { cert: Buffer; key: Buffer };
  /** A request through nginx (or `via` an instance), JSON in and out, trusting the test CA. */
  request(method: string, route: string, options?: RequestOptions): Promise<Answer>;
  /** A client-credentials token through nginx (the seed's scanner client by default). */
  token(client?: { id: string; secret: string }): Promise<string>;
}

export interface DeploymentOptions {
  instances?: number;
  /** Added to every instance's environment. */
  env?: Record<string, string>;
  /** Changes to the example site (as exampleSite's `changes`). */
  site?: SiteChanges;
  /** An instance's start limit. */
  startTimeoutMs?: number;
}

const UPSTREAM = 'patient_docs_instances';
const OUTPUT_KEPT = 64 * 1024;
/** Longer than the server's own shutdown grace plus its audit and database close. */
const STOP_BOUND_MS = 20_000;

/**
 * The nginx site: docs/nginx.conf.example with `proxy_pass` naming an upstream of the instances
 * (round-robin, nginx's default). An instance that refuses connections is skipped for 2 s.
 */
export function roundRobinSite(ports: readonly number[], site: { port: number; certFile: string; keyFile: string }, changes: SiteChanges = []): string {
  const upstream = [`upstream ${UPSTREAM} {`, ...ports.map((port) => `    server 127.0.0.1:${port} max_fails=1 fail_timeout=2s;`), '}', ''].join('\n');
  return upstream + exampleSite({ ...site, upstream: `http://${UPSTREAM}` }, changes);
}

function startInstance(index: number, port: number, env: Record<string, string>, startTimeoutMs: number): Instance {
  let child: ChildProcess | undefined;
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-OUTPUT_KEPT);
  };
  const exited = (process: ChildProcess): Promise<void> =>
    process.exitCode !== null || process.signalCode !== null ? Promise.resolve() : new Promise((resolve) => process.once('exit', () => resolve()));
  const end = async (signal: NodeJS.Signals): Promise<void> => {
    const running = child;
    if (!running) return;
    child = undefined;
    const gone = exited(running);
    running.kill(signal);
    // A clean stop that outlasts its bound is cut short (and said so in the output): the file's other processes still stop.
    const bound = setTimeout(() => {
      output += `--- instance ${index} had not stopped ${STOP_BOUND_MS} ms after ${signal}: killed\n`;
      running.kill('SIGKILL');
    }, STOP_BOUND_MS);
    await gone;
    clearTimeout(bound);
  };
  const instance: Instance = {
    index,
    port,
    url: `http://127.0.0.1:${port}`,
    get running() {
      return child !== undefined;
    },
    get pid() {
      return child?.pid;
    },
    output: () => output,
    kill: () => end('SIGKILL'),
    stop: () => end('SIGTERM'),
    async start() {
      if (child) throw new Error(`instance ${index} is running`);
      const started = spawn(process.execPath, [SERVER_MAIN], { cwd: ROOT, env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
      child = started;
      output += `--- instance ${index} started (pid ${started.pid})\n`;
      started.stdout!.on('data', keep);
      started.stderr!.on('data', keep);
      const stopOnExit = (): void => {
        started.kill('SIGKILL');
      };
      process.once('exit', stopOnExit);
      started.once('exit', () => {
        process.off('exit', stopOnExit);
        if (child === started) child = undefined;
      });
      const since = output.length;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`instance ${index} did not start within ${startTimeoutMs} ms:\n${output}`)), startTimeoutMs);
        const check = (): void => {
          if (!output.slice(Math.max(0, since - 1)).includes('listening on http')) return;
          clearTimeout(timer);
          started.stdout!.off('data', check);
          started.stderr!.off('data', check);
          resolve();
        };
        started.stdout!.on('data', check);
        started.stderr!.on('data', check);
        started.once('exit', (code, signal) => {
          clearTimeout(timer);
          reject(new Error(`instance ${index} exited (${code ?? signal}) while starting:\n${output}`));
        });
      });
    },
  };
  return instance;
}

function toHeaders(raw: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  return headers;
}

/** One HTTP(S) request with a body given whole (a Buffer or a string). */
export function send(url: string, method: string, options: { headers?: Record<string, string>; body?: Buffer | string; agent?: http.Agent } = {}): Promise<Answer> {
  const target = new URL(url);
  const headers = { ...options.headers, ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}) };
  const request = (target.protocol === 'https:' ? https : http).request(target, { method, headers, ...(options.agent ? { agent: options.agent } : {}) });
  return new Promise((resolve, reject) => {
    request.once('error', (error: NodeJS.ErrnoException) => {
      // A kept-alive connection the other end closed just as it was reused (Node's documented race): sent again on a new one.
      if (request.reusedSocket && error.code === 'ECONNRESET') send(url, method, options).then(resolve, reject);
      else reject(error);
    });
    request.once('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.once('error', reject);
      response.once('end', () => {
        const raw = Buffer.concat(chunks);
        let body: unknown = raw.toString();
        try {
          body = raw.length > 0 ? JSON.parse(raw.toString()) : undefined;
        } catch {
          // not JSON: kept as text
        }
        resolve({ status: response.statusCode ?? 0, headers: toHeaders(response.headers), body, raw });
      });
    });
    request.end(options.body);
  });
}

/** Starts the deployment in the calling describe's (or file's) beforeAll and removes it in its afterAll. */
export function useDeployment(options: DeploymentOptions = {}): Deployment {
  const count = options.instances ?? 2;
  const certs = makeTestCertificates('deployment', ['DNS:localhost', 'IP:127.0.0.1']);
  const certFile = path.join(certs.dir, 'leaf.pem');
  const keyFile = path.join(certs.dir, 'leaf.key');
  const agent = new https.Agent({ keepAlive: true, ca: fs.readFileSync(certs.caFile), maxSockets: 64 });
  const tokens = new Map<string, string>();
  const state = {} as { url: string; instances: Instance[]; nginx: Nginx; postgres: TestPostgres; databaseUrl: string; dataDir: string };

  const request: Deployment['request'] = async (method, route, requestOptions = {}) => {
    const headers: Record<string, string> = { ...requestOptions.headers };
    const bearer = requestOptions.token === undefined ? await deployment.token() : requestOptions.token;
    if (bearer !== null) headers.authorization = `Bearer ${bearer}`;
    const organization = requestOptions.organization === undefined ? ORG : requestOptions.organization;
    if (organization !== null) headers['organization-id'] = organization;
    let body: Buffer | string | undefined;
    if (requestOptions.body !== undefined) {
      if (Buffer.isBuffer(requestOptions.body) || typeof requestOptions.body === 'string') body = requestOptions.body;
      else {
        headers['content-type'] ??= 'application/json';
        body = JSON.stringify(requestOptions.body);
      }
    }
    const via = requestOptions.via ?? state.url;
    return send(`${via}${route}`, method, { headers, ...(body !== undefined ? { body } : {}), ...(via.startsWith('https:') ? { agent } : {}) });
  };

  const deployment: Deployment = {
    get url() {
      return state.url;
    },
    get instances() {
      return state.instances;
    },
    get nginx() {
      return state.nginx;
    },
    get postgres() {
      return state.postgres;
    },
    get databaseUrl() {
      return state.databaseUrl;
    },
    get dataDir() {
      return state.dataDir;
    },
    caFile: certs.caFile,
    leaf: { cert: certs.cert, key: certs.key },
    request,
    async token(client = CLIENT) {
      const cached = tokens.get(client.id);
      if (cached) return cached;
      const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret }).toString();
      const answer = await send(`${state.url}/oauth2/token`, 'POST', { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form, agent });
      const token = (answer.body as { access_token?: string } | undefined)?.access_token;
      if (!token) throw new Error(`token request failed: ${answer.status} ${answer.raw.toString()}`);
      tokens.set(client.id, token);
      return token;
    },
  };

  beforeAll(async () => {
    fs.writeFileSync(certFile, certs.cert);
    fs.writeFileSync(keyFile, certs.key);
    state.postgres = await startPostgres();
    state.databaseUrl = await state.postgres.createDatabase();
    state.dataDir = tempDir('deployment-data');
    const port = await nginxPort();
    state.url = `https://localhost:${port}`;
    const ports: number[] = [];
    while (ports.length < count) {
      const candidate = await freePort();
      if (candidate !== port && !ports.includes(candidate)) ports.push(candidate);
    }
    const env = {
      PATIENT_DOCS_DATABASE_URL: state.databaseUrl,
      PATIENT_DOCS_DATA_DIR: state.dataDir,
      PATIENT_DOCS_PUBLIC_URL: state.url,
      PATIENT_DOCS_TRUSTED_PROXIES: '127.0.0.1',
      PATIENT_DOCS_SEED: SEED_FILE,
      PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN,
      PATIENT_DOCS_LOG_LEVEL: 'warn',
      NODE_EXTRA_CA_CERTS: certs.caFile,
      ...options.env,
    };
    state.instances = ports.map((instancePort, index) => startInstance(index, instancePort, env, options.startTimeoutMs ?? 60_000));
    // Started at the same moment, as after a deployment: the seed and migrations apply once.
    await Promise.all(state.instances.map((instance) => instance.start()));
    state.nginx = await startNginx(roundRobinSite(ports, { port, certFile, keyFile }, options.site), port);
  });

  afterAll(async () => {
    agent.destroy();
    await state.nginx?.close();
    await Promise.all((state.instances ?? []).map((instance) => instance.stop()));
    state.postgres?.remove();
    if (state.dataDir) fs.rmSync(state.dataDir, { recursive: true, force: true });
    fs.rmSync(certs.dir, { recursive: true, force: true });
  });

  return deployment;
}

// --- startTestServer's deployment (PATIENT_DOCS_TEST_DEPLOYMENT=nginx) ------------------------------

let fileCertificates: { certFile: string; keyFile: string } | undefined;

/**
 * This test file's CA and nginx's certificate for 127.0.0.1 and localhost, made once. The file's
 * own clients trust that CA on top of the system's, as a clinic's workstations trust the clinic's:
 * fetch (undici's global dispatcher) and https.request (the global agent).
 */
function trustedCertificates(): { certFile: string; keyFile: string } {
  if (fileCertificates) return fileCertificates;
  const certs = makeTestCertificates('deployment', ['IP:127.0.0.1', 'DNS:localhost']);
  const certFile = path.join(certs.dir, 'leaf.pem');
  const keyFile = path.join(certs.dir, 'leaf.key');
  fs.writeFileSync(certFile, certs.cert);
  fs.writeFileSync(keyFile, certs.key);
  const ca = [...tls.rootCertificates, fs.readFileSync(certs.caFile, 'utf8')];
  setGlobalDispatcher(new Agent({ connect: { ca } }));
  https.globalAgent.options.ca = ca;
  process.once('exit', () => fs.rmSync(certs.dir, { recursive: true, force: true }));
  fileCertificates = { certFile, keyFile };
  return fileCertificates;
}

/**
 * Two instances in this process on one PostgreSQL database and one bucket prefix (or one content
 * folder when the run keeps content on disk), behind one nginx with the example site doing
 * round-robin over HTTPS. `url` is nginx's, and every instance's PATIENT_DOCS_PUBLIC_URL (unless
 * `env` names another), so signed links and token issuers work through it; `server` is the first
 * instance. Each instance has a data dir of its own when content is in the bucket, as on two
 * machines: nothing may pass between them through a local folder.
 */
export async function startTestDeployment(env: Record<string, string>, options: TestServerOptions): Promise<Pick<TestServer, 'url' | 'server' | 'instances' | 'dataDir' | 'close'>> {
  if (TEST_DATABASE !== 'postgres') throw new Error('PATIENT_DOCS_TEST_DEPLOYMENT=nginx needs PATIENT_DOCS_TEST_DATABASE=postgres: the instances share one database');
  const { certFile, keyFile } = trustedCertificates();
  const port = await nginxPort();
  const url = `https://127.0.0.1:${port}`;
  const contentFolder = TEST_STORAGE === 's3' ? undefined : tempDir('deployment-content');
  const shared = {
    ...(await testDatabaseEnv()),
    ...(await testStorageEnv()),
    ...(contentFolder ? { PATIENT_DOCS_DATA_DIR: contentFolder } : {}),
    PATIENT_DOCS_PUBLIC_URL: url,
    PATIENT_DOCS_TRUSTED_PROXIES: '127.0.0.1',
    ...env,
  };
  const started = await Promise.allSettled([startTestInstance(shared, options), startTestInstance(shared, options)]);
  const instances = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  let nginx: Nginx | undefined;
  const close = async (): Promise<void> => {
    await nginx?.close();
    await Promise.all(instances.map((instance) => instance.close()));
    if (contentFolder) fs.rmSync(contentFolder, { recursive: true, force: true });
  };
  try {
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    const ports = instances.map((instance) => Number(new URL(instance.server.url).port));
    nginx = await startNginx(roundRobinSite(ports, { port, certFile, keyFile }), port);
  } catch (error) {
    await close();
    throw error;
  }
  return { url, server: instances[0]!.server, instances: instances.map((instance) => instance.server), dataDir: instances[0]!.dataDir, close };
}
