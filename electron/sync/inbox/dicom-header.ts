/**
 * The patient tags of a DICOM file — PatientID (0010,0020), PatientName (0010,0010) and
 * PatientBirthDate (0010,0030) — read with dicom-parser from the file's first bytes only, parsing
 * stopped at the pixel data (7FE0,0010): a CBCT volume of hundreds of megabytes is never loaded.
 */
import { open } from 'node:fs/promises';
import dicomParser, { type DataSet } from 'dicom-parser';
import { isUuid, parseBirthDate, personName, type Evidence } from './evidence.js';

/** Patient tags come first in a data set; a header is a few kilobytes, rarely more than this. */
export const DICOM_HEADER_BYTES = 256 * 1024;

/** Whether the first bytes carry the DICOM Part 10 mark ("DICM" after the 128-byte preamble). */
export function looksLikeDicom(firstBytes: Uint8Array): boolean {
  return firstBytes.length >= 132 && firstBytes[128] === 0x44 && firstBytes[129] === 0x49 && firstBytes[130] === 0x43 && firstBytes[131] === 0x4d;
}

export async function readHead(file: string, bytes: number): Promise<Uint8Array> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** The patient evidence of a DICOM header, or none when the bytes are no DICOM file. */
export function evidenceFromDicomHead(head: Uint8Array): Evidence[] {
  if (!looksLikeDicom(head)) return [];
  const dataSet = parseHead(head);
  if (!dataSet) return [];
  const evidence: Evidence[] = [];
  const id = readString(dataSet, 'x00100020');
  if (id) evidence.push({ kind: 'identifier', system: isUuid(id) ? 'patient-id' : 'chart', value: isUuid(id) ? id.toLowerCase() : id, source: 'dicom' });
  const name = readString(dataSet, 'x00100010');
  if (name) {
    // PN: family^given^middle^prefix^suffix (one component group; '=' starts ideographic ones).
    const [family, given, middle] = name.split('=')[0]!.split('^');
    const first = [given, middle].filter((part) => part && part.trim() !== '').join(' ');
    const text = personName(family, first);
    if (text) evidence.push({ kind: 'name', text, ...(family ? { family: family.trim() } : {}), ...(first ? { given: first } : {}), source: 'dicom' });
  }
  const birth = readString(dataSet, 'x00100030');
  const birthDate = birth ? parseBirthDate(birth) : undefined;
  if (birthDate) evidence.push({ kind: 'birth-date', value: birthDate, source: 'dicom' });
  return evidence;
}

export async function evidenceFromDicomFile(file: string): Promise<Evidence[]> {
  return evidenceFromDicomHead(await readHead(file, DICOM_HEADER_BYTES));
}

function parseHead(head: Uint8Array): DataSet | undefined {
  try {
    return dicomParser.parseDicom(head, { untilTag: 'x7fe00010' });
  } catch (error) {
    // The header ran past the bytes read: what was parsed before that is still good.
    const partial = (error as { dataSet?: DataSet }).dataSet;
    return partial && partial.elements ? partial : undefined;
  }
}

function readString(dataSet: DataSet, tag: string): string | undefined {
  try {
    const value = dataSet.string(tag)?.replace(/\0/g, '').trim();
    return value ? value : undefined;
  } catch {
    return undefined;
  }
}
