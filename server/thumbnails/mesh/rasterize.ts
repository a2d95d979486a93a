import { normalize, type Vec3, type View } from './camera.js';
import type { TriangleSoup } from './triangle-soup.js';

/** Straight-alpha RGBA pixels, row by row. */
export interface RgbaImage {
  width: number;
  height: number;
  data: Uint8Array;
}

/** Each output pixel averages SUPERSAMPLE² samples: cheap antialiasing for a z-buffer. */
const SUPERSAMPLE = 2;
/** Empty border, as a fraction of the image, so the model never touches the thumbnail's edge. */
const MARGIN = 0.06;

/** Ivory, like the stone models and scan viewers dentists are used to. */
const MATERIAL: Vec3 = [0.93, 0.9, 0.83];
const KEY_LIGHT = normalize([-0.25, 0.3, 0.92]);
const FILL_LIGHT = normalize([0.55, -0.35, 0.75]);
const HALF_VECTOR = normalize([KEY_LIGHT[0], KEY_LIGHT[1], KEY_LIGHT[2] + 1]);
const AMBIENT = 0.24;
const KEY = 0.62;
const FILL = 0.24;
const SPECULAR = 0.18;
const SHININESS = 28;
/** Occlusion is sampled this far away (fraction of the image): about the width of a tooth's fissures and gaps. */
const AO_RADIUS = 0.025;
const AO_STRENGTH = 0.55;

/** A supersampled frame: depth per sample (−∞ = empty, larger = nearer) and its colour. */
interface Frame {
  size: number;
  depth: Float32Array;
  rgb: Uint8Array;
}

/** Renders the soup (consuming it: its positions are overwritten) into a size × size image. */
export function renderMesh(soup: TriangleSoup, view: View, size: number): RgbaImage {
  const frameSize = size * SUPERSAMPLE;
  const corners = projectToCamera(soup.positions, view);
  fitToFrame(corners, frameSize);
  const frame = rasterise(corners, soup.triangleCount, frameSize);
  applyAmbientOcclusion(frame);
  return downsample(frame, SUPERSAMPLE);
}

/**
 * Camera-space corners (x right, y up, z toward the viewer). Rewrites the soup in place: at 5 M
 * triangles a second copy would cost another 180 MB, and the model-space positions are not needed again.
 */
function projectToCamera(p: Float32Array, view: View): Float32Array {
  const out = p;
  const [cx, cy, cz] = view.center;
  const [rx, ry, rz] = view.right;
  const [ux, uy, uz] = view.up;
  const [tx, ty, tz] = view.toViewer;
  for (let i = 0; i < p.length; i += 3) {
    const x = p[i]! - cx;
    const y = p[i + 1]! - cy;
    const z = p[i + 2]! - cz;
    out[i] = x * rx + y * ry + z * rz;
    out[i + 1] = x * ux + y * uy + z * uz;
    out[i + 2] = x * tx + y * ty + z * tz;
  }
  return out;
}

/** Scales and centres the projected model into the frame; the y axis flips to rows counting down. */
function fitToFrame(corners: Float32Array, frameSize: number): void {
  let minX = Infinity;
  let maxX = -Infinity;
  let minY = Infinity;
  let maxY = -Infinity;
  for (let i = 0; i < corners.length; i += 3) {
    const x = corners[i]!;
    const y = corners[i + 1]!;
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
    if (x < minX) minX = x;
    if (x > maxX) maxX = x;
    if (y < minY) minY = y;
    if (y > maxY) maxY = y;
  }
  const span = Math.max(maxX - minX, maxY - minY);
  const factor = span > 0 ? (frameSize * (1 - 2 * MARGIN)) / span : 1;
  const midX = (minX + maxX) / 2;
  const midY = (minY + maxY) / 2;
  for (let i = 0; i < corners.length; i += 3) {
    corners[i] = frameSize / 2 + (corners[i]! - midX) * factor;
    corners[i + 1] = frameSize / 2 - (corners[i + 1]! - midY) * factor;
    corners[i + 2] = corners[i + 2]! * factor;
  }
}

