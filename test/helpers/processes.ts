/** Real processes for end-to-end sync tests: the server, and the patient-docs-sync CLI. */
import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';
import { createHash } from 'node:crypto';
import { ADMIN_TOKEN, CLIENT, SEED_FILE, tempDir, testStorageEnv } from './server.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
/**
 * The built entry points (test/global-setup.ts builds them before any test): what IT and the
 * installed app run, the bins' bundle (scripts/build-bins.mjs).
 */
export const SERVER_MAIN = path.join(ROOT, 'dist/bins/node/patient-docs-server.js');
export const ADMIN_CLI = path.join(ROOT, 'dist/bins/node/patient-docs-admin.js');
export const SYNC_CLI = path.join(ROOT, 'dist/bins/node/patient-docs-sync.js');
/**
 * The same entry points as `tsc -b` builds them, one module file per source file: what a test of
 * which modules a command loads reads (test/cli-start.e2e.test.ts). The bundle keeps each lazily
 * imported module in files of its own, loaded when the code imports it, as here.
 */
export const MODULES = {
  server: path.join(ROOT, 'dist/server/main.js'),
  admin: path.join(ROOT, 'dist/server/admin/cli.js'),
  sync: path.join(ROOT, 'dist/electron/sync/cli/cli.js'),
} as const;
/** What the admin CLI's entry runs for one command, without exiting (its output and exit code). */
export const ADMIN_RUN = path.join(ROOT, 'dist/server/admin/cli-run.js');

/**
 * The run's storage for a server process on `dataDir` (PATIENT_DOCS_TEST_STORAGE, as the in-process
 * test server takes it): nothing on the local disk; in S3 a bucket prefix named after the data
 * directory, so a restart on the same data finds the same objects, and the admin CLI too.
 */
export function processStorageEnv(dataDir: string): Promise<Record<string, string>> {
  return testStorageEnv(`server-${createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 12)}`);
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  dataDir: string;
  stop(): Promise<void>;
}

/** The ports the system hands out itself (listen on 0, a connection's own end): Linux's ip_local_port_range. */
function systemPorts(): { low: number; high: number } {
  try {
    const [low, high] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return { low: low!, high: high! };
  } catch {
    // Not Linux: the usual range.
  }
  return { low: 32768, high: 60999 };
}

/** Below the system's range, so no listen(0) or outgoing connection of another test takes it. */
const OWN_PORTS = (() => {
  const { low } = systemPorts();
  return { from: Math.max(10_000, low - 12_000), to: low - 1 };
})();

/**
 * Ports handed out by freePort, one marker folder each, shared by the test processes of one machine:
 * a port another test file picked a moment ago, whose server is still starting (not yet listening,
 * so free to a probe), is not handed out a second time. A process removes its markers when it exits
 * normally; one ended by a signal (a test worker) leaves them, and a marker older than
 * PORT_RESERVATION_MS is taken over (a port still in use is then refused by the probe).
 */
const PORT_RESERVATIONS = path.join(os.tmpdir(), 'patient-docs-test-ports');
const PORT_RESERVATION_MS = 30 * 60_000;
const reservedHere = new Set<string>();

