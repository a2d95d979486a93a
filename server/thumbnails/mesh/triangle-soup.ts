/**
 * Triangles as a flat list of corners (9 floats per triangle). Thumbnails need no topology, and a
 * flat list is what the rasteriser walks fastest.
 */
export interface TriangleSoup {
  positions: Float32Array;
  triangleCount: number;
}

/** Above this many triangles a thumbnail gains nothing but time and memory; keep every k-th instead. */
export const MAX_TRIANGLES = 5_000_000;

/**
 * Vertices a mesh may list (96 MB as floats). Unlike triangles they cannot be thinned out (faces
 * name them by index), so a file with more is refused as too large: every scan within the input
 * limit has fewer (a binary PLY of 8 M vertices and their faces is over 256 MiB), and a hostile
 * header or a file of empty `v` lines cannot make a parser allocate gigabytes outside the heap.
 */
export const MAX_VERTICES = 8_000_000;

const FLOATS_PER_TRIANGLE = 9;

/**
 * Collects triangles whose count is not known in advance (text formats). When the cap is reached it
 * drops every other stored triangle and from then on keeps only every 2nd, 4th, ... incoming one,
 * so a huge file degrades into a uniform decimation instead of a memory blow-up.
 */
export class SoupBuilder {
  private positions: Float32Array;
  private stored = 0;
  private seen = 0;
  private keepEvery = 1;

  constructor(
    private readonly maxTriangles = MAX_TRIANGLES,
    expectedTriangles = 1024,
  ) {
    const initial = Math.max(16, Math.min(expectedTriangles, maxTriangles));
    this.positions = new Float32Array(initial * FLOATS_PER_TRIANGLE);
  }

  get triangleCount(): number {
    return this.stored;
  }

  /** Adds triangle (a, b, c), each corner given as an offset into `source` (x, y, z at offset..offset+2). */
  addFrom(source: ArrayLike<number>, a: number, b: number, c: number): void {
    if (this.seen++ % this.keepEvery !== 0) return;
    if (this.stored === this.maxTriangles) this.halve();
    if ((this.stored + 1) * FLOATS_PER_TRIANGLE > this.positions.length) this.grow();
    const o = this.stored * FLOATS_PER_TRIANGLE;
    copyCorner(source, a, this.positions, o);
    copyCorner(source, b, this.positions, o + 3);
    copyCorner(source, c, this.positions, o + 6);
    this.stored++;
  }

  build(): TriangleSoup {
    return { positions: this.positions.subarray(0, this.stored * FLOATS_PER_TRIANGLE), triangleCount: this.stored };
  }

  private grow(): void {
    const capacity = Math.min(this.maxTriangles, Math.ceil((this.positions.length / FLOATS_PER_TRIANGLE) * 2));
    const next = new Float32Array(capacity * FLOATS_PER_TRIANGLE);
    next.set(this.positions.subarray(0, this.stored * FLOATS_PER_TRIANGLE));
    this.positions = next;
  }

  private halve(): void {
    const p = this.positions;
    let kept = 0;
    for (let t = 0; t < this.stored; t += 2, kept++) {
      p.copyWithin(kept * FLOATS_PER_TRIANGLE, t * FLOATS_PER_TRIANGLE, (t + 1) * FLOATS_PER_TRIANGLE);
    }
    this.stored = kept;
    this.keepEvery *= 2;
  }
}

function copyCorner(source: ArrayLike<number>, from: number, target: Float32Array, to: number): void {
  target[to] = source[from] as number;
  target[to + 1] = source[from + 1] as number;
  target[to + 2] = source[from + 2] as number;
}