function rasterise(corners: Float32Array, triangleCount: number, size: number): Frame {
  const frame: Frame = { size, depth: new Float32Array(size * size).fill(-Infinity), rgb: new Uint8Array(size * size * 3) };
  const colour = new Uint8Array(3);
  for (let t = 0; t < triangleCount; t++) {
    const o = t * 9;
    if (!shadeTriangle(corners, o, colour)) continue;
    fillTriangle(frame, corners, o, colour);
  }
  return frame;
}

/**
 * Flat Lambert shading from two lights plus ambient and a little Blinn specular. Scans are open
 * surfaces seen from both sides, so the normal is turned toward the viewer. Returns false for
 * triangles with no area or non-finite corners.
 */
function shadeTriangle(c: Float32Array, o: number, colour: Uint8Array): boolean {
  const ux = c[o + 3]! - c[o]!;
  const uy = c[o + 4]! - c[o + 1]!;
  const uz = c[o + 5]! - c[o + 2]!;
  const vx = c[o + 6]! - c[o]!;
  const vy = c[o + 7]! - c[o + 1]!;
  const vz = c[o + 8]! - c[o + 2]!;
  // Rows count down, so the screen-space cross product has its y negated relative to camera space.
  let nx = uy * vz - uz * vy;
  let ny = -(uz * vx - ux * vz);
  let nz = ux * vy - uy * vx;
  const length = Math.hypot(nx, ny, nz);
  if (!(length > 0) || !Number.isFinite(length)) return false;
  const facing = nz < 0 ? -1 / length : 1 / length;
  nx *= facing;
  ny *= facing;
  nz *= facing;
  const diffuse = KEY * Math.max(0, nx * KEY_LIGHT[0] + ny * KEY_LIGHT[1] + nz * KEY_LIGHT[2]) + FILL * Math.max(0, nx * FILL_LIGHT[0] + ny * FILL_LIGHT[1] + nz * FILL_LIGHT[2]);
  const specular = SPECULAR * Math.max(0, nx * HALF_VECTOR[0] + ny * HALF_VECTOR[1] + nz * HALF_VECTOR[2]) ** SHININESS;
  for (let k = 0; k < 3; k++) colour[k] = Math.min(255, 255 * (MATERIAL[k]! * (AMBIENT + diffuse) + specular));
  return true;
}

/** Edge-function scan of the triangle's bounding box, sampling pixel centres, with a z-buffer test. */
function fillTriangle(frame: Frame, c: Float32Array, o: number, colour: Uint8Array): void {
  const { size, depth, rgb } = frame;
  const ax = c[o]!;
  const ay = c[o + 1]!;
  const az = c[o + 2]!;
  let bx = c[o + 3]!;
  let by = c[o + 4]!;
  let bz = c[o + 5]!;
  let cx = c[o + 6]!;
  let cy = c[o + 7]!;
  let cz = c[o + 8]!;
  let area = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
  if (area < 0) {
    // Make the winding counter-clockwise so "inside" is where all three edge functions are >= 0.
    const [sx, sy, sz] = [bx, by, bz];
    bx = cx;
    by = cy;
    bz = cz;
    cx = sx;
    cy = sy;
    cz = sz;
    area = -area;
  }
  if (!(area > 0) || !Number.isFinite(area)) return;
  const minX = Math.max(0, Math.floor(Math.min(ax, bx, cx)));
  const maxX = Math.min(size - 1, Math.ceil(Math.max(ax, bx, cx)));
  const minY = Math.max(0, Math.floor(Math.min(ay, by, cy)));
  const maxY = Math.min(size - 1, Math.ceil(Math.max(ay, by, cy)));
  for (let py = minY; py <= maxY; py++) {
    const y = py + 0.5;
    for (let px = minX; px <= maxX; px++) {
      const x = px + 0.5;
      const w0 = (cx - bx) * (y - by) - (cy - by) * (x - bx);
      const w1 = (ax - cx) * (y - cy) - (ay - cy) * (x - cx);
      const w2 = (bx - ax) * (y - ay) - (by - ay) * (x - ax);
      if (w0 < 0 || w1 < 0 || w2 < 0) continue;
      const z = (w0 * az + w1 * bz + w2 * cz) / area;
      const i = py * size + px;
      if (z <= depth[i]!) continue;
      depth[i] = z;
      rgb[i * 3] = colour[0]!;
      rgb[i * 3 + 1] = colour[1]!;
      rgb[i * 3 + 2] = colour[2]!;
    }
  }
}

