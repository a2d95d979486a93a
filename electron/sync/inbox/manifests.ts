/**
 * Evidence from the order file a scanner writes beside its meshes: iTero's export XML (the patient
 * under `RxInfo/Patient`, the `OrderID`), 3Shape's order XML (`<Property name="Patient_FirstName"
 * value="…"/>`), Medit's case XML (`<Patient><Name>`). Only fields about the patient are read (a
 * doctor's name is not a patient's), and only spellings that cannot be misread (see parseBirthDate).
 */
import { isUuid, parseBirthDate, personName, type Evidence, type EvidenceSource } from './evidence.js';
import { readXmlFields, type XmlField } from './xml-fields.js';

const GIVEN = new Set(['firstname', 'givenname', 'forename', 'first']);
const FAMILY = new Set(['lastname', 'familyname', 'surname', 'last']);
const FULL = new Set(['name', 'fullname', 'patientname']);
const CHART = new Set(['chartnumber', 'chartno', 'chart', 'chartid', 'refno', 'referencenumber', 'externalid']);
const BIRTH = new Set(['dateofbirth', 'birthdate', 'dob', 'birthday']);
const ORDER = new Set(['orderid', 'ordernumber', 'orderno']);
const PATIENT_ID = new Set(['patientid', 'id']);

/** Which scanner wrote the file, from the file's own shape. */
export function manifestSource(fields: readonly XmlField[], fileName: string): EvidenceSource {
  if (fields.some((field) => field.path.some((part) => /^(RxInfo|OrthoCAD.*)$/i.test(part))) || /orthocad|itero/i.test(fileName)) return 'itero-export';
  if (fields.some((field) => /^Patient_/i.test(field.path[field.path.length - 1] ?? '') || field.path[0] === 'DentalContainer')) return '3shape-order';
  if (fields.some((field) => /medit/i.test(field.path[0] ?? '')) || /medit/i.test(fileName)) return 'medit-order';
  return 'order-xml';
}

export function evidenceFromManifest(xml: string, fileName: string): Evidence[] {
  const fields = readXmlFields(xml);
  if (fields.length === 0) return [];
  const source = manifestSource(fields, fileName);
  const patient: Record<'given' | 'family' | 'full' | 'chart' | 'birth' | 'id', string | undefined> = { given: undefined, family: undefined, full: undefined, chart: undefined, birth: undefined, id: undefined };
  const evidence: Evidence[] = [];
  for (const field of fields) {
    const { key, aboutPatient } = fieldKey(field.path);
    const value = field.value.trim();
    if (value === '') continue;
    if (ORDER.has(key)) {
      if (!evidence.some((item) => item.kind === 'order')) evidence.push({ kind: 'order', value, source });
      continue;
    }
    if (!aboutPatient) continue;
    if (GIVEN.has(key)) patient.given ??= value;
    else if (FAMILY.has(key)) patient.family ??= value;
    else if (FULL.has(key)) patient.full ??= value;
    else if (CHART.has(key)) patient.chart ??= value;
    else if (BIRTH.has(key)) patient.birth ??= value;
    else if (PATIENT_ID.has(key) && isUuid(value)) patient.id ??= value.toLowerCase();
  }
  if (patient.id) evidence.push({ kind: 'identifier', system: 'patient-id', value: patient.id, source });
  if (patient.chart) evidence.push({ kind: 'identifier', system: 'chart', value: patient.chart, source });
  const text = personName(patient.family, patient.given) || patient.full;
  if (text) evidence.push({ kind: 'name', text, ...(patient.family ? { family: patient.family } : {}), ...(patient.given ? { given: patient.given } : {}), source });
  const birth = patient.birth ? parseBirthDate(patient.birth) : undefined;
  if (birth) evidence.push({ kind: 'birth-date', value: birth, source });
  return evidence;
}

/**
 * The field's last name part, folded ("Patient_FirstName" → "firstname"), and whether it is about
 * the patient: under a `Patient` element, or itself named `Patient…`.
 */
function fieldKey(path: readonly string[]): { key: string; aboutPatient: boolean } {
  const last = path[path.length - 1] ?? '';
  const patientPrefixed = /^patient[_\s-]?(.+)$/i.exec(last);
  const underPatient = path.slice(0, -1).some((part) => /^patient$/i.test(part));
  const raw = patientPrefixed && !FULL.has(fold(last)) && !PATIENT_ID.has(fold(last)) ? patientPrefixed[1]! : last;
  return { key: fold(raw), aboutPatient: underPatient || patientPrefixed !== null };
}

function fold(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]/g, '');
}
