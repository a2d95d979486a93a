/**
 * DICOM Part-10 files (CT and CBCT slices) told by their header, not their name: scanners often
 * write them without an extension (IM1, IM2, …). A Part-10 file begins with a 128-byte preamble,
 * then the four bytes "DICM".
 */
export const DICOM_TYPE = 'DCM';
export const DICOM_PREAMBLE_BYTES = 128;
/** How many bytes of a file's start decide whether it is DICOM. */
export const DICOM_HEAD_BYTES = DICOM_PREAMBLE_BYTES + 4;

const MAGIC = [0x44, 0x49, 0x43, 0x4d]; // "DICM"

/** Whether a file's first bytes are a DICOM Part-10 header. */
export function isDicomPart10(head: Uint8Array): boolean {
  if (head.length < DICOM_HEAD_BYTES) return false;
  return MAGIC.every((byte, index) => head[DICOM_PREAMBLE_BYTES + index] === byte);
}

/**
 * The type a file is stored as: the one its name gives, except a file without a known extension
 * (`BIN`) whose header is DICOM, which is `DCM`.
 */
export function typeFromNameAndHead(typeFromName: string, head: Uint8Array | null): string {
  return typeFromName === 'BIN' && head !== null && isDicomPart10(head) ? DICOM_TYPE : typeFromName;
}

/**
 * Names in the order a person counts: digits as numbers, so slice IM2 comes before IM10, and
 * case and accents only break ties.
 */
export function compareNatural(a: string, b: string): number {
  return NATURAL.compare(a, b);
}
const NATURAL = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
