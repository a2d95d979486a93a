import { describe, expect, it } from 'vitest';
import { growingPercentFor, HEADROOM_BYTES } from './heap-headroom.js';

const MiB = 1024 * 1024;

describe('the heap growing factor', () => {
  it('leaves HEADROOM_BYTES above a small live heap, at most V8 factor 4', () => {
    expect(growingPercentFor(16 * MiB)).toBe(300);
    expect(growingPercentFor(20 * MiB)).toBe(240);
    expect((20 * MiB * growingPercentFor(20 * MiB)) / 100).toBeGreaterThanOrEqual(HEADROOM_BYTES);
    expect(growingPercentFor(32 * MiB)).toBe(150);
    expect(growingPercentFor(1)).toBe(300);
  });

  it('lets V8 pick the factor from 48 MiB of live heap on', () => {
    expect(growingPercentFor(48 * MiB)).toBe(0);
    expect(growingPercentFor(500 * MiB)).toBe(0);
  });
});
