/**
 * What a scanner case says about its patient (issue 27): identifiers (the patient's id in Patient
 * Docs, a chart number), a name, a birth date, an order number — each with where it was read, so
 * staff see why a case went where it went ("name in iTero export: Armour, Theo").
 */

/** Where a piece of evidence was read. */
export type EvidenceSource = 'folder-name' | 'file-name' | 'itero-export' | '3shape-order' | 'medit-order' | 'order-xml' | 'dicom';

/** Identifier systems the inbox matches on: the patient's own id, or the clinic's chart number. */
export type IdentifierSystem = 'patient-id' | 'chart';

export type Evidence =
  | { kind: 'identifier'; system: IdentifierSystem; value: string; source: EvidenceSource }
  /** A person's name as written: `family`/`given` when the source tells them apart. */
  | { kind: 'name'; text: string; family?: string; given?: string; source: EvidenceSource }
  /** YYYY-MM-DD. */
  | { kind: 'birth-date'; value: string; source: EvidenceSource }
  /** The scanner's order or case number: shown, never matched. */
  | { kind: 'order'; value: string; source: EvidenceSource };

const SOURCE_LABELS: Record<EvidenceSource, string> = {
  'folder-name': 'folder name',
  'file-name': 'file name',
  'itero-export': 'iTero export',
  '3shape-order': '3Shape order',
  'medit-order': 'Medit order',
  'order-xml': 'order file',
  dicom: 'DICOM header',
};

export function sourceLabel(source: EvidenceSource): string {
  return SOURCE_LABELS[source];
}

/** One line for staff: "chart number in folder name: 10231". */
export function describeEvidence(evidence: Evidence): string {
  const where = sourceLabel(evidence.source);
  switch (evidence.kind) {
    case 'identifier':
      return `${evidence.system === 'chart' ? 'chart number' : 'patient id'} in ${where}: ${evidence.value}`;
    case 'name':
      return `name in ${where}: ${evidence.text}`;
    case 'birth-date':
      return `birth date in ${where}: ${evidence.value}`;
    case 'order':
      return `order number in ${where}: ${evidence.value}`;
  }
}

/** The same fact read twice (every DICOM file of a series says the same) counts once. */
export function dedupeEvidence(list: readonly Evidence[]): Evidence[] {
  const seen = new Set<string>();
  const kept: Evidence[] = [];
  for (const evidence of list) {
    const key = evidenceKey(evidence);
    if (seen.has(key)) continue;
    seen.add(key);
    kept.push(evidence);
  }
  return kept;
}

function evidenceKey(evidence: Evidence): string {
  switch (evidence.kind) {
    case 'identifier':
      return `identifier|${evidence.system}|${evidence.value}|${evidence.source}`;
    case 'name':
      return `name|${evidence.text}|${evidence.source}`;
    case 'birth-date':
    case 'order':
      return `${evidence.kind}|${evidence.value}|${evidence.source}`;
  }
}

/** A name as "Family, Given" when both are known, else as written; blank parts dropped. */
export function personName(family: string | undefined, given: string | undefined): string {
  const last = family?.trim() ?? '';
  const first = given?.trim() ?? '';
  if (last && first) return `${last}, ${first}`;
  return last || first;
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DICOM_DATE = /^(\d{4})(\d{2})(\d{2})$/;

/**
 * A birth date as YYYY-MM-DD from the unambiguous spellings scanners write (ISO, DICOM's
 * YYYYMMDD, an ISO date-time); undefined for anything else — "04/02/1980" is April or February
 * depending on the country, and a guess must not become evidence.
 */
export function parseBirthDate(text: string): string | undefined {
  const trimmed = text.trim().replace(/T.*$/, '');
  const match = ISO_DATE.exec(trimmed) ?? DICOM_DATE.exec(trimmed);
  if (!match) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day || year < 1850) return undefined;
  return `${match[1]}-${match[2]}-${match[3]}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(text: string): boolean {
  return UUID.test(text);
}
