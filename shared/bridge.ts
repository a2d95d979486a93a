/**
 * The one contract between the UI (renderer) and the engine (STYLE.md "One contract, two sides").
 * The Electron preload and the headless HTTP twin are both generated from BRIDGE_METHODS; the
 * engine side validates every payload against these schemas, because the renderer is untrusted.
 * The renderer never sees a token or a secret: it asks the engine, which calls the server.
 */
import { Type, type Static, type TSchema } from '#typebox';
import type { DocumentVersionDto, PatientListResponse, SearchResponse } from './schemas.js';
import { SearchBody, Uuid, literalUnion } from './schemas.js';
import type { BridgeErrorCode } from './bridge-errors.js';
import { FILE_STATES, type FileState, type ItemProgress, type StateCounts } from './file-states.js';
import { RECHECK_MINUTES, recheckMinutesProblem } from './recheck-interval.js';

export { FILE_STATES, RECHECK_MINUTES, recheckMinutesProblem, type FileState, type ItemProgress, type StateCounts };

// --- Views the engine publishes ----------------------------------------------------------------

export interface FileError {
  code: BridgeErrorCode;
  /** Plain language, for clinic staff. */
  message: string;
  /** The server's problem detail, when the server refused. */
  detail?: string | undefined;
}

export interface FileView {
  id: number;
  pairId: string;
  relativePath: string;
  remotePath: string;
  fileName: string;
  size: number;
  state: FileState;
  bytesDone: number;
  /** Bytes per second of the running upload, 0 otherwise. */
  rate: number;
  attempts: number;
  nextAttemptAt: number | null;
  error: FileError | null;
  documentId: string | null;
  version: number | null;
  updatedAt: number;
  syncedAt: number | null;
  /**
   * When the re-check found this scan missing on the server (lost there, an older version restored,
   * or its document gone); null if never, or since a newer scan replaced it. A file synced with
   * this set went up again because of that.
   */
  lostAt: number | null;
}

/** A case = the first directory level under the pair's folder (a scanner export), or the folder root. */
export interface CaseView {
  path: string;
  /** Skipped files (an empty file) are not counted as failed: see `skipped`. */
  counts: StateCounts;
  bytesDone: number;
  bytesTotal: number;
  /** Files synced of all, a DICOM series counted as one item: what the case's bar and text show. */
  items: ItemProgress;
  /** Files set aside that need no one (empty files, uploaded once they have content). */
  skipped: number;
}

export type PairState = 'idle' | 'syncing' | 'paused' | 'attention' | 'offline';

export interface PairView {
  id: string;
  folder: string;
  patientId: string;
  patientName: string | null;
  remoteBasePath: string;
  paused: boolean;
  state: PairState;
  counts: StateCounts;
  bytesDone: number;
  bytesTotal: number;
  rateBytesPerSecond: number;
  etaSeconds: number | null;
  cases: CaseView[];
  /** Files synced of all, a DICOM series counted as one item: what the folder's bar and text show. */
  items: ItemProgress;
  /** Files set aside that need no one: empty (0-byte) files, uploaded once they have content. Not in `counts.failed`. */
  skipped: number;
  /** Why the pair needs attention, for a one-line notice: the folder's problem, else the newest failure. */
  lastError: FileError | null;
  /** The failed files' reasons, one entry per code, most files first. */
  failureReasons: FailureReason[];
  /** The newest reason a file is waiting to be retried (not a failure: it is retried on its own). */
  retryReason: FileError | null;
  /** The folder is missing or unreadable; it is looked for again until it is back. */
  folderError: FileError | null;
  /** Files seen in the folder but not taken on yet: still being written, or waiting to be readable. */
  settling: number;
  /** Of those, files that stopped changing but cannot be opened (held by another program, or no permission to read them). */
  unreadable: string[];
  /**
   * Files of this folder held back because this computer's disk is full (found but not recorded
   * yet, or not started): they sync by themselves once there is space. 0 while there is space.
   */
  heldForDiskFull: number;
}

export interface FailureReason extends FileError {
  /** How many failed files have this reason. */
  count: number;
  /** The names of the newest of them (at most a few), so a notice can say which file. */
  fileNames?: string[];
}

export type AppMode = 'unconfigured' | 'embedded' | 'remote';

