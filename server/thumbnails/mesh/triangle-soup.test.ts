import { describe, expect, it } from 'vitest';
import { SoupBuilder } from './triangle-soup.js';

/** Triangle t has all nine coordinates equal to t, so the survivors say which ones were kept. */
function addTriangles(builder: SoupBuilder, count: number): void {
  const corner = new Float64Array(3);
  for (let t = 0; t < count; t++) {
    corner.fill(t);
    builder.addFrom(corner, 0, 0, 0);
  }
}

describe('SoupBuilder', () => {
  it('keeps every triangle below the cap', () => {
    const builder = new SoupBuilder(100, 4);
    addTriangles(builder, 90);
    expect(builder.build().triangleCount).toBe(90);
  });

  it('above the cap, decimates uniformly instead of growing without bound', () => {
    const builder = new SoupBuilder(100, 4);
    addTriangles(builder, 1000);
    const soup = builder.build();
    expect(soup.triangleCount).toBeLessThanOrEqual(100);
    expect(soup.triangleCount).toBeGreaterThanOrEqual(50);
    const kept = Array.from({ length: soup.triangleCount }, (_, t) => soup.positions[t * 9]!);
    const gaps = new Set(kept.slice(1).map((value, i) => value - kept[i]!));
    expect([...gaps]).toEqual([16]);
    expect(kept[kept.length - 1]).toBeGreaterThan(900);
  });
});
