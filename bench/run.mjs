// `npm run bench`: every bench/*.mjs in turn (each prints its own figures next to its baseline).
// `node bench/run.mjs s3 search` runs only the benches whose file name contains one of the words.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const here = import.meta.dirname;
const only = process.argv.slice(2);
const benches = fs
  .readdirSync(here)
  .filter((name) => name.endsWith('.mjs') && name !== 'run.mjs')
  .filter((name) => only.length === 0 || only.some((wanted) => name.includes(wanted)))
  .sort();
// Benches run a second time with other arguments: s3.mjs against Ceph's RADOS Gateway as well as
// s3rver (256 MiB there: RGW's uploads are slow enough that 1 GiB twice each way takes minutes; it
// says it is skipped where radosgw is not installed).
const AGAIN = { 's3.mjs': [['--store=rgw', '--quick']] };
const runs = benches.flatMap((name) => [[name], ...(AGAIN[name] ?? []).map((args) => [name, ...args])]);
let failed = 0;
for (const [name, ...args] of runs) {
  console.log(`\n=== ${[name, ...args].join(' ')} ===`);
  const result = spawnSync(process.execPath, [path.join(here, name), ...args], { stdio: 'inherit' });
  if (result.status !== 0) failed += 1;
}
process.exit(failed === 0 ? 0 : 1);