export interface AppStatus {
  mode: AppMode;
  /** 'desktop' in the Electron window, 'headless' in the loopback twin. */
  shell: 'desktop' | 'headless';
  server: {
    url: string;
    tokenUrl: string;
    clientId: string;
    organizationId: string;
    organizationName: string | null;
    /** The clinic CA certificates trusted for this server besides the system's (kept in the sync home). */
    trustedCertificates: Array<{ subject: string; fingerprint: string; validTo: string }>;
  } | null;
  online: boolean;
  /** `clientSecretMissing`: a server is configured but its client secret is in neither store (enter it again). */
  secrets: { backend: 'keychain' | 'encrypted-file'; warning: string | null; clientSecretMissing: boolean };
  webhook: { listening: boolean; localUrl: string | null; publicUrl: string | null; subscribed: boolean; error: string | null };
  version: string;
  /** The demo patient the embedded server was seeded with (a demo, not a real person), or null/absent. */
  demoPatientId?: string | null;
  /** Repairs this computer's files needed at start (a damaged upload record or settings file), in plain words. */
  notices: string[];
}

export type WebhookVerdict = 'accepted' | 'duplicate' | 'rejected';

export interface WebhookActivityView {
  id: number;
  receivedAt: number;
  verdict: WebhookVerdict;
  messageId: string | null;
  eventType: string | null;
  patientId: string | null;
  reason: string | null;
}

/** A file of the upload record, also of a folder no longer synced, with the folder and patient it went from and to. */
export interface HistoryFileView extends FileView {
  folder: string;
  patientName: string;
  /** The folder was removed with "Stop syncing"; its record stays. */
  pairRemoved: boolean;
}

/** A patient suggested for a scanner inbox's case, likeliest first, with the evidence that led to it. */
export interface CaseSuggestionView {
  patientId: string;
  name: string;
  birthDate: string | null;
  chart: string | null;
  /** Higher is likelier; only the order matters. */
  score: number;
  /** The evidence lines that led to it ("name in iTero export: Armour, Theo"). */
  because: string[];
}

/** A case of a scanner inbox (a top-level folder or loose file of it) and whose it is. */
export interface InboxCaseView {
  inboxId: string;
  name: string;
  /** needs-patient and conflict wait for staff; assigned syncs; synced: every file verified. */
  state: 'needs-patient' | 'conflict' | 'assigned' | 'synced';
  /** Why it waits, in plain words; null once it has a patient. */
  reason: string | null;
  fileCount: number;
  bytes: number;
  scanner: string | null;
  firstSeenAt: number;
  changedAt: number;
  evidence: string[];
  suggestions: CaseSuggestionView[];
  patientId: string | null;
  patientName: string | null;
  assignedAt: number | null;
  /** The OS account the assignment was made under. */
  assignedBy: string | null;
  assignedHow: 'automatic' | 'confirmed' | null;
  filesSynced: number;
  filesKnown: number;
}

/** One assignment of a case to a patient, as kept in the journal (the Activity view). */
export interface CaseAssignmentView {
  id: number;
  inboxFolder: string;
  caseName: string;
  patientId: string;
  patientName: string | null;
  at: number;
  by: string;
  how: 'automatic' | 'confirmed';
  evidence: string[];
  /** Set when it replaced another patient (allowed only before any upload of the case). */
  previousPatientId: string | null;
}

export interface HistoryEntryView {
  fileId: number;
  at: number;
  event: string;
  version: number | null;
  sha256: string | null;
  detail: string | null;
}

export interface SettingsView {
  concurrency: number;
  settleMs: number;
  rescanMinutes: number;
  /** Minutes between checks of the synced files against the server; 0: off (only a `document.lost` notice starts one). */
  recheckMinutes: number;
  ignorePatterns: string[];
  bandwidthLimitBytesPerSecond: number;
  webhook: { port: number; publicUrl: string | null };
  maskedSecret: string | null;
}

export interface ConnectionTestResult {
  ok: boolean;
  /** Which step failed: reach the server, authenticate, scopes, organization. */
  step: 'reach' | 'authenticate' | 'scope' | 'organization' | null;
  error: FileError | null;
  organizationName: string | null;
}

export type BridgeEvent =
  | { type: 'status'; status: AppStatus }
  | { type: 'pairs'; pairs: PairView[] }
  | { type: 'files'; pairId: string; files: FileView[] }
  | { type: 'webhook'; activity: WebhookActivityView }
  | { type: 'documents-changed'; patientId: string | null }
  /** A scanner inbox's cases changed (a case found, identified, assigned, synced). */
  | { type: 'cases' };

// --- Method payloads ----------------------------------------------------------------------------

