/**
 * A second S3-compatible server for tests, one that checks request signatures (AWS SigV4): Ceph's
 * RADOS Gateway (Debian's `radosgw`, `ceph-mon`, `ceph-osd`, Ceph 16 Pacific) on a one-node cluster
 * the test starts itself. One monitor, one OSD keeping its objects in memory (memstore), pools of
 * one copy, no manager (RGW needs none), and RGW's beast front end on 127.0.0.1:<free port>; a user
 * of its own made with radosgw-admin, its bucket made with the AWS SDK. Everything (the ceph.conf,
 * the monitor's and the OSD's data, run dir, admin sockets, logs) lives in one temp folder; the
 * daemons run in the foreground as child processes, killed and the folder removed at close() or
 * when the process exits.
 *
 * Inside the cluster there is no cephx (auth_*_required = none, loopback only); what is under test
 * is RGW's S3 authentication, which checks each request's signature against its users' keys
 * whatever the cluster's own authentication is.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { freePort } from './processes.js';
import { s3Access, testS3Client, type S3CompatibleServer, type S3Credentials } from './s3.js';

const run = promisify(execFile);

/** The Debian packages the cluster's programs come from (`.ci/run` installs them). */
export const CEPH_PACKAGES = ['ceph-mon', 'ceph-osd', 'radosgw'] as const;
const PROGRAMS = ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'monmaptool', 'ceph'];

/** How long the cluster may take to answer S3 requests (a few seconds on an idle machine). */
const START_TIMEOUT_MS = 90_000;

export type TestRgw = S3CompatibleServer;

function programsMissing(): string[] {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  return PROGRAMS.filter((program) => !dirs.some((dir) => fs.existsSync(path.join(dir, program))));
}

/** Ceph's debug subsystems a request goes through (logged at 1/5 and the like by default). */
const QUIET_SUBSYSTEMS = ['rgw', 'osd', 'ms', 'objecter', 'rados', 'memstore', 'filestore', 'bluestore', 'journal', 'objclass', 'monc', 'auth', 'mon', 'paxos', 'context', 'asok', 'throttle', 'finisher', 'buffer', 'timer', 'heartbeatmap', 'perfcounter', 'none'];

function cephConf(root: string, fsid: string, monPort: number, rgwPort: number): string {
  return `[global]
fsid = ${fsid}
mon host = v2:127.0.0.1:${monPort}
mon initial members = a
public addr = 127.0.0.1
ms bind msgr1 = false
ms bind ipv6 = false
# Loopback only, one node: no cephx inside the cluster (S3 requests are still signed and checked).
auth cluster required = none
auth service required = none
auth client required = none
# radosgw asks for a secure monitor connection by default, which needs cephx.
ms mon client mode = crc
run dir = ${root}/run
admin socket = ${root}/run/$name.asok
pid file = ${root}/run/$name.pid
log file = ${root}/log/$name.log
crash dir = ${root}/crash
# The cluster and audit logs would go to /var/log/ceph: only the daemons' own logs, in the folder.
mon cluster log to file = false
keyring = ${root}/keyring
mon data = ${root}/mon
# Each map change (the OSD, each of RGW's pools) waits for the monitor's next proposal: 1 s apart
# by default, 10 s of RGW's first start; at once here.
paxos propose interval = 0.01
paxos min wait = 0.001
# A busy shared disk must not make the monitor stop (it does below 5 % free by default).
mon data avail crit = 0
mon data avail warn = 0
osd data = ${root}/osd
osd objectstore = memstore
memstore device bytes = ${2 * 1024 * 1024 * 1024}
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
osd pool default pg num = 1
osd pool default pgp num = 1
osd pool default pg autoscale mode = off
rgw data = ${root}/rgw
rgw frontends = beast endpoint=127.0.0.1:${rgwPort}
# Only errors and level-0 lines in the logs, none gathered in memory: a third less CPU per request.
${QUIET_SUBSYSTEMS.map((subsystem) => `debug ${subsystem} = 0/0`).join('\n')}
`;
}

