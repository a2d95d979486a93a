import { createCanvas } from '@napi-rs/canvas';
import type * as PdfjsModule from 'pdfjs-dist/legacy/build/pdf.mjs';
import { malformed, tooLarge } from './errors.js';

/** PDF's own implementation limit for a page side (200 inches); anything bigger is a trap, not a document. */
const MAX_PAGE_SIDE_POINTS = 14_400;
/** Intermediate canvases (soft masks, patterns, groups) above this many pixels are refused. */
const MAX_SCRATCH_CANVAS_PIXELS = 4096 * 4096;
/**
 * All intermediate canvases alive at once, in pixels (96 MB): one of the largest and plenty of
 * page-sized ones. Each nested transparency group or soft mask holds one more while it is drawn,
 * outside the worker's heap limit, so a PDF nesting hundreds of them is refused.
 */
const MAX_LIVE_SCRATCH_PIXELS = 24_000_000;
/** Images inside the PDF above this many pixels are not decoded (pdfjs draws nothing for them). */
const MAX_EMBEDDED_IMAGE_PIXELS = 40_000_000;

/** The structural slice of a @napi-rs/canvas that pdfjs touches through the canvas factory. */
interface ScratchCanvas {
  width: number;
  height: number;
  getContext(kind: '2d'): unknown;
}

interface CanvasAndContext {
  canvas: ScratchCanvas | null;
  context: unknown;
}

/**
 * pdfjs asks this factory for every canvas it draws into. Backed by @napi-rs/canvas (no DOM in Node),
 * and bounded: a hostile PDF cannot make pdfjs allocate a gigapixel scratch canvas, nor hundreds of
 * them at once. One factory per document (pdfjs makes it from the class).
 */
class BoundedCanvasFactory {
  private livePixels = 0;

  create(width: number, height: number): CanvasAndContext {
    assertCanvasSize(width, height);
    this.claim(width * height);
    const canvas = createCanvas(width, height);
    return { canvas, context: canvas.getContext('2d') };
  }

  reset(target: CanvasAndContext, width: number, height: number): void {
    assertCanvasSize(width, height);
    if (!target.canvas) throw new Error('canvas already destroyed');
    this.claim(width * height - target.canvas.width * target.canvas.height);
    target.canvas.width = width;
    target.canvas.height = height;
  }

  destroy(target: CanvasAndContext): void {
    if (target.canvas) {
      this.livePixels -= target.canvas.width * target.canvas.height;
      target.canvas.width = 0;
      target.canvas.height = 0;
    }
    target.canvas = null;
    target.context = null;
  }

  private claim(pixels: number): void {
    if (this.livePixels + pixels > MAX_LIVE_SCRATCH_PIXELS) {
      throw tooLarge(`PDF: more than ${MAX_LIVE_SCRATCH_PIXELS} pixels of intermediate canvases at once (transparency groups or soft masks nested too deep)`);
    }
    this.livePixels += pixels;
  }
}

function assertCanvasSize(width: number, height: number): void {
  if (!(width > 0 && height > 0) || width * height > MAX_SCRATCH_CANVAS_PIXELS) {
    throw tooLarge(`PDF: refused a ${width} × ${height} scratch canvas`);
  }
}

/**
 * A PDF starts with "%PDF-"; readers tolerate junk before it up to this many bytes (Acrobat's limit),
 * and so do we.
 */
const HEADER_SEARCH_BYTES = 1024;
const HEADER = '%PDF-';

/**
 * Without a header within its first 1024 bytes the file is no PDF. pdfjs would still try: finding
 * no cross-reference table it rebuilds one by tokenizing the whole file (about 40 ms of CPU for
 * 270 KB of random bytes, plus compiling pdfjs itself in a fresh worker), only to fail.
 */
function assertPdfHeader(bytes: Buffer): void {
  if (bytes.subarray(0, HEADER_SEARCH_BYTES + HEADER.length - 1).indexOf(HEADER, 0, 'latin1') < 0) {
    throw malformed(`PDF: no "%PDF-" header in the first ${HEADER_SEARCH_BYTES} bytes`);
  }
}

