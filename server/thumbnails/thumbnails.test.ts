import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  byteVertexPly,
  emptyVertexObj,
  garbageBytes,
  hugeHeaderPng,
  lyingCountStl,
  makeArchStl,
  makeAsciiStl,
  makeJpeg,
  makeObj,
  makePdf,
  makePly,
  makePng,
  nestedGroupsPdf,
  pdfBomb,
  truncatedStl,
} from '../../test/fixtures/scans.js';
import { hasThumbnail, renderThumbnail, THUMBNAIL_TYPES, ThumbnailError } from './index.js';

const ARTIFACTS = join(import.meta.dirname, '../../test/artifacts/thumbnails');
/** Hostile input must fail fast; generous for a loaded CI machine, far below the 20 s default timeout. */
const HOSTILE_BOUND_MS = 6_000;

let dir: string;

function writeFixture(name: string, bytes: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

/** Fraction of the central half of the image whose pixels pass `isContent`. */
function centreCoverage(png: PNG, isContent: (r: number, g: number, b: number, a: number) => boolean): number {
  let hits = 0;
  let total = 0;
  for (let y = Math.floor(png.height / 4); y < (png.height * 3) / 4; y++) {
    for (let x = Math.floor(png.width / 4); x < (png.width * 3) / 4; x++) {
      const o = (y * png.width + x) * 4;
      total++;
      if (isContent(png.data[o]!, png.data[o + 1]!, png.data[o + 2]!, png.data[o + 3]!)) hits++;
    }
  }
  return hits / total;
}

const opaque = (_r: number, _g: number, _b: number, a: number): boolean => a > 0;
const dark = (r: number, g: number, b: number, a: number): boolean => a > 200 && r + g + b < 3 * 128;

async function expectThumbnailError(promise: Promise<unknown>, reason?: ThumbnailError['reason']): Promise<ThumbnailError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ThumbnailError);
  if (reason) expect((error as ThumbnailError).reason).toBe(reason);
  return error as ThumbnailError;
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'thumbnails-'));
  mkdirSync(ARTIFACTS, { recursive: true });
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('which files have thumbnails', () => {
  it('lists scans, PDFs and images, in any letter case', () => {
    expect([...THUMBNAIL_TYPES].sort()).toEqual(['JPEG', 'JPG', 'OBJ', 'PDF', 'PLY', 'PNG', 'STL']);
    expect(hasThumbnail('stl')).toBe(true);
    expect(hasThumbnail('DCM')).toBe(false);
  });

  it('refuses other types without reading the file', async () => {
    await expectThumbnailError(renderThumbnail(join(dir, 'missing.docx'), 'DOCX'), 'unsupported');
  });
});

