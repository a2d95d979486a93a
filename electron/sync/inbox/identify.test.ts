import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Evidence } from './evidence.js';
import { holdsIdentifier, identifyCase, type PatientCandidate } from './identify.js';

const theo: PatientCandidate = { id: '11111111-1111-4111-8111-111111111111', name: 'Theo Armour', birthDate: '1984-02-29', identifiers: [{ system: 'chart', value: '10231' }] };
const thea: PatientCandidate = { id: '22222222-2222-4222-8222-222222222222', name: 'Thea Armour', birthDate: '1984-02-29', identifiers: [{ system: 'chart', value: '10232' }] };
const zoe: PatientCandidate = { id: '33333333-3333-4333-8333-333333333333', name: 'Zoë Müller', birthDate: null, identifiers: [] };
const patients = [theo, thea, zoe];

const chart = (value: string, source: Evidence['source'] = 'folder-name'): Evidence => ({ kind: 'identifier', system: 'chart', value, source });
const name = (text: string, source: Evidence['source'] = 'itero-export'): Evidence => ({ kind: 'name', text, source });
const birth = (value: string): Evidence => ({ kind: 'birth-date', value, source: 'dicom' });

describe('which patient a case goes to', () => {
  it('assigns on a chart number that exactly one patient has, with agreeing name and birth date', () => {
    expect(identifyCase([chart('10231'), name('Armour, Theo'), birth('1984-02-29')], patients)).toEqual({
      kind: 'auto',
      patientId: theo.id,
      because: ['chart number in folder name: 10231', 'name in iTero export: Armour, Theo', 'birth date in DICOM header: 1984-02-29'],
    });
    expect(identifyCase([{ kind: 'identifier', system: 'patient-id', value: zoe.id.toUpperCase(), source: 'dicom' }], patients)).toMatchObject({ kind: 'auto', patientId: zoe.id });
  });

  it('only suggests on a name, the right patient first, with the evidence', () => {
    const decision = identifyCase([name('Armour, Theo'), birth('1984-02-29')], patients);
    expect(decision.kind).toBe('needs-patient');
    if (decision.kind !== 'needs-patient') return;
    expect(decision.suggestions.map((suggestion) => suggestion.name)).toEqual(['Theo Armour', 'Thea Armour']);
    expect(decision.suggestions[0]!.because).toEqual(['name in iTero export: Armour, Theo', 'birth date in DICOM header: 1984-02-29']);
    expect(identifyCase([name('muller zoe')], patients)).toMatchObject({ kind: 'needs-patient', suggestions: [{ patientId: zoe.id }] });
  });

  it('calls a chart number of one patient and a name of another a conflict', () => {
    const decision = identifyCase([chart('10231'), name('Armour, Thea')], patients);
    expect(decision).toMatchObject({ kind: 'conflict', reason: 'Chart number in folder name: 10231 is Theo Armour, but name in iTero export: Armour, Thea.' });
    if (decision.kind === 'conflict') expect(decision.suggestions[0]!.patientId).toBe(theo.id);
    expect(identifyCase([chart('10231'), chart('10232', 'dicom')], patients)).toMatchObject({ kind: 'conflict' });
    expect(identifyCase([chart('10231'), chart('99999', 'dicom')], patients)).toMatchObject({ kind: 'conflict' });
    expect(identifyCase([chart('10231'), birth('1990-01-01')], patients)).toMatchObject({ kind: 'conflict' });
  });

  it('waits when the chart number is nobody’s', () => {
    expect(identifyCase([chart('777')], patients)).toMatchObject({ kind: 'needs-patient', reason: 'Chart number in folder name: 777: no patient this organization may see has it.' });
    expect(identifyCase([], patients)).toMatchObject({ kind: 'needs-patient', suggestions: [] });
  });
});

// --- property: auto only when exactly one patient has the identifier, and never to another ----