/** The first page as a white sheet, scaled to fit size × size (transparent around it). Runs inside the thumbnail worker, which bounds time and heap. */
export async function renderPdfThumbnail(bytes: Buffer, size: number): Promise<Buffer> {
  assertPdfHeader(bytes);
  const pdfjs = await loadPdfjs();
  const loadingTask = pdfjs.getDocument({
    data: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    useWorkerFetch: false,
    isOffscreenCanvasSupported: false,
    maxImageSize: MAX_EMBEDDED_IMAGE_PIXELS,
    stopAtErrors: false,
    verbosity: 0,
    CanvasFactory: BoundedCanvasFactory,
    standardFontDataUrl: standardFontDataPath(),
  });
  try {
    const document = await loadingTask.promise.catch((error: unknown) => {
      throw malformed(`PDF: cannot open (${describe(error)})`);
    });
    if (document.numPages < 1) throw malformed('PDF: no pages');
    const page = await document.getPage(1);
    const [x0 = 0, y0 = 0, x1 = 0, y1 = 0] = page.view;
    const pageWidth = Math.abs(x1 - x0);
    const pageHeight = Math.abs(y1 - y0);
    assertPageSize(pageWidth, pageHeight);
    return await drawPage(page, pageWidth, pageHeight, size);
  } finally {
    await loadingTask.destroy();
  }
}

type Pdfjs = typeof PdfjsModule;
type PdfPage = Awaited<ReturnType<Awaited<ReturnType<Pdfjs['getDocument']>['promise']>['getPage']>>;

/**
 * pdfjs runs its parser in the same thread as us (we already are a disposable worker): handing it the
 * worker module directly avoids it spawning or fetching anything.
 */
async function loadPdfjs(): Promise<Pdfjs> {
  const globals = globalThis as { pdfjsWorker?: unknown };
  globals.pdfjsWorker ??= await import('pdfjs-dist/legacy/build/pdf.worker.mjs');
  return import('pdfjs-dist/legacy/build/pdf.mjs');
}

/** The 14 standard fonts are not embedded in most PDFs; pdfjs reads their outlines from its own package. */
function standardFontDataPath(): string {
  const packageJson = import.meta.resolve('pdfjs-dist/package.json');
  return new URL('./standard_fonts/', packageJson).pathname;
}

function assertPageSize(width: number, height: number): void {
  if (!(width >= 1 && height >= 1)) throw malformed('PDF: the first page has no size');
  if (width > MAX_PAGE_SIDE_POINTS || height > MAX_PAGE_SIDE_POINTS) {
    throw tooLarge(`PDF: a ${Math.round(width)} × ${Math.round(height)} pt page is beyond PDF's own limits`);
  }
}

async function drawPage(page: PdfPage, pageWidth: number, pageHeight: number, size: number): Promise<Buffer> {
  const scale = Math.min(size / pageWidth, size / pageHeight);
  const viewport = page.getViewport({ scale });
  const canvas = createCanvas(size, size);
  const context = canvas.getContext('2d');
  const offsetX = Math.floor((size - viewport.width) / 2);
  const offsetY = Math.floor((size - viewport.height) / 2);
  const pageRect = [offsetX, offsetY, Math.ceil(viewport.width), Math.ceil(viewport.height)] as const;
  context.fillStyle = '#ffffff';
  context.fillRect(...pageRect);
  await page.render({ canvasContext: context, viewport, transform: [1, 0, 0, 1, offsetX, offsetY] }).promise;
  // A hairline edge so a white page still reads as a page on a white list.
  context.strokeStyle = '#c8c8c8';
  context.lineWidth = 1;
  context.strokeRect(pageRect[0] + 0.5, pageRect[1] + 0.5, pageRect[2] - 1, pageRect[3] - 1);
  return canvas.encode('png');
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
