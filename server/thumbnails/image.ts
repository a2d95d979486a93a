import { createCanvas, loadImage } from '@napi-rs/canvas';
import { malformed, tooLarge } from './errors.js';

/** Decoded, an image costs 4 bytes a pixel: 40 MP is 160 MB, about what one worker may spend. */
export const MAX_IMAGE_PIXELS = 40_000_000;

interface Dimensions {
  width: number;
  height: number;
}

/**
 * PNG or JPEG, scaled to fit size × size on a transparent background. The dimensions are read from the
 * header before anything is decoded: a 50 000 × 50 000 header in a 1 kB file must cost nothing.
 */
export async function renderImageThumbnail(bytes: Buffer, size: number): Promise<Buffer> {
  const { width, height } = readDimensions(bytes);
  if (width === 0 || height === 0) throw malformed('image: zero width or height');
  if (width * height > MAX_IMAGE_PIXELS) throw tooLarge(`image: ${width} × ${height} is more than ${MAX_IMAGE_PIXELS / 1e6} megapixels`);
  const image = await loadImage(bytes).catch((error: unknown) => {
    throw malformed(`image: cannot decode (${String(error)})`);
  });
  const canvas = createCanvas(size, size);
  const context = canvas.getContext('2d');
  const scale = Math.min(size / width, size / height);
  const drawnWidth = Math.max(1, Math.round(width * scale));
  const drawnHeight = Math.max(1, Math.round(height * scale));
  context.imageSmoothingEnabled = true;
  context.imageSmoothingQuality = 'high';
  context.drawImage(image, Math.floor((size - drawnWidth) / 2), Math.floor((size - drawnHeight) / 2), drawnWidth, drawnHeight);
  return canvas.encode('png');
}

/** Dimensions by the file's magic bytes, not its claimed type: clinics rename files. */
export function readDimensions(bytes: Buffer): Dimensions {
  if (isPng(bytes)) return pngDimensions(bytes);
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return jpegDimensions(bytes);
  throw malformed('image: neither PNG nor JPEG');
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function isPng(bytes: Buffer): boolean {
  return bytes.length >= 8 && bytes.subarray(0, 8).equals(PNG_SIGNATURE);
}

/** The IHDR chunk must come first; width and height are its first two fields. */
function pngDimensions(bytes: Buffer): Dimensions {
  if (bytes.length < 24 || bytes.toString('latin1', 12, 16) !== 'IHDR') throw malformed('PNG: no IHDR chunk');
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** Walks the JPEG markers to the first start-of-frame (SOF0–SOF15 except DHT, JPG and DAC). */
function jpegDimensions(bytes: Buffer): Dimensions {
  let pos = 2;
  while (pos + 4 <= bytes.length) {
    if (bytes[pos] !== 0xff) throw malformed('JPEG: broken marker structure');
    const marker = bytes[pos + 1]!;
    if (marker === 0xff) {
      pos++;
      continue;
    }
    if (isStandaloneMarker(marker)) {
      pos += 2;
      continue;
    }
    const length = bytes.readUInt16BE(pos + 2);
    if (isStartOfFrame(marker)) {
      if (pos + 9 > bytes.length) break;
      return { height: bytes.readUInt16BE(pos + 5), width: bytes.readUInt16BE(pos + 7) };
    }
    if (length < 2) throw malformed('JPEG: broken segment length');
    pos += 2 + length;
  }
  throw malformed('JPEG: no frame header');
}

function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

/** Markers without a length field: TEM, RST0–RST7, SOI, EOI. */
function isStandaloneMarker(marker: number): boolean {
  return marker === 0x01 || (marker >= 0xd0 && marker <= 0xd9);
}