export const RemoteSetupInput = Type.Object({
  serverUrl: Type.String({ minLength: 1, maxLength: 2048 }),
  tokenUrl: Type.Optional(Type.String({ maxLength: 2048 })),
  clientId: Type.String({ minLength: 1, maxLength: 256 }),
  clientSecret: Type.String({ minLength: 1, maxLength: 1024 }),
  organizationId: Uuid,
  /**
   * The clinic's CA certificate (PEM, or base64 of a DER .cer) to trust for this server; '' forgets
   * the one kept; left out keeps it. Certificate checks cannot be switched off.
   */
  caCertificate: Type.Optional(Type.String({ maxLength: 262_144 })),
});
export type RemoteSetupInput = Static<typeof RemoteSetupInput>;

export const AddPairInput = Type.Object({
  folder: Type.String({ minLength: 1, maxLength: 4096 }),
  patientId: Uuid,
  patientName: Type.Optional(Type.String({ maxLength: 256 })),
  remoteBasePath: Type.Optional(Type.String({ maxLength: 1024 })),
});
export type AddPairInput = Static<typeof AddPairInput>;

export const PairId = Type.String({ minLength: 1, maxLength: 64 });
export const AssignCaseInput = Type.Object({ inboxId: Type.String({ minLength: 1, maxLength: 64 }), caseName: Type.String({ minLength: 1, maxLength: 1024 }), patientId: Uuid });
export const RetryTarget = Type.Object({ pairId: Type.Optional(PairId), fileId: Type.Optional(Type.Integer({ minimum: 1 })) });
export const FileListInput = Type.Object({
  pairId: PairId,
  states: Type.Optional(Type.Array(literalUnion(FILE_STATES))),
  offset: Type.Optional(Type.Integer({ minimum: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
});
export const PatientQuery = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 256 })),
  /** `system|value`, exact (GET /v1/patients' filter). */
  identifier: Type.Optional(Type.String({ maxLength: 1024, format: 'identifier-filter' })),
  birthDate: Type.Optional(Type.String({ maxLength: 10, format: 'birth-date' })),
  offset: Type.Optional(Type.Integer({ minimum: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
});
export const SettingsPatch = Type.Object({
  concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 16 })),
  settleMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000 })),
  rescanMinutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 1440 })),
  /** Its bounds (recheckMinutesProblem) are checked by the app, which names them in plain words. */
  recheckMinutes: Type.Optional(Type.Integer({ minimum: 0 })),
  ignorePatterns: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { maxItems: 100 })),
  bandwidthLimitBytesPerSecond: Type.Optional(Type.Integer({ minimum: 0 })),
  webhook: Type.Optional(Type.Object({ port: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })), publicUrl: Type.Optional(Type.Union([Type.String({ maxLength: 2048 }), Type.Null()])) })),
  clientSecret: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  /** A new clinic CA certificate for the server (PEM, or base64 of a DER .cer); '' forgets the one kept. */
  caCertificate: Type.Optional(Type.String({ maxLength: 262_144 })),
});
export type SettingsPatch = Static<typeof SettingsPatch>;

/**
 * Every bridge method: its parameter list as a tuple schema. The interface below must have
 * exactly these keys (checked by the `satisfies` clause), so neither side can drift.
 */
export const BRIDGE_METHODS = {
  getStatus: Type.Tuple([]),
  setupEmbedded: Type.Tuple([]),
  testConnection: Type.Tuple([RemoteSetupInput]),
  setupRemote: Type.Tuple([RemoteSetupInput]),
  listPairs: Type.Tuple([]),
  addPair: Type.Tuple([AddPairInput]),
  removePair: Type.Tuple([PairId]),
  pausePair: Type.Tuple([PairId]),
  resumePair: Type.Tuple([PairId]),
  retryFailed: Type.Tuple([RetryTarget]),
  listFiles: Type.Tuple([FileListInput]),
  fileHistory: Type.Tuple([Type.Integer({ minimum: 1 })]),
  historyFiles: Type.Tuple([Type.Integer({ minimum: 1, maximum: 100_000 })]),
  openFolder: Type.Tuple([PairId]),
  chooseFolder: Type.Tuple([]),
  listPatients: Type.Tuple([PatientQuery]),
  searchDocuments: Type.Tuple([Uuid, SearchBody]),
  saveDocument: Type.Tuple([Uuid, Uuid]),
  documentVersions: Type.Tuple([Uuid, Uuid]),
  saveDocumentVersion: Type.Tuple([Uuid, Uuid, Type.Integer({ minimum: 1, maximum: 2_147_483_647 })]),
  webhookActivity: Type.Tuple([Type.Integer({ minimum: 1, maximum: 1000 })]),
  exportHistoryCsv: Type.Tuple([]),
  listCases: Type.Tuple([]),
  assignCase: Type.Tuple([AssignCaseInput]),
  caseAssignments: Type.Tuple([Type.Integer({ minimum: 1, maximum: 1000 })]),
  getSettings: Type.Tuple([]),
  updateSettings: Type.Tuple([SettingsPatch]),
} satisfies Record<keyof BridgeApi, TSchema>;

