/**
 * Which patient a scanner case belongs to (issue 27), decided from its evidence and the patients
 * the organization may see. Certainty is the rule: a case is assigned on its own only when an
 * identifier (the patient's id, a chart number) matches exactly one patient and nothing the case
 * says disagrees; a name, with or without a birth date, is only a suggestion; evidence that points
 * at two patients is a conflict. Pure: the patients come in, a decision goes out.
 */
import type { CaseSuggestionView } from '../../../shared/bridge.js';
import { foldForSearch } from '../../../shared/name-search.js';
import { describeEvidence, type Evidence, type IdentifierSystem } from './evidence.js';

export interface PatientCandidate {
  id: string;
  name: string;
  birthDate?: string | null;
  identifiers?: ReadonlyArray<{ system: string; value: string }>;
}

/** A patient suggested for a case: what the bridge shows staff (shared/bridge.ts). */
export type Suggestion = CaseSuggestionView;

export type Decision =
  | { kind: 'auto'; patientId: string; because: string[] }
  | { kind: 'needs-patient'; reason: string; suggestions: Suggestion[] }
  | { kind: 'conflict'; reason: string; suggestions: Suggestion[] };

export const MAX_SUGGESTIONS = 5;

type IdentifierEvidence = Extract<Evidence, { kind: 'identifier' }>;

/** Whether the patient carries this identifier, exactly (a chart number is not normalized: "010231" is not "10231"). */
export function holdsIdentifier(patient: PatientCandidate, system: IdentifierSystem, value: string): boolean {
  if (system === 'patient-id') return patient.id.toLowerCase() === value.trim().toLowerCase();
  const wanted = value.trim();
  return (patient.identifiers ?? []).some((identifier) => identifier.system === system && identifier.value === wanted);
}

export function identifyCase(evidence: readonly Evidence[], patients: readonly PatientCandidate[]): Decision {
  const decision = decide(evidence, patients);
  return decision.kind === 'auto' ? decision : { ...decision, reason: sentence(decision.reason) };
}

