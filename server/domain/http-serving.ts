/** HTTP details of serving stored bytes: Range (RFC 9110 §14), Content-Disposition (RFC 6266) and media types. */

export type RangeRequest = { kind: 'whole' } | { kind: 'partial'; start: number; end: number } | { kind: 'unsatisfiable' };

/**
 * One `bytes=` range is served as 206; a header we do not understand, or several ranges, is
 * ignored and the whole body served (RFC 9110 allows both).
 */
export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (header === undefined) return { kind: 'whole' };
  const match = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header.trim());
  if (!match) return { kind: 'whole' };
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return { kind: 'whole' };
  if (first === '') {
    // Suffix range: the last N bytes.
    const length = Number(last);
    if (length === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (last !== '' && Number(last) < start) return { kind: 'whole' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'partial', start, end };
}

/** `attachment; filename="plain fallback"; filename*=UTF-8''percent-encoded` so every browser gets the real name. */
export function contentDisposition(fileName: string, disposition: 'attachment' | 'inline' = 'attachment'): string {
  const fallback = fileName.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${disposition}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/**
 * Media types a browser shows without running anything in them: raster images, PDF (its viewer
 * runs apart from the page's origin) and plain text. HTML, SVG, XML and anything unknown can
 * carry script that would run on the server's origin, so they are only ever saved.
 */
const INLINE_SAFE = /^(?:image\/(?:png|jpeg|gif|webp|avif|bmp)|application\/pdf|text\/plain)(?:\s*;.*)?$/i;

export function showableInline(mediaType: string): boolean {
  return INLINE_SAFE.test(mediaType.trim());
}

/**
 * Headers every response carrying stored bytes or a thumbnail gets: the type is never sniffed (an
 * upload typed STL cannot become HTML), and the bytes run nothing even when a browser renders them
 * (sandboxed: no script, no plugin, an origin of its own; nothing loads from them).
 */
export const CONTENT_SAFETY_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': "sandbox; default-src 'none'",
};

const MEDIA_TYPES: Record<string, string> = {
  PDF: 'application/pdf',
  STL: 'model/stl',
  OBJ: 'model/obj',
  PLY: 'application/x-ply',
  PNG: 'image/png',
  JPG: 'image/jpeg',
  JPEG: 'image/jpeg',
  GIF: 'image/gif',
  TIF: 'image/tiff',
  TIFF: 'image/tiff',
  DCM: 'application/dicom',
  DICOM: 'application/dicom',
  ZIP: 'application/zip',
  XML: 'application/xml',
  JSON: 'application/json',
  TXT: 'text/plain; charset=utf-8',
  CSV: 'text/csv; charset=utf-8',
};

export function mediaTypeOf(fileType: string): string {
  return MEDIA_TYPES[fileType.toUpperCase()] ?? 'application/octet-stream';
}