export type BridgeMethod = keyof typeof BRIDGE_METHODS;
export const BRIDGE_METHOD_NAMES = Object.keys(BRIDGE_METHODS) as BridgeMethod[];

export interface BridgeApi {
  getStatus(): Promise<AppStatus>;
  /** "This computer runs the server": embedded server on the embedded defaults with a demo organization, patient and client. */
  setupEmbedded(): Promise<AppStatus>;
  /** Names exactly what is wrong: unreachable, bad credentials, missing scope, wrong organization. */
  testConnection(input: RemoteSetupInput): Promise<ConnectionTestResult>;
  setupRemote(input: RemoteSetupInput): Promise<AppStatus>;
  listPairs(): Promise<PairView[]>;
  addPair(input: AddPairInput): Promise<PairView>;
  removePair(pairId: string): Promise<void>;
  pausePair(pairId: string): Promise<PairView>;
  resumePair(pairId: string): Promise<PairView>;
  retryFailed(target: Static<typeof RetryTarget>): Promise<number>;
  listFiles(input: Static<typeof FileListInput>): Promise<{ files: FileView[]; total: number }>;
  fileHistory(fileId: number): Promise<HistoryEntryView[]>;
  /** Every file of the upload record, newest first (synced pairs and pairs no longer synced). */
  historyFiles(limit: number): Promise<HistoryFileView[]>;
  /** Opens the folder in the OS file manager (desktop); returns the path. */
  openFolder(pairId: string): Promise<string>;
  /** Native folder picker on the desktop; null headless (the UI then asks for a typed path). */
  chooseFolder(): Promise<string | null>;
  listPatients(query: Static<typeof PatientQuery>): Promise<PatientListResponse>;
  searchDocuments(patientId: string, body: SearchBody): Promise<SearchResponse>;
  /** Desktop: save dialog and download; headless: returns null and the UI downloads via storageDownloadUri. */
  saveDocument(patientId: string, documentId: string): Promise<string | null>;
  /**
   * A document's content versions, newest first: each one's link reads through the engine, and one
   * whose stored file is marked lost on the server says since when (contentLostAt) and has no link.
   */
  documentVersions(patientId: string, documentId: string): Promise<DocumentVersionDto[]>;
  /** As saveDocument, for one version (NOT_FOUND when it is marked lost on the server): null headless, the UI then downloads its link. */
  saveDocumentVersion(patientId: string, documentId: string, version: number): Promise<string | null>;
  webhookActivity(limit: number): Promise<WebhookActivityView[]>;
  exportHistoryCsv(): Promise<string>;
  /** The scanner inboxes' cases, newest first. */
  listCases(): Promise<InboxCaseView[]>;
  /** Staff confirm a case's patient; the case syncs at once. CONFLICT once an upload of it began (the message says why). */
  assignCase(input: Static<typeof AssignCaseInput>): Promise<InboxCaseView>;
  /** Assignments of cases to patients, newest first. */
  caseAssignments(limit: number): Promise<CaseAssignmentView[]>;
  getSettings(): Promise<SettingsView>;
  updateSettings(patch: SettingsPatch): Promise<SettingsView>;
}

export type BridgeParams<M extends BridgeMethod> = Parameters<BridgeApi[M]>;
export type BridgeResult<M extends BridgeMethod> = Awaited<ReturnType<BridgeApi[M]>>;

/** What crosses the bridge: data or a coded error (STYLE.md "Errors are data at the edges"). */
export type BridgeEnvelope<T> = { ok: true; value: T } | { ok: false; error: { code: BridgeErrorCode; message: string; detail?: string } };

/** The renderer-side API: the bridge methods plus the event stream. */
export interface BridgeClient extends BridgeApi {
  onEvent(listener: (event: BridgeEvent) => void): () => void;
}
