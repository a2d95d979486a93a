import { malformed, ThumbnailError, tooLarge } from '../errors.js';
import { MAX_VERTICES, SoupBuilder, type TriangleSoup } from './triangle-soup.js';
import { TextScanner } from './text-scanner.js';

type PlyFormat = 'ascii' | 'binary_little_endian' | 'binary_big_endian';
type ScalarType = 'int8' | 'uint8' | 'int16' | 'uint16' | 'int32' | 'uint32' | 'float32' | 'float64';

interface PlyProperty {
  name: string;
  type: ScalarType;
  /** Set for `property list <countType> <type> name`. */
  countType?: ScalarType;
}

interface PlyElement {
  name: string;
  count: number;
  properties: PlyProperty[];
}

interface PlyHeader {
  format: PlyFormat;
  elements: PlyElement[];
  bodyStart: number;
}

/** Reads the body's values one at a time, whatever the encoding. */
interface ValueReader {
  read(type: ScalarType): number;
  remainingBytes(): number;
}

const SCALAR_BYTES: Record<ScalarType, number> = { int8: 1, uint8: 1, int16: 2, uint16: 2, int32: 4, uint32: 4, float32: 4, float64: 8 };
const TYPE_ALIASES: Record<string, ScalarType> = {
  char: 'int8', int8: 'int8', uchar: 'uint8', uint8: 'uint8', short: 'int16', int16: 'int16', ushort: 'uint16', uint16: 'uint16',
  int: 'int32', int32: 'int32', uint: 'uint32', uint32: 'uint32', float: 'float32', float32: 'float32', double: 'float64', float64: 'float64',
};
const MAX_HEADER_BYTES = 64 * 1024;
const MAX_FACE_CORNERS = 64;

/** Stanford PLY (ascii, binary little/big endian): `vertex` x/y/z and `face` vertex_indices; other elements skipped. */
export function parsePly(bytes: Buffer): TriangleSoup {
  const header = parseHeader(bytes);
  const reader = header.format === 'ascii' ? asciiReader(bytes, header.bodyStart) : binaryReader(bytes, header.bodyStart, header.format === 'binary_little_endian');
  let vertices: Float32Array | undefined;
  let builder: SoupBuilder | undefined;
  for (const element of header.elements) {
    assertCountFits(element, reader);
    if (element.name === 'vertex') vertices = readVertices(element, reader);
    else if (element.name === 'face') builder = readFaces(element, reader, vertices);
    else skipElement(element, reader);
  }
  if (!builder || builder.triangleCount === 0) throw malformed('PLY: no faces');
  return builder.build();
}

function parseHeader(bytes: Buffer): PlyHeader {
  const end = bytes.subarray(0, MAX_HEADER_BYTES).indexOf('end_header');
  if (!bytes.subarray(0, 4).toString('latin1').startsWith('ply') || end === -1) throw malformed('PLY: no "ply" … "end_header" header');
  const lineEnd = bytes.indexOf(0x0a, end);
  const lines = bytes.subarray(0, end).toString('latin1').split(/\r?\n/).map((line) => line.trim().split(/\s+/));
  let format: PlyFormat | undefined;
  const elements: PlyElement[] = [];
  for (const words of lines) {
    const [keyword, ...rest] = words;
    if (keyword === 'format') format = parseFormat(rest[0]);
    else if (keyword === 'element') elements.push({ name: rest[0] ?? '', count: parseCount(rest[1]), properties: [] });
    else if (keyword === 'property') lastElement(elements).properties.push(parseProperty(rest));
  }
  if (!format) throw malformed('PLY: no format line');
  return { format, elements, bodyStart: lineEnd === -1 ? bytes.length : lineEnd + 1 };
}

function parseFormat(word: string | undefined): PlyFormat {
  if (word === 'ascii' || word === 'binary_little_endian' || word === 'binary_big_endian') return word;
  throw new ThumbnailError('unsupported', `PLY: unknown format ${String(word)}`);
}

function parseCount(word: string | undefined): number {
  const count = Number(word);
  if (!Number.isSafeInteger(count) || count < 0) throw malformed('PLY: an element count is not a number');
  return count;
}

function parseProperty(words: string[]): PlyProperty {
  if (words[0] === 'list') {
    return { countType: scalarType(words[1]), type: scalarType(words[2]), name: words[3] ?? '' };
  }
  return { type: scalarType(words[0]), name: words[1] ?? '' };
}

function scalarType(word: string | undefined): ScalarType {
  const type = word === undefined ? undefined : TYPE_ALIASES[word];
  if (!type) throw malformed(`PLY: unknown property type ${String(word)}`);
  return type;
}

function lastElement(elements: PlyElement[]): PlyElement {
  const element = elements[elements.length - 1];
  if (!element) throw malformed('PLY: a property before any element');
  return element;
}