const FAMILIES = ['Armour', 'Armor', 'Müller', 'Muller', 'Mueller', 'Núñez', 'Nunez', 'Smith', 'Smyth', 'Lee'];
const GIVENS = ['Theo', 'Thea', 'Theodore', 'Zoë', 'Zoe', 'Jon', 'John', 'Ana', 'Anna'];
const BIRTHS = ['1984-02-29', '1990-01-02', '2001-12-31'];
const CHARTS = ['10231', '10232', '010231', '7', 'A-7', 'a-7'];
const SOURCES: Array<Evidence['source']> = ['folder-name', 'itero-export', '3shape-order', 'dicom'];

const patientArb = fc.record({
  family: fc.constantFrom(...FAMILIES),
  given: fc.constantFrom(...GIVENS),
  swapped: fc.boolean(),
  birthDate: fc.option(fc.constantFrom(...BIRTHS), { nil: null }),
  charts: fc.uniqueArray(fc.constantFrom(...CHARTS), { maxLength: 2 }),
});

const evidenceArb = (ids: string[]): fc.Arbitrary<Evidence> =>
  fc.oneof(
    fc.record({ kind: fc.constant('identifier' as const), system: fc.constant('chart' as const), value: fc.constantFrom(...CHARTS), source: fc.constantFrom(...SOURCES) }),
    fc.record({ kind: fc.constant('identifier' as const), system: fc.constant('patient-id' as const), value: fc.constantFrom(...ids, '99999999-9999-4999-8999-999999999999'), source: fc.constantFrom(...SOURCES) }),
    fc.record({ kind: fc.constant('name' as const), text: fc.tuple(fc.constantFrom(...FAMILIES), fc.constantFrom(...GIVENS), fc.boolean()).map(([f, g, s]) => (s ? `${g} ${f}` : `${f}, ${g}`)), source: fc.constantFrom(...SOURCES) }),
    fc.record({ kind: fc.constant('birth-date' as const), value: fc.constantFrom(...BIRTHS), source: fc.constantFrom(...SOURCES) }),
  );

const scenarioArb = fc.array(patientArb, { minLength: 1, maxLength: 8 }).chain((drafts) => {
  // A chart number is unique per organization (the server refuses a second one): the first keeps it.
  const taken = new Set<string>();
  const list: PatientCandidate[] = drafts.map((draft, index) => {
    const charts = draft.charts.filter((value) => !taken.has(value));
    charts.forEach((value) => taken.add(value));
    return {
      id: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`,
      name: draft.swapped ? `${draft.family}, ${draft.given}` : `${draft.given} ${draft.family}`,
      birthDate: draft.birthDate,
      identifiers: charts.map((value) => ({ system: 'chart', value })),
    };
  });
  return fc.tuple(fc.constant(list), fc.array(evidenceArb(list.map((patient) => patient.id)), { maxLength: 5 }));
});

describe('identification over random patients and evidence', () => {
  it('assigns only when every identifier of the case is held by exactly the one chosen patient', () => {
    fc.assert(
      fc.property(scenarioArb, ([list, evidence]) => {
        const decision = identifyCase(evidence, list);
        if (decision.kind !== 'auto') return;
        const identifiers = evidence.filter((item) => item.kind === 'identifier');
        expect(identifiers.length).toBeGreaterThan(0);
        for (const item of identifiers) {
          const holders = list.filter((patient) => holdsIdentifier(patient, item.system, item.value));
          expect(holders.map((patient) => patient.id)).toEqual([decision.patientId]);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('assigns a case whose identifier one patient holds and whose other evidence is that patient’s', () => {
    fc.assert(
      fc.property(scenarioArb, fc.nat(), fc.boolean(), ([list], pick, withName) => {
        const holders = list.filter((patient) => (patient.identifiers ?? []).length > 0);
        if (holders.length === 0) return;
        const patient = holders[pick % holders.length]!;
        const evidence: Evidence[] = [{ kind: 'identifier', system: 'chart', value: patient.identifiers![0]!.value, source: 'dicom' }];
        if (withName) evidence.push({ kind: 'name', text: patient.name, source: 'itero-export' });
        if (patient.birthDate) evidence.push({ kind: 'birth-date', value: patient.birthDate, source: 'dicom' });
        expect(identifyCase(evidence, list)).toMatchObject({ kind: 'auto', patientId: patient.id });
      }),
      { numRuns: 1000 },
    );
  });
});
