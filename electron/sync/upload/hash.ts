/** SHA-256 of a file: streamed from disk, or taken from the bytes as an upload sends them. */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { LARGE_CHUNK_BYTES } from './bandwidth.js';

/** Read through one buffer, reused chunk after chunk (a buffer per chunk costs more CPU than the hash). */
export async function sha256File(filePath: string, signal?: AbortSignal): Promise<string> {
  const hash = createHash('sha256');
  const handle = await open(filePath, 'r');
  try {
    const buffer = Buffer.allocUnsafeSlow(LARGE_CHUNK_BYTES);
    for (;;) {
      signal?.throwIfAborted();
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
  return hash.digest('hex');
}

/**
 * The SHA-256 of a file's bytes as an upload reads them, so a large scan is read once, not once to
 * send and once more to hash. Bytes must come in file order from offset 0: a piece sent again
 * (a resumed PATCH) is skipped up to where the hash stands; bytes past it (an upload resumed from
 * an offset an earlier run reached) leave the hash incomplete, and the file is hashed from disk.
 */
export class SentBytesHash {
  private readonly hash = createHash('sha256');
  /** Bytes hashed so far: the next byte the hash takes is at this offset. */
  private hashed = 0;
  private broken = false;
  private digestHex: string | undefined;

  constructor(readonly size: number) {}

  /** `bytes` were read from the file at `offset`. */
  add(offset: number, bytes: Buffer): void {
    if (this.broken || this.digestHex !== undefined) return;
    const end = offset + bytes.length;
    if (end <= this.hashed) return;
    if (offset > this.hashed) {
      this.broken = true;
      return;
    }
    this.hash.update(offset === this.hashed ? bytes : bytes.subarray(this.hashed - offset));
    this.hashed = end;
  }

  /** The hash of all `size` bytes, or null when some were not seen in order. */
  digest(): string | null {
    if (this.digestHex !== undefined) return this.digestHex;
    if (this.broken || this.hashed !== this.size) return null;
    this.digestHex = this.hash.digest('hex');
    return this.digestHex;
  }
}