/**
 * Screen-space ambient occlusion: a sample is darkened when it lies below the mid-point of pairs of
 * opposite neighbours, i.e. in a valley. Comparing pairs (not single neighbours) leaves tilted flat
 * surfaces alone. Flat Lambert shading alone leaves the gaps between teeth and the fissures of molars
 * as bright as the cusps; this is what makes a crown read as a crown at thumbnail size.
 */
function applyAmbientOcclusion(frame: Frame): void {
  const { size, depth, rgb } = frame;
  const offsets = occlusionOffsets(size);
  const pairs = offsets.length / 2;
  const falloff = size * AO_RADIUS;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const i = y * size + x;
      const z = depth[i]!;
      if (z === -Infinity) continue;
      let occlusion = 0;
      for (let k = 0; k < offsets.length; k += 2) {
        const rise = (depthAt(frame, x + offsets[k]!, y + offsets[k + 1]!, z) + depthAt(frame, x - offsets[k]!, y - offsets[k + 1]!, z)) / 2 - z;
        if (rise > 0) occlusion += Math.min(1, rise / falloff);
      }
      const shade = 1 - AO_STRENGTH * (occlusion / pairs);
      rgb[i * 3] = rgb[i * 3]! * shade;
      rgb[i * 3 + 1] = rgb[i * 3 + 1]! * shade;
      rgb[i * 3 + 2] = rgb[i * 3 + 2]! * shade;
    }
  }
}

/** Depth at (x, y); outside the frame or over the background it counts as level with `fallback`. */
function depthAt(frame: Frame, x: number, y: number, fallback: number): number {
  if (x < 0 || y < 0 || x >= frame.size || y >= frame.size) return fallback;
  const z = frame.depth[y * frame.size + x]!;
  return z === -Infinity ? fallback : z;
}

/** Half of the neighbour offsets (dx, dy pairs; the other half is their negation) on two rings. */
function occlusionOffsets(size: number): Int32Array {
  const offsets: number[] = [];
  const directions = 4;
  for (const [ring, twist] of [[0.45, 0], [1, Math.PI / (2 * directions)]] as const) {
    const radius = size * AO_RADIUS * ring;
    for (let d = 0; d < directions; d++) {
      const angle = (Math.PI * d) / directions + twist;
      offsets.push(Math.round(Math.cos(angle) * radius), Math.round(Math.sin(angle) * radius));
    }
  }
  return Int32Array.from(offsets);
}

/** Box-filters factor×factor samples into one pixel; empty samples become transparency. */
function downsample(frame: Frame, factor: number): RgbaImage {
  const size = frame.size / factor;
  const data = new Uint8Array(size * size * 4);
  const samples = factor * factor;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      let covered = 0;
      let r = 0;
      let g = 0;
      let b = 0;
      for (let sy = 0; sy < factor; sy++) {
        for (let sx = 0; sx < factor; sx++) {
          const i = (y * factor + sy) * frame.size + x * factor + sx;
          if (frame.depth[i] === -Infinity) continue;
          covered++;
          r += frame.rgb[i * 3]!;
          g += frame.rgb[i * 3 + 1]!;
          b += frame.rgb[i * 3 + 2]!;
        }
      }
      if (covered === 0) continue;
      const o = (y * size + x) * 4;
      data[o] = Math.round(r / covered);
      data[o + 1] = Math.round(g / covered);
      data[o + 2] = Math.round(b / covered);
      data[o + 3] = Math.round((255 * covered) / samples);
    }
  }
  return { width: size, height: size, data };
}
