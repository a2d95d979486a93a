import { malformed, tooLarge } from '../errors.js';
import { MAX_TRIANGLES, MAX_VERTICES, SoupBuilder, type TriangleSoup } from './triangle-soup.js';
import { TextScanner } from './text-scanner.js';

/** Faces with more corners than this are not something a scanner writes: treat the file as garbage. */
const MAX_FACE_CORNERS = 64;

/** Wavefront OBJ: `v x y z` and `f a b c …` (any of the `v/vt/vn` forms, negative = relative); the rest is ignored. */
export function parseObj(bytes: Buffer): TriangleSoup {
  if (bytes.includes(0)) throw malformed('OBJ: binary data in a text format');
  const scanner = new TextScanner(bytes);
  const vertices = new GrowableFloats(Math.max(1024, Math.ceil(bytes.length / 30)), MAX_VERTICES * 3);
  const builder = new SoupBuilder(MAX_TRIANGLES, Math.ceil(bytes.length / 60));
  const face = new Int32Array(MAX_FACE_CORNERS);
  while (!scanner.done) {
    if (scanner.keyword('v')) {
      vertices.push(scanner.number(), scanner.number(), scanner.number());
    } else if (scanner.keyword('f')) {
      const corners = readFace(scanner, face, vertices.length / 3);
      for (let k = 1; k + 1 < corners; k++) builder.addFrom(vertices.values, face[0] as number, face[k] as number, face[k + 1] as number);
    }
    scanner.nextLine();
  }
  if (builder.triangleCount === 0) throw malformed('OBJ: no faces');
  return builder.build();
}

/** Reads one face into `face` as float offsets of its corners; returns the corner count. */
function readFace(scanner: TextScanner, face: Int32Array, vertexCount: number): number {
  let corners = 0;
  while (!scanner.atLineEnd()) {
    if (corners === MAX_FACE_CORNERS) throw malformed(`OBJ: a face with more than ${MAX_FACE_CORNERS} corners`);
    const index = scanner.faceCornerIndex();
    const zeroBased = index < 0 ? vertexCount + index : index - 1;
    if (!Number.isInteger(zeroBased) || zeroBased < 0 || zeroBased >= vertexCount) {
      throw malformed('OBJ: a face refers to a vertex that does not exist');
    }
    face[corners++] = zeroBased * 3;
  }
  if (corners < 3) throw malformed('OBJ: a face with fewer than three corners');
  return corners;
}

/** Vertex coordinates of unknown count; doubles as needed, up to `max` (more: the file is refused as too large). */
class GrowableFloats {
  values: Float32Array;
  length = 0;

  constructor(
    initialCapacity: number,
    private readonly max: number,
  ) {
    this.values = new Float32Array(Math.min(initialCapacity, max));
  }

  push(x: number, y: number, z: number): void {
    if (this.length + 3 > this.values.length) {
      if (this.values.length >= this.max) throw tooLarge(`OBJ: more than ${this.max / 3} vertices`);
      const next = new Float32Array(Math.min(this.values.length * 2, this.max));
      next.set(this.values);
      this.values = next;
    }
    this.values[this.length++] = x;
    this.values[this.length++] = y;
    this.values[this.length++] = z;
  }
}
