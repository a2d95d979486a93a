/**
 * The patients a case's evidence is matched against, asked of the server (`GET /v1/patients`,
 * which only ever answers with patients the organization may see): by identifier, exactly; by
 * name, for suggestions. Identification decides on what this returns (identify.ts), nothing else.
 */
import type { PatientPage } from '../api/api-client.js';
import { ApiProblemError } from '../api/api-errors.js';
import type { Evidence } from './evidence.js';
import type { PatientCandidate } from './identify.js';

export interface PatientFinder {
  findPatients(query: { name?: string; identifier?: string; birthDate?: string; offset?: number; limit?: number }): Promise<PatientPage>;
}

/** Enough to rank suggestions; an identifier filter answers with one patient at most. */
const NAME_LIMIT = 20;
/** A patient id is looked for among this many patients at most when no name narrows it. */
const ID_SCAN_LIMIT = 5000;
const PAGE = 200;

/** Every patient the evidence could be about, fetched from the server. Throws when the server cannot answer. */
export async function candidatesFor(evidence: readonly Evidence[], finder: PatientFinder): Promise<PatientCandidate[]> {
  const found = new Map<string, PatientCandidate>();
  const keep = (page: PatientPage) => {
    for (const patient of page.patients) found.set(patient.id, toCandidate(patient));
  };
  for (const item of evidence) {
    if (item.kind === 'identifier' && item.system === 'chart') keep(await byIdentifier(`chart|${item.value}`, finder));
    if (item.kind === 'name') {
      keep(await finder.findPatients({ name: item.text, limit: NAME_LIMIT }));
      // "Armour, Theodore" is no whole-name match for "Armour, Theo": the family name alone finds it for the suggestions.
      if (item.family) keep(await finder.findPatients({ name: item.family, limit: NAME_LIMIT }));
    }
  }
  for (const item of evidence) {
    if (item.kind !== 'identifier' || item.system !== 'patient-id' || found.has(item.value)) continue;
    const patient = await findById(item.value, finder);
    if (patient) found.set(patient.id, patient);
  }
  return [...found.values()];
}

/**
 * A value the server refuses as a filter (a control character, a space at an end: scanners write
 * such IDs) is held by no patient: answered as none, so the case waits for staff instead of asking again forever.
 */
async function byIdentifier(identifier: string, finder: PatientFinder): Promise<PatientPage> {
  try {
    return await finder.findPatients({ identifier, limit: 5 });
  } catch (error) {
    if (error instanceof ApiProblemError && error.status === 400) return { patients: [], offset: 0, limit: 5, total: 0 };
    throw error;
  }
}

/** The list has no id filter: paged through (bounded), which a clinic's patient list allows. */
async function findById(id: string, finder: PatientFinder): Promise<PatientCandidate | undefined> {
  for (let offset = 0; offset < ID_SCAN_LIMIT; offset += PAGE) {
    const page = await finder.findPatients({ offset, limit: PAGE });
    const match = page.patients.find((patient) => patient.id.toLowerCase() === id);
    if (match) return toCandidate(match);
    if (page.patients.length < PAGE || offset + PAGE >= page.total) return undefined;
  }
  return undefined;
}

function toCandidate(patient: PatientPage['patients'][number]): PatientCandidate {
  return { id: patient.id.toLowerCase(), name: patient.name, birthDate: patient.birthDate ?? null, identifiers: patient.identifiers ?? [] };
}
