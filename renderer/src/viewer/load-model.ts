import { BufferGeometry, Group, Mesh, type Object3D } from 'three';
import { OBJLoader } from 'three/examples/jsm/loaders/OBJLoader.js';
import { PLYLoader } from 'three/examples/jsm/loaders/PLYLoader.js';
import { STLLoader } from 'three/examples/jsm/loaders/STLLoader.js';
import type { ModelType } from '../documents/file-types.js';

export interface LoadedModel {
  geometries: BufferGeometry[];
  triangles: number;
}

/** Parses a scan into plain geometries; the viewer gives them one material so every format looks alike. */
export function parseModel(bytes: ArrayBuffer, fileType: ModelType): LoadedModel {
  const geometries: BufferGeometry[] = [];
  switch (fileType) {
    case 'STL':
      geometries.push(new STLLoader().parse(bytes));
      break;
    case 'PLY':
      geometries.push(new PLYLoader().parse(bytes));
      break;
    case 'OBJ':
      collectGeometries(new OBJLoader().parse(new TextDecoder().decode(bytes)), geometries);
      break;
  }
  let triangles = 0;
  for (const geometry of geometries) {
    // STL facet normals are often zero or wrong in scanner exports; recompute them from the
    // triangles (flat shading, as the file intends). PLY/OBJ keep theirs when present.
    if (fileType === 'STL' || !geometry.getAttribute('normal')) geometry.computeVertexNormals();
    const indexCount = geometry.getIndex()?.count;
    triangles += Math.floor((indexCount ?? geometry.getAttribute('position').count) / 3);
  }
  return { geometries, triangles };
}

function collectGeometries(object: Object3D, into: BufferGeometry[]): void {
  object.traverse((child) => {
    if (child instanceof Mesh && child.geometry instanceof BufferGeometry) into.push(child.geometry);
  });
  if (object instanceof Group && into.length === 0) throw new Error('The OBJ file contains no surfaces.');
}
