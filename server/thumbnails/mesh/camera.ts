import type { TriangleSoup } from './triangle-soup.js';

export type Vec3 = readonly [number, number, number];

/** An orthographic camera: screen x = right, screen y = up, depth grows toward the viewer. */
export interface View {
  center: Vec3;
  right: Vec3;
  up: Vec3;
  toViewer: Vec3;
}

/** Degrees above the occlusal plane: steep enough to see every cusp, shallow enough to read as 3-D. */
const ELEVATION = (58 * Math.PI) / 180;
/** A small turn off the midline gives the three-quarter look and separates the two sides of the arch. */
const AZIMUTH = (18 * Math.PI) / 180;
/** At most this many corners are sampled for the orientation heuristics: a statistic, not a render. */
const ORIENTATION_SAMPLES = 200_000;

interface Bounds {
  min: [number, number, number];
  max: [number, number, number];
}

/**
 * Scanners disagree on axes, so the view is derived from the mesh itself: an arch is wide, deep and
 * flat, so its thinnest box axis is the occlusal axis; the teeth face the side the open scan surface
 * faces; the incisors are on the side where the middle of the width is occupied (a horseshoe's
 * opening is empty). Any mesh still gets a sensible view, these only decide which one.
 */
export function chooseView(soup: TriangleSoup): View {
  const bounds = computeBounds(soup.positions);
  const extent = [0, 1, 2].map((axis) => bounds.max[axis]! - bounds.min[axis]!);
  const byExtent = [0, 1, 2].sort((a, b) => extent[a]! - extent[b]!);
  const [upAxis, depthAxis, widthAxis] = byExtent as [number, number, number];
  const center: Vec3 = [(bounds.min[0] + bounds.max[0]) / 2, (bounds.min[1] + bounds.max[1]) / 2, (bounds.min[2] + bounds.max[2]) / 2];
  const occlusal = scale(unit(upAxis), facingSign(soup, upAxis));
  const front = scale(unit(depthAxis), frontSign(soup, center, widthAxis, depthAxis, extent[widthAxis]!));
  const side = cross(occlusal, front);
  const horizontal = add(scale(front, Math.cos(AZIMUTH)), scale(side, Math.sin(AZIMUTH)));
  const toViewer = normalize(add(scale(horizontal, Math.cos(ELEVATION)), scale(occlusal, Math.sin(ELEVATION))));
  const up = normalize(add(occlusal, scale(toViewer, -dot(occlusal, toViewer))));
  return { center, right: cross(up, toViewer), up, toViewer };
}

export function computeBounds(positions: Float32Array): Bounds {
  const min: [number, number, number] = [Infinity, Infinity, Infinity];
  const max: [number, number, number] = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < positions.length; i += 3) {
    const x = positions[i]!;
    const y = positions[i + 1]!;
    const z = positions[i + 2]!;
    if (!Number.isFinite(x) || !Number.isFinite(y) || !Number.isFinite(z)) continue;
    if (x < min[0]) min[0] = x;
    if (x > max[0]) max[0] = x;
    if (y < min[1]) min[1] = y;
    if (y > max[1]) max[1] = y;
    if (z < min[2]) min[2] = z;
    if (z > max[2]) max[2] = z;
  }
  if (min[0] === Infinity) return { min: [0, 0, 0], max: [0, 0, 0] };
  return { min, max };
}

/** +1 when the surface's area-weighted normals point along +axis (an open scan faces its teeth side). */
function facingSign(soup: TriangleSoup, axis: number): number {
  const p = soup.positions;
  const a1 = (axis + 1) % 3;
  const a2 = (axis + 2) % 3;
  const step = Math.max(1, Math.floor(soup.triangleCount / ORIENTATION_SAMPLES)) * 9;
  let sum = 0;
  for (let o = 0; o < p.length; o += step) {
    const u1 = p[o + 3 + a1]! - p[o + a1]!;
    const u2 = p[o + 3 + a2]! - p[o + a2]!;
    const v1 = p[o + 6 + a1]! - p[o + a1]!;
    const v2 = p[o + 6 + a2]! - p[o + a2]!;
    const projectedArea = u1 * v2 - u2 * v1;
    if (Number.isFinite(projectedArea)) sum += projectedArea;
  }
  return sum < 0 ? -1 : 1;
}

/** +1 when the corners near the middle of the width lie toward +depth: that is where the incisors are. */
function frontSign(soup: TriangleSoup, center: Vec3, widthAxis: number, depthAxis: number, width: number): number {
  const p = soup.positions;
  const band = width * 0.12;
  const step = Math.max(1, Math.floor(p.length / 3 / ORIENTATION_SAMPLES)) * 3;
  let sum = 0;
  for (let o = 0; o < p.length; o += step) {
    if (Math.abs(p[o + widthAxis]! - center[widthAxis]!) > band) continue;
    const offset = p[o + depthAxis]! - center[depthAxis]!;
    if (Number.isFinite(offset)) sum += offset;
  }
  return sum < 0 ? -1 : 1;
}

function unit(axis: number): Vec3 {
  return [axis === 0 ? 1 : 0, axis === 1 ? 1 : 0, axis === 2 ? 1 : 0];
}

export function dot(a: Vec3, b: Vec3): number {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

function cross(a: Vec3, b: Vec3): Vec3 {
  return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
}

function add(a: Vec3, b: Vec3): Vec3 {
  return [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
}

function scale(a: Vec3, factor: number): Vec3 {
  return [a[0] * factor, a[1] * factor, a[2] * factor];
}

export function normalize(a: Vec3): Vec3 {
  const length = Math.hypot(a[0], a[1], a[2]);
  return length === 0 ? [0, 0, 1] : scale(a, 1 / length);
}
