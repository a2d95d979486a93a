import { malformed } from '../errors.js';
import { MAX_TRIANGLES, SoupBuilder, type TriangleSoup } from './triangle-soup.js';
import { TextScanner } from './text-scanner.js';

const HEADER_BYTES = 80;
const COUNT_BYTES = 4;
const TRIANGLE_RECORD_BYTES = 50;
const NORMAL_BYTES = 12;

/**
 * Binary STL first, by its only checkable invariant (size = 84 + 50 × count): many binary files start
 * with "solid" too, so the ASCII keyword alone cannot decide.
 */
export function parseStl(bytes: Buffer): TriangleSoup {
  if (bytes.length >= HEADER_BYTES + COUNT_BYTES) {
    const declared = bytes.readUInt32LE(HEADER_BYTES);
    if (HEADER_BYTES + COUNT_BYTES + declared * TRIANGLE_RECORD_BYTES === bytes.length) return parseBinaryStl(bytes, declared);
  }
  if (startsWithSolid(bytes)) return parseAsciiStl(bytes);
  throw malformed('STL: neither ASCII ("solid") nor a binary file whose triangle count matches its size');
}

function startsWithSolid(bytes: Buffer): boolean {
  return bytes.subarray(0, 512).toString('latin1').trimStart().startsWith('solid');
}

function parseBinaryStl(bytes: Buffer, declared: number): TriangleSoup {
  if (declared === 0) throw malformed('STL: no triangles');
  const stride = Math.ceil(declared / MAX_TRIANGLES);
  const kept = Math.ceil(declared / stride);
  const positions = new Float32Array(kept * 9);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let t = 0; t < kept; t++) {
    let offset = HEADER_BYTES + COUNT_BYTES + t * stride * TRIANGLE_RECORD_BYTES + NORMAL_BYTES;
    const o = t * 9;
    for (let k = 0; k < 9; k++, offset += 4) positions[o + k] = view.getFloat32(offset, true);
  }
  return { positions, triangleCount: kept };
}

function parseAsciiStl(bytes: Buffer): TriangleSoup {
  const scanner = new TextScanner(bytes);
  const builder = new SoupBuilder(MAX_TRIANGLES, Math.ceil(bytes.length / 250));
  const corners = new Float64Array(9);
  let corner = 0;
  while (!scanner.done) {
    if (scanner.keyword('vertex')) {
      for (let axis = 0; axis < 3; axis++) corners[corner * 3 + axis] = scanner.number();
      if (++corner === 3) {
        builder.addFrom(corners, 0, 3, 6);
        corner = 0;
      }
    } else if (scanner.keyword('endloop') && corner !== 0) {
      throw malformed('STL: a facet without exactly three vertices');
    }
    scanner.nextLine();
  }
  if (corner !== 0) throw malformed('STL: the file ends inside a facet (truncated?)');
  if (builder.triangleCount === 0) throw malformed('STL: no triangles');
  return builder.build();
}
