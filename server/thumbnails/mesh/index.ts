import { malformed } from '../errors.js';
import { chooseView } from './camera.js';
import { parseObj } from './obj.js';
import { parsePly } from './ply.js';
import { renderMesh, type RgbaImage } from './rasterize.js';
import { parseStl } from './stl.js';
import type { TriangleSoup } from './triangle-soup.js';

export type MeshType = 'STL' | 'PLY' | 'OBJ';

export function parseMesh(bytes: Buffer, type: MeshType): TriangleSoup {
  switch (type) {
    case 'STL':
      return parseStl(bytes);
    case 'PLY':
      return parsePly(bytes);
    case 'OBJ':
      return parseObj(bytes);
  }
}

/** Parses and renders a scan into an RGBA image of size × size. */
export function renderMeshThumbnail(bytes: Buffer, type: MeshType, size: number): RgbaImage {
  const soup = parseMesh(bytes, type);
  if (soup.triangleCount === 0) throw malformed(`${type}: no triangles`);
  return renderMesh(soup, chooseView(soup), size);
}

export function isMeshType(type: string): type is MeshType {
  return type === 'STL' || type === 'PLY' || type === 'OBJ';
}
