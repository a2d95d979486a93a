import { describe, expect, it } from 'vitest';
import { grownPiece, MAX_PATCH_BYTES, PIECE_SECONDS } from './tus-upload.js';

const MiB = 1024 * 1024;

describe('the piece size an upload earns from the speed of its last piece', () => {
  it('stays at 64 MiB on a slow clinic link: the server acknowledges progress every 64 MiB', () => {
    // 64 MiB in 30 s (about 18 Mbit/s): five seconds of it is far less than a piece.
    expect(grownPiece(64 * MiB, 30_000)).toBe(64 * MiB);
  });

  it('grows to about PIECE_SECONDS of sending on a fast link, in whole MiB', () => {
    // 64 MiB in 2 s: 32 MiB a second.
    expect(grownPiece(64 * MiB, 2_000)).toBe(32 * MiB * PIECE_SECONDS);
    expect(grownPiece(100 * MiB + 5, 1_000) % MiB).toBe(0);
  });

  it('never grows past MAX_PATCH_BYTES, however fast the piece went (an instant answer included)', () => {
    expect(grownPiece(64 * MiB, 100)).toBe(MAX_PATCH_BYTES);
    expect(grownPiece(64 * MiB, 0)).toBe(MAX_PATCH_BYTES);
  });

  it('a piece that moved nothing earns the full size, not less', () => {
    expect(grownPiece(0, 5_000)).toBe(64 * MiB);
  });
});