/** Whether something answers TCP connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export async function startCephRgw(bucket = 'patient-docs'): Promise<TestRgw> {
  const missing = programsMissing();
  if (missing.length > 0) {
    throw new Error(`Ceph RGW tests need ${missing.join(', ')}: apt-get install --no-install-recommends ${CEPH_PACKAGES.join(' ')} (as .ci/run does)`);
  }
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-rgw-'));
  for (const folder of ['run', 'log', 'mon', 'osd', 'rgw', 'crash']) fs.mkdirSync(path.join(root, folder));
  const conf = path.join(root, 'ceph.conf');
  const [monPort, rgwPort] = [await freePort(), await freePort()];
  const fsid = randomUUID();
  fs.writeFileSync(conf, cephConf(root, fsid, monPort, rgwPort));
  // A failed start stops the tools still running too (`ceph` waits for a monitor that may be gone).
  const stopTools = new AbortController();
  const tool = async (program: string, args: string[]): Promise<string> => {
    try {
      return (await run(program, ['-c', conf, ...args], { encoding: 'utf8', timeout: START_TIMEOUT_MS, signal: stopTools.signal })).stdout;
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      throw new Error(`${program} ${args.join(' ')} failed:\n${stdout ?? ''}${stderr ?? ''}`, { cause: error });
    }
  };

  /** The last lines of each daemon's log, for an error (the folder goes with the failed start). */
  const logTails = (): string =>
    fs
      .readdirSync(path.join(root, 'log'))
      .map((file) => `--- ${file}\n${fs.readFileSync(path.join(root, 'log', file), 'utf8').trimEnd().split('\n').slice(-15).join('\n')}`)
      .join('\n');
  const daemons: ChildProcess[] = [];
  let exited: ((error: Error) => void) | undefined;
  const daemonExit = new Promise<never>((_, reject) => (exited = reject));
  daemonExit.catch(() => undefined);
  let closed = false;
  const kill = (): void => {
    // The OSD keeps its objects in memory: nothing to save, so no graceful stop.
    for (const daemon of daemons) if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill('SIGKILL');
  };
  const remove = (): void => {
    closed = true;
    process.off('exit', remove);
    stopTools.abort();
    kill();
    fs.rmSync(root, { recursive: true, force: true });
  };
  // A file that fails or is interrupted still leaves no daemon running behind it.
  process.on('exit', remove);
  const daemon = (program: string, args: string[]): void => {
    const child = spawn(program, ['-f', '-c', conf, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    child.once('exit', (code, signal) => {
      if (closed) return;
      exited?.(new Error(`${program} exited (${code ?? signal}):\n${stderr}${logTails()}`));
    });
    daemons.push(child);
  };

  const accessKeyId = `RGW${randomBytes(8).toString('hex').toUpperCase()}`;
  const credentials: S3Credentials = { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: randomBytes(20).toString('base64url'), AWS_REGION: 'us-east-1' };
  const endpoint = `http://127.0.0.1:${rgwPort}`;
  // As createS3Client does (server/storage/s3.ts): no Node-version notice from the SDK on every start.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const client = (): S3Client => testS3Client(endpoint, credentials);

  const starting = (async () => {
    await run('monmaptool', ['--create', '--fsid', fsid, '--addv', 'a', `[v2:127.0.0.1:${monPort}]`, path.join(root, 'monmap')]);
    await tool('ceph-mon', ['--mkfs', '-i', 'a', '--monmap', path.join(root, 'monmap')]);
    daemon('ceph-mon', ['-i', 'a']);
    // The first command waits for the monitor to answer; the OSD is made once it is in the map.
    const osdUuid = randomUUID();
    await tool('ceph', ['--connect-timeout', '60', 'osd', 'new', osdUuid]);
    await tool('ceph-osd', ['--mkfs', '-i', '0', '--osd-uuid', osdUuid]);
    daemon('ceph-osd', ['-i', '0']);
    // radosgw makes its realm, zone and pools at its first start, and waits for the OSD to hold them.
    daemon('radosgw', ['-n', 'client.rgw']);
    while (!(await listening(rgwPort))) {
      if (closed) throw new Error('closed while starting');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await tool('radosgw-admin', ['user', 'create', '--uid', 'patient-docs-test', '--display-name', 'Patient Docs tests', '--access-key', credentials.AWS_ACCESS_KEY_ID, '--secret-key', credentials.AWS_SECRET_ACCESS_KEY]);
    const s3 = client();
    try {
      await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    } finally {
      s3.destroy();
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      starting,
      daemonExit,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`Ceph RGW did not answer within ${START_TIMEOUT_MS / 1000} s:\n${logTails()}`)), START_TIMEOUT_MS))),
    ]);
  } catch (error) {
    remove();
    await starting.catch(() => undefined);
    throw error;
  } finally {
    clearTimeout(timer);
  }

  return {
    endpoint,
    bucket,
    credentials,
    ...s3Access(endpoint, bucket, credentials),
    close: async () => {
      if (closed) return;
      closed = true;
      const gone = daemons.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => new Promise((resolve) => child.once('exit', resolve)));
      kill();
      await Promise.all(gone);
      remove();
    },
  };
}