/** The header's counts are claims: an element cannot have more rows than the bytes left could hold. */
function assertCountFits(element: PlyElement, reader: ValueReader): void {
  const minRowBytes = element.properties.reduce((sum, p) => sum + SCALAR_BYTES[p.countType ?? p.type], 0);
  if (element.count * Math.max(1, minRowBytes) > reader.remainingBytes()) {
    throw malformed(`PLY: the header claims ${element.count} ${element.name} rows, more than the file holds`);
  }
}

function readVertices(element: PlyElement, reader: ValueReader): Float32Array {
  const axisOf = element.properties.map((p) => (p.countType ? -1 : ['x', 'y', 'z'].indexOf(p.name)));
  if (![0, 1, 2].every((axis) => axisOf.includes(axis))) throw malformed('PLY: vertices without x, y and z');
  if (element.count > MAX_VERTICES) throw tooLarge(`PLY: ${element.count} vertices, more than ${MAX_VERTICES}`);
  const positions = new Float32Array(element.count * 3);
  const properties = element.properties;
  for (let row = 0; row < element.count; row++) {
    for (let index = 0; index < properties.length; index++) {
      const value = readProperty(properties[index] as PlyProperty, reader);
      const axis = axisOf[index] as number;
      if (axis !== -1) positions[row * 3 + axis] = value;
    }
  }
  return positions;
}

function readFaces(element: PlyElement, reader: ValueReader, vertices: Float32Array | undefined): SoupBuilder {
  if (!vertices) throw malformed('PLY: faces before vertices');
  const vertexCount = vertices.length / 3;
  const builder = new SoupBuilder(undefined, element.count);
  const corners = new Int32Array(MAX_FACE_CORNERS);
  for (let row = 0; row < element.count; row++) {
    for (const property of element.properties) {
      const isIndexList = property.countType !== undefined && (property.name === 'vertex_indices' || property.name === 'vertex_index');
      if (!isIndexList) {
        readProperty(property, reader);
        continue;
      }
      const count = readFaceCorners(property, reader, corners, vertexCount);
      for (let k = 1; k + 1 < count; k++) builder.addFrom(vertices, corners[0] as number, corners[k] as number, corners[k + 1] as number);
    }
  }
  return builder;
}

/** Reads one face's corner list into `corners` as float offsets; returns how many corners. */
function readFaceCorners(property: PlyProperty, reader: ValueReader, corners: Int32Array, vertexCount: number): number {
  const count = reader.read(property.countType as ScalarType);
  if (!Number.isInteger(count) || count < 0 || count > MAX_FACE_CORNERS) throw malformed('PLY: a face with an impossible corner count');
  for (let k = 0; k < count; k++) {
    const index = reader.read(property.type);
    if (!Number.isInteger(index) || index < 0 || index >= vertexCount) throw malformed('PLY: a face refers to a vertex that does not exist');
    corners[k] = index * 3;
  }
  return count;
}

function skipElement(element: PlyElement, reader: ValueReader): void {
  for (let row = 0; row < element.count; row++) {
    for (const property of element.properties) readProperty(property, reader);
  }
}

/** Reads a scalar, or skips a list and returns its length: only face lists carry meaning here. */
function readProperty(property: PlyProperty, reader: ValueReader): number {
  if (property.countType === undefined) return reader.read(property.type);
  const count = reader.read(property.countType);
  if (!Number.isInteger(count) || count < 0 || count > reader.remainingBytes()) throw malformed('PLY: a list with an impossible length');
  for (let k = 0; k < count; k++) reader.read(property.type);
  return count;
}

function binaryReader(bytes: Buffer, start: number, littleEndian: boolean): ValueReader {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = start;
  return {
    remainingBytes: () => bytes.length - pos,
    read(type) {
      const size = SCALAR_BYTES[type];
      if (pos + size > bytes.length) throw malformed('PLY: the file ends early (truncated?)');
      const value = readScalar(view, pos, type, littleEndian);
      pos += size;
      return value;
    },
  };
}

function readScalar(view: DataView, pos: number, type: ScalarType, littleEndian: boolean): number {
  switch (type) {
    case 'int8':
      return view.getInt8(pos);
    case 'uint8':
      return view.getUint8(pos);
    case 'int16':
      return view.getInt16(pos, littleEndian);
    case 'uint16':
      return view.getUint16(pos, littleEndian);
    case 'int32':
      return view.getInt32(pos, littleEndian);
    case 'uint32':
      return view.getUint32(pos, littleEndian);
    case 'float32':
      return view.getFloat32(pos, littleEndian);
    case 'float64':
      return view.getFloat64(pos, littleEndian);
  }
}

function asciiReader(bytes: Buffer, start: number): ValueReader {
  const scanner = new TextScanner(bytes, start);
  return {
    remainingBytes: () => bytes.length - scanner.pos,
    read() {
      scanner.skipWhitespace();
      if (scanner.done) throw malformed('PLY: the file ends early (truncated?)');
      return scanner.number();
    },
  };
}
