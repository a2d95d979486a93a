/** A full disk for real: the tests mount a small tmpfs (they run as root, like CI) and fill it. */
import fs from 'node:fs';

/**
 * Appends to `filler` until the file system holding it has no byte left (halving the write at
 * each ENOSPC, so even the last blocks are taken), then gives `free` bytes back: a clinic's disk
 * at its last megabyte. Returns `filler`, to delete once space is to be freed.
 */
export function fillDisk(filler: string, free = 0): string {
  const descriptor = fs.openSync(filler, 'a');
  const chunk = Buffer.alloc(256 * 1024, 1);
  try {
    for (let size = chunk.length; size >= 512; ) {
      try {
        fs.writeSync(descriptor, chunk, 0, size);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
        size /= 2;
      }
    }
  } finally {
    fs.closeSync(descriptor);
  }
  if (free > 0) fs.truncateSync(filler, Math.max(0, fs.statSync(filler).size - free));
  return filler;
}
