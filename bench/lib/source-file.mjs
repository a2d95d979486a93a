// The file an upload bench sends: `size` bytes that do not compress and differ block by block
// (each 4 MiB block starts with its own offset), written once before the runs.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';

const BLOCK = 4 * 1024 * 1024;

export async function writeSourceFile(file, size) {
  const out = fs.createWriteStream(file);
  const block = randomBytes(BLOCK);
  for (let written = 0; written < size; written += block.length) {
    block.writeUInt32LE(written, 0);
    if (!out.write(Buffer.from(block))) await new Promise((resolve) => out.once('drain', resolve));
  }
  await new Promise((resolve) => out.end(resolve));
}
