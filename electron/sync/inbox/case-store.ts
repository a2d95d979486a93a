/**
 * The inbox's cases and their assignments, in the journal's database (tables `inbox_cases` and
 * `inbox_assignments`, migration '009-inbox-cases' in journal/migrations.ts): one row per case as last seen (files, bytes, scanner, evidence, what
 * identification decided) and one row per assignment ever made — who (the OS account), when,
 * automatic or confirmed, on what evidence — which the Activity view and its CSV export show.
 */
import type Database from 'better-sqlite3';
import type { Evidence } from './evidence.js';
import type { Decision, Suggestion } from './identify.js';

export type AssignedHow = 'automatic' | 'confirmed';

/** What identification last said of a case not yet assigned (no patient in it). */
export type PendingDecision = Exclude<Decision, { kind: 'auto' }>;

export interface CaseRecord {
  inboxId: string;
  name: string;
  firstSeenAt: number;
  changedAt: number;
  fileCount: number;
  bytes: number;
  scanner: string | null;
  evidence: Evidence[];
  decision: PendingDecision | null;
  pairId: string | null;
  patientId: string | null;
  patientName: string | null;
  assignedAt: number | null;
  assignedBy: string | null;
  assignedHow: AssignedHow | null;
  /** No longer in the inbox folder (kept: its assignment is history). */
  gone: boolean;
}

export interface AssignmentRecord {
  id: number;
  inboxId: string;
  caseName: string;
  pairId: string;
  patientId: string;
  patientName: string | null;
  at: number;
  by: string;
  how: AssignedHow;
  /** The evidence lines shown when it was made. */
  evidence: string[];
  /** Set when the case had another patient before (a reassignment before any upload). */
  previousPatientId: string | null;
}

export interface CaseSighting {
  changedAt: number;
  fileCount: number;
  bytes: number;
  scanner: string | null;
  evidence: Evidence[];
}

interface CaseRow {
  inbox_id: string;
  name: string;
  first_seen_at: number;
  changed_at: number;
  file_count: number;
  bytes: number;
  scanner: string | null;
  evidence: string;
  decision: string | null;
  pair_id: string | null;
  patient_id: string | null;
  patient_name: string | null;
  assigned_at: number | null;
  assigned_by: string | null;
  assigned_how: AssignedHow | null;
  gone: number;
}

interface AssignmentRow {
  id: number;
  inbox_id: string;
  case_name: string;
  pair_id: string;
  patient_id: string;
  patient_name: string | null;
  at: number;
  by: string;
  how: AssignedHow;
  evidence: string;
  previous_patient_id: string | null;
}

export class CaseStore {
  constructor(
    private readonly database: Database.Database,
    private readonly now: () => number = Date.now,
  ) {}

  get(inboxId: string, name: string): CaseRecord | undefined {
    const row = this.database.prepare('SELECT * FROM inbox_cases WHERE inbox_id = ? AND name = ?').get(inboxId, name) as CaseRow | undefined;
    return row && toCase(row);
  }

  /** The inbox's cases still in its folder, newest first (by their newest file: when the scanner wrote them). */
  list(inboxId: string): CaseRecord[] {
    const rows = this.database.prepare('SELECT * FROM inbox_cases WHERE inbox_id = ? AND gone = 0 ORDER BY changed_at DESC, name').all(inboxId) as CaseRow[];
    return rows.map(toCase);
  }

  /** Every assigned case of every inbox, gone or not: each is a pair the engine syncs. */
  assigned(): CaseRecord[] {
    return (this.database.prepare('SELECT * FROM inbox_cases WHERE pair_id IS NOT NULL ORDER BY inbox_id, name').all() as CaseRow[]).map(toCase);
  }