/** The reasons are built from evidence lines ("chart number in …"): shown as sentences. */
function sentence(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function decide(evidence: readonly Evidence[], patients: readonly PatientCandidate[]): Decision {
  const identifiers = evidence.filter((item): item is IdentifierEvidence => item.kind === 'identifier');
  const suggestions = suggest(evidence, patients);
  if (identifiers.length === 0) {
    return { kind: 'needs-patient', reason: reasonWithoutIdentifier(evidence), suggestions };
  }
  const holders = identifiers.map((item) => ({ item, patients: patients.filter((patient) => holdsIdentifier(patient, item.system, item.value)) }));
  const shared = holders.find((entry) => entry.patients.length > 1);
  if (shared) {
    return { kind: 'conflict', reason: `${describeEvidence(shared.item)} belongs to ${shared.patients.length} patients.`, suggestions: withHolders(suggestions, shared.patients, evidence) };
  }
  const found = new Map<string, PatientCandidate>();
  for (const entry of holders) for (const patient of entry.patients) found.set(patient.id, patient);
  const unmatched = holders.filter((entry) => entry.patients.length === 0).map((entry) => entry.item);
  if (found.size === 0) {
    return { kind: 'needs-patient', reason: `${unmatched.map(describeEvidence).join('; ')}: no patient this organization may see has it.`, suggestions };
  }
  const matchedPatients = [...found.values()];
  const ranked = withHolders(suggestions, matchedPatients, evidence);
  if (found.size > 1) {
    const lines = holders.filter((entry) => entry.patients.length === 1).map((entry) => `${describeEvidence(entry.item)} is ${entry.patients[0]!.name}`);
    return { kind: 'conflict', reason: `The case names two patients: ${lines.join('; ')}.`, suggestions: ranked };
  }
  const patient = matchedPatients[0]!;
  if (unmatched.length > 0) {
    return { kind: 'conflict', reason: `${unmatched.map(describeEvidence).join('; ')} matches no patient, while the case's other identifiers are ${patient.name}.`, suggestions: ranked };
  }
  const disagreeing = evidence.filter((item) => disagrees(item, patient));
  if (disagreeing.length > 0) {
    return { kind: 'conflict', reason: `${identifiers.map(describeEvidence).join('; ')} is ${patient.name}, but ${disagreeing.map(describeEvidence).join('; ')}.`, suggestions: ranked };
  }
  return { kind: 'auto', patientId: patient.id, because: evidence.filter((item) => item.kind !== 'order').map(describeEvidence) };
}

function reasonWithoutIdentifier(evidence: readonly Evidence[]): string {
  const said = evidence.filter((item) => item.kind === 'name' || item.kind === 'birth-date');
  if (said.length === 0) return 'The case names no patient: choose one.';
  return 'A name alone never files a scan: confirm the patient.';
}

/** A name or birth date of the case that the patient does not have. */
function disagrees(item: Evidence, patient: PatientCandidate): boolean {
  if (item.kind === 'name') return !nameAgrees(item.text, patient.name);
  if (item.kind === 'birth-date') return Boolean(patient.birthDate) && patient.birthDate !== item.value;
  return false;
}

function nameWords(text: string): string[] {
  // Commas and carets separate words in "Armour, Theo" and DICOM's "Armour^Theo".
  return foldForSearch(text.replace(/[,^_]+/g, ' '))
    .split(' ')
    .filter((word) => word !== '');
}

/** Every word of the case's name is a whole word of the patient's, in any order (a middle name the case leaves out is fine). */
export function nameAgrees(caseName: string, patientName: string): boolean {
  const words = nameWords(caseName);
  const patientWords = new Set(nameWords(patientName));
  return words.length > 0 && words.every((word) => patientWords.has(word));
}

function suggest(evidence: readonly Evidence[], patients: readonly PatientCandidate[]): Suggestion[] {
  const names = evidence.filter((item) => item.kind === 'name');
  const births = evidence.filter((item) => item.kind === 'birth-date');
  const suggestions: Suggestion[] = [];
  for (const patient of patients) {
    const patientWords = nameWords(patient.name);
    let score = 0;
    const because: string[] = [];
    for (const name of names) {
      const words = nameWords(name.text);
      if (words.length === 0) continue;
      const whole = words.filter((word) => patientWords.includes(word)).length;
      const prefix = words.filter((word) => !patientWords.includes(word) && word.length >= 2 && patientWords.some((own) => own.startsWith(word) || word.startsWith(own))).length;
      if (whole + prefix === 0) continue;
      score += (whole * 10 + prefix * 3) / words.length + (whole === words.length ? 10 : 0);
      because.push(describeEvidence(name));
    }
    if (score === 0) continue;
    for (const birth of births) {
      if (!patient.birthDate) continue;
      if (patient.birthDate === birth.value) {
        score += 8;
        because.push(describeEvidence(birth));
      } else score -= 8;
    }
    suggestions.push(toSuggestion(patient, score, because));
  }
  return rank(suggestions).slice(0, MAX_SUGGESTIONS);
}

/** The patients an identifier pointed at go first: they are what staff must look at. */
function withHolders(suggestions: readonly Suggestion[], holders: readonly PatientCandidate[], evidence: readonly Evidence[]): Suggestion[] {
  const top = holders.map((patient) => {
    const lines = evidence.filter((item) => item.kind === 'identifier' && holdsIdentifier(patient, item.system, item.value)).map(describeEvidence);
    const named = suggestions.find((suggestion) => suggestion.patientId === patient.id);
    return toSuggestion(patient, 1000 + (named?.score ?? 0), [...lines, ...(named?.because ?? [])]);
  });
  const rest = suggestions.filter((suggestion) => !holders.some((patient) => patient.id === suggestion.patientId));
  return [...rank(top), ...rest].slice(0, MAX_SUGGESTIONS);
}

function toSuggestion(patient: PatientCandidate, score: number, because: string[]): Suggestion {
  const chart = (patient.identifiers ?? []).find((identifier) => identifier.system === 'chart')?.value ?? null;
  return { patientId: patient.id, name: patient.name, birthDate: patient.birthDate ?? null, chart, score, because };
}

function rank(suggestions: Suggestion[]): Suggestion[] {
  return suggestions.sort((a, b) => b.score - a.score || a.name.localeCompare(b.name) || a.patientId.localeCompare(b.patientId));
}
