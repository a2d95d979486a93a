// The S3-compatible stores bench/s3.mjs measures against, each on loopback with one bucket:
//   s3rver   (npm, Node) in a process of its own, objects in a folder of the bench's
//   rgw      Ceph's RADOS Gateway (C++) on a one-node cluster whose OSD keeps objects in memory:
//            test/helpers/ceph-rgw.ts itself, loaded through tsx (test helpers are not compiled to
//            JavaScript), so the bench starts the very cluster the tests run against. It runs in a
//            process of its own too (the helper loads the server's sources: kept out of the
//            bench's reader, whose CPU is measured), the daemons its children.
// Each store says which of its processes move the bytes, for the bench's CPU figures.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
export const STORES = ['s3rver', 'rgw'];

/**
 * Starts `kind` with `bucket` made. `capacity` is the bytes the bench will store in all (only RGW's
 * in-memory OSD has a size). Resolves to { name, endpoint, bucket, credentials, processes(), close() },
 * processes() giving [{ name, pid }] of the store's processes that serve requests.
 */
export async function startStore(kind, { bucket, folder, capacity }) {
  if (kind === 's3rver') return startS3rver(bucket, folder);
  if (kind === 'rgw') return startRgw(bucket, capacity);
  throw new Error(`unknown store ${kind}: one of ${STORES.join(', ')}`);
}

/** Why `kind` cannot run on this machine, or undefined. */
export function storeMissing(kind) {
  if (kind !== 'rgw') return undefined;
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  const missing = ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin'].filter((program) => !dirs.some((dir) => fs.existsSync(path.join(dir, program))));
  return missing.length > 0 ? `${missing.join(', ')}, not installed here (apt-get install --no-install-recommends ceph-mon ceph-osd radosgw)` : undefined;
}

async function startS3rver(bucket, folder) {
  fs.mkdirSync(folder, { recursive: true });
  const child = spawn(process.execPath, [import.meta.filename, '--s3rver', folder, bucket], { stdio: ['ignore', 'pipe', 'inherit'] });
  const endpoint = await new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      const match = /s3rver on (\S+)/.exec(String(chunk));
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`s3rver exited ${code}`)));
  });
  return {
    name: 's3rver',
    endpoint,
    bucket,
    credentials: { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' },
    processes: () => [{ name: 's3rver', pid: child.pid }],
    close: () => stopChild(child),
  };
}

async function startRgw(bucket, capacity) {
  // The helper's OSD holds 2 GiB; a bench of several 1 GiB runs keeps more. Ceph's programs read
  // CEPH_ARGS as command-line options, which win over the helper's ceph.conf.
  const GiB = 1024 ** 3;
  const bytes = Math.ceil(capacity / GiB + 1) * GiB;
  const env = { ...process.env, CEPH_ARGS: `${process.env.CEPH_ARGS ?? ''} --memstore_device_bytes=${bytes}`.trim() };
  // Its stdin stays open while this process lives: the cluster goes when the bench does, however it ends.
  const child = spawn(process.execPath, [import.meta.filename, '--rgw', bucket], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  const { endpoint, credentials } = await new Promise((resolve, reject) => {
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const match = /^rgw (.*)$/m.exec(output);
      if (match) resolve(JSON.parse(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`Ceph RGW exited ${code}`)));
  });
  // The helper runs the daemons as children of its process.
  const daemons = childProcesses(child.pid).filter(({ name }) => name === 'radosgw' || name === 'ceph-osd');
  return {
    name: 'rgw',
    endpoint,
    bucket,
    credentials,
    processes: () => daemons,
    close: () => stopChild(child),
  };
}

/** The direct children of `pid` (from /proc): [{ name, pid }], name as the kernel keeps it (15 characters). */
function childProcesses(pid) {
  const children = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (parent === pid) children.push({ name, pid: Number(entry) });
  }
  return children.sort((a, b) => a.name.localeCompare(b.name));
}

/** Stops a child process and waits for it to exit (at most 20 s). */
export function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGTERM');
    setTimeout(resolve, 20_000).unref();
  });
}

if (process.argv[1] === import.meta.filename && process.argv[2] === '--s3rver') {
  // The store, in a process of its own: neither client shares its CPU.
  const [folder, bucket] = process.argv.slice(3);
  const { default: S3rver } = await import('s3rver');
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: folder, configureBuckets: [{ name: bucket, configs: [] }] });
  const { port } = await server.run();
  console.log(`s3rver on http://127.0.0.1:${port}`);
}

if (process.argv[1] === import.meta.filename && process.argv[2] === '--rgw') {
  const { tsImport } = await import('tsx/esm/api');
  const { startCephRgw } = await tsImport(path.join(ROOT, 'test/helpers/ceph-rgw.ts'), import.meta.url);
  const rgw = await startCephRgw(process.argv[3]);
  const stop = () => rgw.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdin.resume();
  process.stdin.once('end', stop);
  console.log(`rgw ${JSON.stringify({ endpoint: rgw.endpoint, credentials: rgw.credentials })}`);
}