function reservePort(port: number): boolean {
  const marker = path.join(PORT_RESERVATIONS, String(port));
  fs.mkdirSync(PORT_RESERVATIONS, { recursive: true });
  try {
    fs.mkdirSync(marker);
  } catch {
    try {
      if (Date.now() - fs.statSync(marker).mtimeMs < PORT_RESERVATION_MS) return false;
      fs.utimesSync(marker, new Date(), new Date());
    } catch {
      return false;
    }
  }
  if (reservedHere.size === 0) process.once('exit', () => reservedHere.forEach((folder) => fs.rmSync(folder, { recursive: true, force: true })));
  reservedHere.add(marker);
  return true;
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/**
 * A port that was free a moment ago, for a server a test starts on a port it must know beforehand
 * (a public URL, a proxy in front, the same port after a restart). Picked at random below the range
 * the system hands out itself: a port from listen(0) could be given to another test's connection or
 * server between this check and the server's own listen (seen once with two test files at a time).
 */
export async function freePort(): Promise<number> {
  if (OWN_PORTS.to > OWN_PORTS.from) {
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const port = OWN_PORTS.from + Math.floor(Math.random() * (OWN_PORTS.to - OWN_PORTS.from + 1));
      if (reservePort(port) && (await portIsFree(port))) return port;
    }
  }
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startServerProcess(env: Record<string, string> = {}): Promise<ServerProcess> {
  // A data directory the caller names is the caller's to keep or remove; one made here is removed here.
  const owned = env.PATIENT_DOCS_DATA_DIR === undefined;
  const dataDir = env.PATIENT_DOCS_DATA_DIR ?? tempDir('server-process');
  const removeOwned = () => {
    if (owned) fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const port = env.PORT ?? String(await freePort());
  const storage = await processStorageEnv(dataDir);
  const child = spawn(process.execPath, [SERVER_MAIN], {
    cwd: ROOT,
    env: { ...process.env, PORT: port, PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: SEED_FILE, PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN, PATIENT_DOCS_LOG_LEVEL: 'warn', ...storage, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/[^\s;]+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited (${code}):\n${output}`)));
  }).catch((error: unknown) => {
    // Not started in time: it must not keep running (and holding its port and data) after the file.
    child.kill('SIGKILL');
    removeOwned();
    throw error;
  });
  return {
    url,
    child,
    dataDir,
    stop: async () => {
      await stopProcess(child);
      removeOwned();
    },
  };
}

/** A server stopped and started again on one port and data directory: the clinic's box rebooting. */
export interface RestartableServer {
  /** The server's address (the same across restarts). */
  readonly url: string;
  start(): Promise<string>;
  /** Stops the process and keeps its data for the next start. */
  stop(): Promise<void>;
  /** Stops it for good and removes its data. */
  close(): Promise<void>;
}

export async function restartableServer(dataDir: string): Promise<RestartableServer> {
  const port = String(await freePort());
  let server: ServerProcess | undefined;
  let url = '';
  return {
    get url() {
      return url;
    },
    async start() {
      server = await startServerProcess({ PORT: port, PATIENT_DOCS_DATA_DIR: dataDir });
      url = server.url;
      return url;
    },
    async stop() {
      if (server) await stopProcess(server.child);
      server = undefined;
    },
    async close() {
      await server?.stop();
      server = undefined;
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** SIGTERM, and resolves once the process has exited (at once if it already had). */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Starts `patient-docs-sync <args>` (built) with its own PATIENT_DOCS_SYNC_HOME; `wrapper`
 * runs it through another command first (e.g. setpriv, to run it as another user).
 */
export function spawnCli(home: string, args: string[], env: Record<string, string> = {}, stdin?: string, wrapper: readonly string[] = []): { child: ChildProcess; done: Promise<CliResult> } {
  const command = [...wrapper, process.execPath, SYNC_CLI, ...args];
  const child = spawn(command[0]!, command.slice(1), {
    cwd: ROOT,
    env: { ...process.env, PATIENT_DOCS_SYNC_HOME: home, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin!.end(stdin ?? '');
  const done = new Promise<CliResult>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done };
}

export function runCli(home: string, args: string[], env: Record<string, string> = {}, stdin?: string, wrapper: readonly string[] = []): Promise<CliResult> {
  return spawnCli(home, args, env, stdin, wrapper).done;
}

/** `npm run admin -- <args>` (built) on a server's data directory (and the run's storage of it), as IT runs it. */
/**
 * What an admin command wrote to stderr besides its notice that it waits for a busy database (an
 * SQLite write of the running server at the same moment: the command waits, then does its work).
 */
export function stderrBesidesBusyWait(stderr: string): string {
  return stderr.replace(/^patient-docs-admin: the database is busy \(another process is writing to it\); waiting up to \d+ s…\n/gm, '');
}

export async function runAdmin(dataDir: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const storage = await processStorageEnv(dataDir);
  const child = spawn(process.execPath, [ADMIN_CLI, ...args], { cwd: ROOT, env: { ...process.env, PATIENT_DOCS_DATA_DIR: dataDir, ...storage, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise<CliResult>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

export interface AdminResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout as JSON. */
  json(): any;
}

/** `patient-docs-admin` commands run one after another in one process (see adminCommands). */
export interface AdminCommands {
  run(...args: string[]): Promise<AdminResult>;
  close(): Promise<void>;
}

/**
 * One process of the built admin CLI's code (cli-run.js, what its entry runs) that runs the
 * commands it is sent one after another, each with the output and exit code the CLI would give:
 * for tests about many commands' results rather than the CLI's start-up (each process start costs
 * about half a second of CPU). `env` is the environment of every command (the data directory…).
 */
export function adminCommands(env: Record<string, string>): AdminCommands {
  // What a command prints itself while it runs (a notice on stderr, say) comes before what it returns, as in the CLI's own output.
  const script = `
    import readline from 'node:readline';
    import { runAdminCommand } from ${JSON.stringify(pathToFileURL(ADMIN_RUN).href)};
    const answer = process.stdout.write.bind(process.stdout);
    for await (const line of readline.createInterface({ input: process.stdin })) {
      const printed = { stdout: '', stderr: '' };
      const own = { stdout: process.stdout.write, stderr: process.stderr.write };
      for (const name of ['stdout', 'stderr']) process[name].write = (chunk, ...rest) => ((printed[name] += String(chunk)), rest.find((arg) => typeof arg === 'function')?.(), true);
      let result;
      try {
        result = await runAdminCommand(JSON.parse(line));
      } finally {
        Object.assign(process.stdout, { write: own.stdout });
        Object.assign(process.stderr, { write: own.stderr });
      }
      answer(JSON.stringify({ code: result.code, stdout: printed.stdout + result.stdout, stderr: printed.stderr + result.stderr }) + '\\n');
    }
    process.exit(0);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const answers = readline.createInterface({ input: child.stdout! });
  const waiting: Array<(line: string) => void> = [];
  answers.on('line', (line) => waiting.shift()?.(line));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => {
    for (const resolve of waiting.splice(0)) resolve(JSON.stringify({ code: -1, stdout: '', stderr: `the admin commands process exited:\n${errors}` }));
  });
  let queue = Promise.resolve();
  return {
    run: (...args: string[]) => {
      const answer = queue.then(
        () =>
          new Promise<AdminResult>((resolve) => {
            waiting.push((line) => {
              const result = JSON.parse(line) as Omit<AdminResult, 'json'>;
              resolve({ ...result, json: () => JSON.parse(result.stdout) });
            });
            child.stdin!.write(`${JSON.stringify(args)}\n`);
          }),
      );
      queue = answer.then(() => undefined);
      return answer;
    },
    close: async () => {
      child.stdin!.end();
      await exited;
    },
  };
}

/** The outbox rows of one event type in a server's database (read-only, beside the running server), oldest first. */
export function outboxEvents(dataDir: string, eventType: string): Array<{ data: any }> {
  const db = new Database(path.join(dataDir, 'patient-docs.sqlite'), { readonly: true });
  try {
    return (db.prepare('SELECT data FROM outbox_events WHERE event_type = ? ORDER BY rowid').all(eventType) as Array<{ data: string }>).map((row) => ({ data: JSON.parse(row.data) }));
  } finally {
    db.close();
  }
}

/** A server process on `port` that a crash test kills with SIGKILL (a power-cycled box) and starts again on the same data. */
export interface KillableServer {
  url: string;
  child: ChildProcess;
  /** SIGKILL, resolved once the process has exited. */
  kill(): Promise<void>;
}

/**
 * Starts the built server on `port` with the test seed, the run's storage and `env` (the data folder among it), adds
 * it to `children` (for the file's afterAll to kill), and resolves once it listens.
 */
export async function startKillableServer(port: number, env: Record<string, string>, children: ChildProcess[]): Promise<KillableServer> {
  const storage = env.PATIENT_DOCS_DATA_DIR ? await processStorageEnv(env.PATIENT_DOCS_DATA_DIR) : {};
  const child = spawn(process.execPath, [SERVER_MAIN], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), PATIENT_DOCS_SEED: SEED_FILE, PATIENT_DOCS_ADMIN_TOKEN: ADMIN_TOKEN, PATIENT_DOCS_LOG_LEVEL: 'warn', ...storage, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes('listening on')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited (${code}):\n${output}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    kill: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** A client-credentials token from the server at `url` (the seed's scanner client by default); throws with the answer when refused. */
export async function clientToken(url: string, client: { id: string; secret: string } = CLIENT): Promise<string> {
  const response = await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret }) });
  const body = (await response.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`token request failed: ${response.status} ${JSON.stringify(body)}`);
  return body.access_token;
}
