/** The `?demo` engine's scanner inbox: one case waiting on a name, one conflict, one synced. */
import type { CaseAssignmentView, InboxCaseView } from '../../../shared/bridge.js';
import type { PatientDto } from '../../../shared/schemas.js';
import { BridgeError } from './errors.js';

const INBOX = 'demo-inbox';
const FOLDER = 'C:\\Scans\\Inbox';

export function makeDemoInbox(patients: readonly PatientDto[], now: number) {
  const [jane, john] = [patients[0]!, patients[1]!];
  const base = { inboxId: INBOX, suggestions: [] as InboxCaseView['suggestions'], patientId: null, patientName: null, assignedAt: null, assignedBy: null, assignedHow: null, filesSynced: 0, filesKnown: 0 } as const;
  const cases: InboxCaseView[] = [
    {
      ...base,
      name: 'Roe_Jane_2026-03-12',
      state: 'needs-patient',
      reason: 'A name alone never files a scan: confirm the patient.',
      fileCount: 3,
      bytes: 48_200_000,
      scanner: '3Shape',
      firstSeenAt: now - 60_000,
      changedAt: now - 70_000,
      evidence: ['name in 3Shape order: Roe, Jane'],
      suggestions: [{ patientId: jane.id, name: jane.name, birthDate: null, chart: null, score: 20, because: ['name in 3Shape order: Roe, Jane'] }],
    },
    {
      ...base,
      name: 'CBCT_0412',
      state: 'conflict',
      reason: `chart number in DICOM header: 10231 is ${jane.name}, but name in DICOM header: Doe, John.`,
      fileCount: 412,
      bytes: 210_000_000,
      scanner: 'DICOM',
      firstSeenAt: now - 600_000,
      changedAt: now - 610_000,
      evidence: ['chart number in DICOM header: 10231', 'name in DICOM header: Doe, John'],
      suggestions: [{ patientId: jane.id, name: jane.name, birthDate: null, chart: '10231', score: 1000, because: ['chart number in DICOM header: 10231'] }, { patientId: john.id, name: john.name, birthDate: null, chart: null, score: 20, because: ['name in DICOM header: Doe, John'] }],
    },
    {
      ...base,
      name: 'OrthoCAD_Export_40012345',
      state: 'synced',
      reason: null,
      fileCount: 3,
      bytes: 31_000_000,
      scanner: 'iTero',
      firstSeenAt: now - 3_600_000,
      changedAt: now - 3_610_000,
      evidence: ['chart number in iTero export: 10231', `name in iTero export: ${jane.name}`],
      patientId: jane.id,
      patientName: jane.name,
      assignedAt: now - 3_590_000,
      assignedBy: 'reception',
      assignedHow: 'automatic',
      filesSynced: 3,
      filesKnown: 3,
    },
  ];
  const assignments: CaseAssignmentView[] = [
    { id: 1, inboxFolder: FOLDER, caseName: 'OrthoCAD_Export_40012345', patientId: jane.id, patientName: jane.name, at: now - 3_590_000, by: 'reception', how: 'automatic', evidence: ['chart number in iTero export: 10231'], previousPatientId: null },
  ];
  return {
    listCases: async () => cases.map((item) => ({ ...item })),
    assignCase: async (input: { inboxId: string; caseName: string; patientId: string }) => {
      const item = cases.find((candidate) => candidate.inboxId === input.inboxId && candidate.name === input.caseName);
      if (!item) throw new BridgeError('NOT_FOUND', `There is no case '${input.caseName}'.`);
      if (item.filesSynced > 0 && item.patientId !== input.patientId) throw new BridgeError('CONFLICT', `'${item.name}' cannot go to another patient: its files were already sent.`);
      const patient = patients.find((candidate) => candidate.id === input.patientId);
      Object.assign(item, { state: 'assigned', reason: null, suggestions: [], patientId: input.patientId, patientName: patient?.name ?? null, assignedAt: now, assignedBy: 'demo', assignedHow: 'confirmed' });
      assignments.unshift({ id: assignments.length + 1, inboxFolder: FOLDER, caseName: item.name, patientId: input.patientId, patientName: patient?.name ?? null, at: now, by: 'demo', how: 'confirmed', evidence: item.evidence, previousPatientId: null });
      return { ...item };
    },
    caseAssignments: async (limit: number) => assignments.slice(0, limit),
  };
}