describe('every supported type renders a PNG of the requested size with the content in the middle', () => {
  const meshes: [string, string, () => Buffer][] = [
    ['binary STL', 'STL', () => makeArchStl()],
    ['ASCII STL', 'STL', () => makeAsciiStl()],
    ['ASCII PLY', 'PLY', () => makePly()],
    ['binary PLY', 'PLY', () => makePly({ format: 'binary_little_endian' })],
    ['OBJ', 'OBJ', () => makeObj()],
  ];
  it.each(meshes)('%s: the arch covers the middle of a transparent square', async (label, type, make) => {
    const png = PNG.sync.read(await renderThumbnail(writeFixture(`${label}.${type.toLowerCase()}`, make()), type));
    expect([png.width, png.height]).toEqual([256, 256]);
    expect(centreCoverage(png, opaque)).toBeGreaterThan(0.2);
    expect(png.data[3]).toBe(0); // a corner stays background
  });

  it('the arch STL, at 512 px, is kept as an artifact to look at', async () => {
    const bytes = await renderThumbnail(writeFixture('arch.stl', makeArchStl()), 'STL', { size: 512 });
    writeFileSync(join(ARTIFACTS, 'arch-stl.png'), bytes);
    expect(PNG.sync.read(bytes).width).toBe(512);
  });

  it('PDF: the first page on white with dark text in the middle (artifact kept)', async () => {
    const bytes = await renderThumbnail(writeFixture('letter.pdf', makePdf('Referral letter\nPatient: J. Example\nLower arch scan')), 'PDF');
    writeFileSync(join(ARTIFACTS, 'letter-pdf.png'), bytes);
    const png = PNG.sync.read(bytes);
    expect([png.width, png.height]).toEqual([256, 256]);
    expect(centreCoverage(png, dark)).toBeGreaterThan(0.01);
    expect(centreCoverage(png, (r, g, b, a) => a === 255 && r + g + b > 750)).toBeGreaterThan(0.5);
  });

  it.each([
    ['STL', () => makeArchStl()],
    ['PLY', () => makePly()],
    ['PDF', () => makePdf('Referral letter\nPatient: J. Example')],
    ['PNG', () => makePng(400, 300)],
  ] as const)('%s given as its content (the chunks an upload kept) renders the same PNG as from its file', async (type, make) => {
    const bytes = make();
    const third = Math.ceil(bytes.length / 3);
    const chunks = [bytes.subarray(0, third), bytes.subarray(third, 2 * third), bytes.subarray(2 * third)];
    const fromFile = await renderThumbnail(writeFixture(`content.${type.toLowerCase()}`, bytes), type);
    expect(await renderThumbnail(chunks, type)).toEqual(fromFile);
    // Again, after other content passed through the same workers.
    expect(await renderThumbnail([bytes], type)).toEqual(fromFile);
  });

  it('PDF: bytes before the header (up to 1024, as some downloads carry) still render the page', async () => {
    const junk = Buffer.alloc(1000, 'x');
    const png = PNG.sync.read(await renderThumbnail(writeFixture('prefixed.pdf', Buffer.concat([junk, makePdf('Referral letter\nPatient: J. Example\nLower arch scan')])), 'PDF'));
    expect(centreCoverage(png, dark)).toBeGreaterThan(0.01);
  });

  it.each([
    ['PNG', () => makePng(400, 300)],
    ['JPG', () => makeJpeg(300, 400)],
    ['JPEG', () => makeJpeg(64, 48)],
  ] as const)('%s: scaled to fit, the picture in the middle', async (type, make) => {
    const png = PNG.sync.read(await renderThumbnail(writeFixture(`picture.${type.toLowerCase()}`, make()), type, { size: 128 }));
    expect([png.width, png.height]).toEqual([128, 128]);
    expect(centreCoverage(png, dark)).toBeGreaterThan(0.3);
  });
});

describe('hostile files end in ThumbnailError, quickly', () => {
  const hostile: [string, string, () => Buffer, ThumbnailError['reason'] | undefined][] = [
    ['a truncated binary STL', 'STL', truncatedStl, 'malformed'],
    ['an STL claiming a million triangles it does not have', 'STL', lyingCountStl, 'malformed'],
    ['garbage called STL', 'STL', () => garbageBytes(10_000), 'malformed'],
    ['garbage called PLY', 'PLY', () => garbageBytes(10_000), 'malformed'],
    ['a PLY header claiming more vertices than bytes', 'PLY', () => Buffer.from('ply\nformat binary_little_endian 1.0\nelement vertex 2000000000\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n'), 'malformed'],
    ['garbage called OBJ', 'OBJ', () => garbageBytes(10_000), 'malformed'],
    ['an OBJ face pointing past its vertices', 'OBJ', () => Buffer.from('v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 99\n'), 'malformed'],
    ['garbage called PDF', 'PDF', () => garbageBytes(10_000), 'malformed'],
    ['a PDF bomb (absurd MediaBox, arrays nested 100 000 deep)', 'PDF', () => pdfBomb(), undefined],
    ['a PDF page a billion points square', 'PDF', () => pdfBomb({ nestingDepth: 0 }), 'too-large'],
    ['a PDF with arrays nested 100 000 deep', 'PDF', () => pdfBomb({ pageSide: 595 }), 'malformed'],
    ['a PNG header claiming 50 000 × 50 000 pixels', 'PNG', hugeHeaderPng, 'too-large'],
    ['garbage called JPEG', 'JPEG', () => garbageBytes(10_000), 'malformed'],
    ['an empty file', 'STL', () => Buffer.alloc(0), 'malformed'],
  ];
  it.each(hostile)('%s', async (label, type, make, reason) => {
    const path = writeFixture(`hostile-${label.replace(/\W+/g, '-')}.${type.toLowerCase()}`, make());
    const { ms } = await timed(() => expectThumbnailError(renderThumbnail(path, type), reason));
    expect(ms).toBeLessThan(HOSTILE_BOUND_MS);
  });

  it.each(hostile.filter(([, , , reason]) => reason === 'malformed').slice(0, 6))('%s, given as its content', async (_label, type, make, reason) => {
    const bytes = make();
    const { ms } = await timed(() => expectThumbnailError(renderThumbnail([bytes.subarray(0, 7), bytes.subarray(7)], type), reason));
    expect(ms).toBeLessThan(HOSTILE_BOUND_MS);
  });

  it('content above maxInputBytes is refused before any worker starts', async () => {
    const content = [makeArchStl()];
    const { ms } = await timed(() => expectThumbnailError(renderThumbnail(content, 'STL', { maxInputBytes: 1000 }), 'too-large'));
    expect(ms).toBeLessThan(200);
  });

  it('a file called PDF without a PDF header is refused as no PDF, not read through by the PDF reader', async () => {
    const path = writeFixture('not-a.pdf', garbageBytes(270_000));
    const error = await expectThumbnailError(renderThumbnail(path, 'PDF'), 'malformed');
    expect(error.message).toMatch(/no "%PDF-" header/);
  });

  it('a missing file', async () => {
    await expectThumbnailError(renderThumbnail(join(dir, 'nope.stl'), 'STL'), 'malformed');
  });

  it('a file above maxInputBytes is refused before any worker starts', async () => {
    const path = writeFixture('big.stl', makeArchStl());
    const { ms } = await timed(() => expectThumbnailError(renderThumbnail(path, 'STL', { maxInputBytes: 1000 }), 'too-large'));
    expect(ms).toBeLessThan(200);
  });

  it('a render that outlives timeoutMs is terminated and reported as a timeout', async () => {
    const path = writeFixture('slow.stl', makeArchStl({ triangles: 500_000 }));
    const { ms } = await timed(() => expectThumbnailError(renderThumbnail(path, 'STL', { timeoutMs: 50 }), 'timeout'));
    expect(ms).toBeLessThan(1_000);
  });
});

