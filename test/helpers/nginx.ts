/**
 * A real nginx for end-to-end tests, started per test file with its own configuration in a temp
 * folder (pid, logs and temp files inside it; never the system service), in the foreground so it
 * stops with a signal. Works as root (CI) and as any other user.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort, ROOT } from './processes.js';
import { tempDir } from './server.js';

/** The site file docs/operations.md points IT to; the tests run exactly this file. */
export const EXAMPLE_CONFIG = path.join(ROOT, 'docs/nginx.conf.example');

export interface Nginx {
  /** https://localhost:PORT (or http:// for a plain site). */
  url: string;
  port: number;
  dir: string;
  /** nginx's error log so far (a 413, a timeout, an upstream that went away are written here). */
  errorLog(): string;
  accessLog(): string;
  /** Rewrites the site and reloads it as IT would (`nginx -s reload`); resolves once new workers run. */
  reload(site: string): Promise<void>;
  close(): Promise<void>;
}

/** The nginx binary: on PATH, or where Debian puts it (/usr/sbin is not on a non-root user's PATH). */
export function nginxBinary(): string {
  for (const candidate of [...(process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'nginx')), '/usr/sbin/nginx', '/usr/local/sbin/nginx']) {
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  throw new Error('nginx is not installed: the proxy tests need a real nginx (Debian: apt-get install nginx; .ci/run installs it)');
}

export interface ExampleSite {
  port: number;
  certFile: string;
  keyFile: string;
  upstream: string;
  serverName?: string;
}

/**
 * docs/nginx.conf.example with its placeholders replaced: the name, the port, the certificate
 * paths and the server's address. Every placeholder must be found, so the file and the test cannot
 * drift apart; `changes` then edits the directives a test varies (and must match too).
 */
export function exampleSite(site: ExampleSite, changes: Array<[from: string | RegExp, to: string]> = []): string {
  let text = fs.readFileSync(EXAMPLE_CONFIG, 'utf8');
  const replacements: Array<[string | RegExp, string]> = [
    ['listen 443 ssl;', `listen 127.0.0.1:${site.port} ssl;`],
    ['server_name docs.example.org;', `server_name ${site.serverName ?? 'localhost'};`],
    ['/etc/ssl/patient-docs/fullchain.pem', site.certFile],
    ['/etc/ssl/patient-docs/privkey.pem', site.keyFile],
    ['proxy_pass http://127.0.0.1:8080;', `proxy_pass ${site.upstream};`],
    ...changes,
  ];
  for (const [from, to] of replacements) {
    const found = typeof from === 'string' ? text.includes(from) : from.test(text);
    if (!found) throw new Error(`docs/nginx.conf.example no longer has ${String(from)}: update the test with the file`);
    text = text.replace(from, to);
  }
  return text;
}

/**
 * Starts nginx with `http { <site> }`; the site holds `server { }` blocks (see exampleSite).
 * Resolves once it accepts connections on `port`.
 */
export async function startNginx(site: string, port: number, options: { scheme?: 'https' | 'http' } = {}): Promise<Nginx> {
  const binary = nginxBinary();
  const dir = tempDir('nginx');
  // As root the worker processes run as nobody: they must reach the temp folders in here.
  fs.chmodSync(dir, 0o755);
  const conf = path.join(dir, 'nginx.conf');
  const write = (site: string) => fs.writeFileSync(
    conf,
    [
      `pid ${path.join(dir, 'nginx.pid')};`,
      `error_log ${path.join(dir, 'error.log')} info;`,
      'worker_processes 1;',
      'events { worker_connections 256; }',
      'http {',
      `  access_log ${path.join(dir, 'access.log')};`,
      `  client_body_temp_path ${path.join(dir, 'client_body')};`,
      `  proxy_temp_path ${path.join(dir, 'proxy')};`,
      `  fastcgi_temp_path ${path.join(dir, 'fastcgi')};`,
      `  uwsgi_temp_path ${path.join(dir, 'uwsgi')};`,
      `  scgi_temp_path ${path.join(dir, 'scgi')};`,
      site,
      '}',
      '',
    ].join('\n'),
  );
  write(site);
  // -e: the compiled-in /var/log/nginx/error.log is not writable for a non-root user.
  const args = ['-e', path.join(dir, 'error.log'), '-p', dir, '-c', conf];
  const check = () => {
    try {
      execFileSync(binary, [...args, '-t', '-q'], { stdio: 'pipe' });
    } catch (error) {
      throw new Error(`nginx refused the configuration:\n${String((error as { stderr?: Buffer }).stderr ?? error)}\n${fs.readFileSync(conf, 'utf8')}`, { cause: error });
    }
  };
  check();
  const child: ChildProcess = spawn(binary, [...args, '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] });
  // A test worker that ends without close() (a timed-out hook, a crash) does not leave nginx
  // running: SIGTERM is nginx's fast shutdown, master and workers alike.
  const stopWithWorker = () => child.kill('SIGTERM');
  process.once('exit', stopWithWorker);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 15_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      process.off('exit', stopWithWorker);
      throw new Error(`nginx did not start (${child.exitCode ?? 'still starting'}):\n${output}\n${readIfThere(path.join(dir, 'error.log'))}`);
    }
    await delay(50);
  }
  return {
    url: `${options.scheme ?? 'https'}://localhost:${port}`,
    port,
    dir,
    errorLog: () => readIfThere(path.join(dir, 'error.log')),
    accessLog: () => readIfThere(path.join(dir, 'access.log')),
    reload: async (next) => {
      write(next);
      check();
      const log = () => readIfThere(path.join(dir, 'error.log'));
      const started = () => [...log().matchAll(/start worker process (\d+)/g)].map((match) => match[1]!);
      const old = started();
      child.kill('SIGHUP');
      // Reloaded once a new worker runs and every old one stopped taking connections: until then a
      // new connection may still reach an old worker, which serves it with the old configuration.
      const stoppedAccepting = (pid: string) => log().includes(`${pid}#${pid}: gracefully shutting down`) || log().includes(`worker process ${pid} exited`);
      const until = Date.now() + 15_000;
      while (started().length === old.length || !old.every(stoppedAccepting)) {
        if (Date.now() > until) throw new Error(`nginx did not reload:\n${log()}`);
        await delay(50);
      }
    },
    close: async () => {
      process.off('exit', stopWithWorker);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        // SIGTERM: nginx's fast shutdown (the master stops its workers, then exits).
        child.kill('SIGTERM');
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A port for nginx to listen on. */
export const nginxPort = freePort;

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function readIfThere(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
