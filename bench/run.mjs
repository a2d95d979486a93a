// `npm run bench`: every bench/*.mjs in turn (each prints its own figures next to its baseline).
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
let failed = 0;
for (const name of benches) {
  console.log(`\n=== ${name} ===`);
  const result = spawnSync(process.execPath, [path.join(here, name)], { stdio: 'inherit' });
  if (result.status !== 0) failed += 1;
}
process.exit(failed === 0 ? 0 : 1);