describe('meshes listing more vertices than any scan fail as too large, with the memory of the render bounded', () => {
  /** Peak growth of this process's resident memory (the workers' included) while `work` runs. */
  async function peakGrowth<T>(work: () => Promise<T>): Promise<number> {
    const base = process.memoryUsage().rss;
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    try {
      await work();
    } finally {
      clearInterval(sampler);
    }
    return Math.max(peak, process.memoryUsage().rss) - base;
  }

  beforeAll(async () => {
    // A warm worker, so its start-up is not counted against the file.
    await renderThumbnail(writeFixture('warm.stl', makeArchStl({ triangles: 2_000 })), 'STL');
  });

  // 27 MB: its header's 9 M vertices fit the file, and would take 108 MB of floats outside the heap.
  it('a binary PLY of 9 M one-byte vertices is refused before its vertices are allocated', async () => {
    const path = writeFixture('byte-vertices.ply', byteVertexPly(9_000_000));
    let error: ThumbnailError | undefined;
    const growth = await peakGrowth(async () => (error = await expectThumbnailError(renderThumbnail(path, 'PLY'), 'too-large')));
    expect(error?.message).toMatch(/9000000 vertices, more than 8000000/);
    expect(growth).toBeLessThan(90 * 1024 * 1024);
  });

  // 18 MB of "v" lines: unchecked, 9 M vertices grow a float array to 128 MB (and 192 MB while it doubles).
  it('an OBJ of 9 M empty vertex lines is refused once it passes the vertex limit', async () => {
    const path = writeFixture('empty-vertices.obj', emptyVertexObj(9_000_000));
    const error = await expectThumbnailError(renderThumbnail(path, 'OBJ'), 'too-large');
    expect(error.message).toMatch(/more than 8000000 vertices/);
  });
});

describe('a PDF nesting transparency groups hundreds deep', () => {
  // Each level holds a page-sized canvas outside the heap limit while the next is drawn: unchecked,
  // 1,000 levels took about 470 MB and rendered, slowly.
  it('fails as too large before its canvases outgrow the render', async () => {
    const path = writeFixture('nested-groups.pdf', nestedGroupsPdf(600));
    const error = await expectThumbnailError(renderThumbnail(path, 'PDF'), 'too-large');
    expect(error.message).toMatch(/intermediate canvases at once/);
  });
});

describe('speed', () => {
  it('a 500 000-triangle STL renders within a few seconds', async () => {
    const stl = makeArchStl({ triangles: 500_000 });
    expect(stl.readUInt32LE(80)).toBeGreaterThanOrEqual(500_000);
    const path = writeFixture('dense.stl', stl);
    const { value, ms } = await timed(() => renderThumbnail(path, 'STL'));
    expect(centreCoverage(PNG.sync.read(value), opaque)).toBeGreaterThan(0.2);
    console.log(`500k-triangle STL thumbnail: ${Math.round(ms)} ms (including worker start-up)`);
    expect(ms).toBeLessThan(5_000);
  });
});