  /** A case seen in the folder (new, changed, or back). */
  saw(inboxId: string, name: string, sighting: CaseSighting): CaseRecord {
    this.database
      .prepare(
        `INSERT INTO inbox_cases (inbox_id, name, first_seen_at, changed_at, file_count, bytes, scanner, evidence)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (inbox_id, name) DO UPDATE SET changed_at = excluded.changed_at, file_count = excluded.file_count, bytes = excluded.bytes,
           scanner = excluded.scanner, evidence = excluded.evidence, gone = 0`,
      )
      .run(inboxId, name, this.now(), Math.round(sighting.changedAt), sighting.fileCount, sighting.bytes, sighting.scanner, JSON.stringify(sighting.evidence));
    return this.get(inboxId, name)!;
  }

  decided(inboxId: string, name: string, decision: PendingDecision | null): void {
    this.database.prepare('UPDATE inbox_cases SET decision = ? WHERE inbox_id = ? AND name = ?').run(decision && JSON.stringify(decision), inboxId, name);
  }

  markGone(inboxId: string, name: string): void {
    this.database.prepare('UPDATE inbox_cases SET gone = 1 WHERE inbox_id = ? AND name = ?').run(inboxId, name);
  }

  /** Records the assignment (and its history row) in one transaction; the case keeps its pair id across reassignments. */
  assign(input: { inboxId: string; name: string; pairId: string; patientId: string; patientName: string | null; by: string; how: AssignedHow; evidence: string[] }): CaseRecord {
    const at = this.now();
    this.database.transaction(() => {
      const before = this.get(input.inboxId, input.name);
      this.database
        .prepare(
          // A pair id once given stays (COALESCE): two processes assigning at once sync one pair, not two.
          `UPDATE inbox_cases SET pair_id = COALESCE(pair_id, ?), patient_id = ?, patient_name = ?, assigned_at = ?, assigned_by = ?, assigned_how = ?, decision = NULL
           WHERE inbox_id = ? AND name = ?`,
        )
        .run(input.pairId, input.patientId, input.patientName, at, input.by, input.how, input.inboxId, input.name);
      this.database
        .prepare(
          `INSERT INTO inbox_assignments (inbox_id, case_name, pair_id, patient_id, patient_name, at, by, how, evidence, previous_patient_id)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(input.inboxId, input.name, before?.pairId ?? input.pairId, input.patientId, input.patientName, at, input.by, input.how, JSON.stringify(input.evidence), before?.patientId ?? null);
    })();
    return this.get(input.inboxId, input.name)!;
  }

  /** Assignments, newest first (the Activity view), or of one inbox. */
  assignments(limit = 1000, inboxId?: string): AssignmentRecord[] {
    const rows = (
      inboxId === undefined
        ? this.database.prepare('SELECT * FROM inbox_assignments ORDER BY id DESC LIMIT ?').all(limit)
        : this.database.prepare('SELECT * FROM inbox_assignments WHERE inbox_id = ? ORDER BY id DESC LIMIT ?').all(inboxId, limit)
    ) as AssignmentRow[];
    return rows.map((row) => ({
      id: row.id,
      inboxId: row.inbox_id,
      caseName: row.case_name,
      pairId: row.pair_id,
      patientId: row.patient_id,
      patientName: row.patient_name,
      at: row.at,
      by: row.by,
      how: row.how,
      evidence: JSON.parse(row.evidence) as string[],
      previousPatientId: row.previous_patient_id,
    }));
  }
}

function toCase(row: CaseRow): CaseRecord {
  return {
    inboxId: row.inbox_id,
    name: row.name,
    firstSeenAt: row.first_seen_at,
    changedAt: row.changed_at,
    fileCount: row.file_count,
    bytes: row.bytes,
    scanner: row.scanner,
    evidence: JSON.parse(row.evidence) as Evidence[],
    decision: row.decision === null ? null : (JSON.parse(row.decision) as PendingDecision),
    pairId: row.pair_id,
    patientId: row.patient_id,
    patientName: row.patient_name,
    assignedAt: row.assigned_at,
    assignedBy: row.assigned_by,
    assignedHow: row.assigned_how,
    gone: row.gone === 1,
  };
}

export type { Suggestion };
