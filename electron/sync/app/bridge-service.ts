/**
 * The engine side of the bridge (shared/bridge.ts). `BridgeService` implements BridgeApi on the
 * SyncApp; `BridgeDispatcher` is what both transports (Electron IPC, the headless HTTP twin) call:
 * it validates every payload against BRIDGE_METHODS — the renderer is untrusted — and always
 * answers a BridgeEnvelope.
 */
import path from 'node:path';
import type {
  AddPairInput,
  AppStatus,
  BridgeApi,
  BridgeEnvelope,
  CaseAssignmentView,
  ConnectionTestResult,
  InboxCaseView,
  FileView,
  HistoryEntryView,
  HistoryFileView,
  PairView,
  RemoteSetupInput,
  SettingsPatch,
  SettingsView,
  WebhookActivityView,
} from '../../../shared/bridge.js';
import { createBridgeCallValidator } from '../../../shared/bridge-validation.js';
import type { DocumentVersionDto, PatientListResponse, SearchBody, SearchResponse } from '../../../shared/schemas.js';
import { versionFileName } from '../../../shared/names.js';
import { BridgeError, toCodedError } from './bridge-error.js';
import { historyCsv, pairLabels, type AssignmentCsvRow } from '../journal/history-csv.js';
import type { SyncPair } from '../home/settings.js';
import type { SyncApp } from './sync-app.js';

/** What only a shell can do (dialogs, the file manager). Headless leaves them out. */
export interface ShellActions {
  openFolder?(folder: string): Promise<void>;
  chooseFolder?(): Promise<string | null>;
  /** Asks where to save a download (a save dialog); null when the user cancelled. The engine fetches the bytes. */
  chooseSaveFile?(fileName: string): Promise<string | null>;
  /**
   * Where the UI should load a signed link of the server from, or null to load it directly. The
   * headless shell serves them through the engine when the browser may not trust the server's CA.
   */
  contentUrl?(uri: string): string | null;
}

export class BridgeService implements BridgeApi {
  constructor(
    private readonly app: SyncApp,
    private readonly shell: ShellActions = {},
  ) {}

  getStatus(): Promise<AppStatus> {
    return this.app.status();
  }

  async setupEmbedded(): Promise<AppStatus> {
    await this.app.setupEmbedded();
    return this.app.status();
  }

  testConnection(input: RemoteSetupInput): Promise<ConnectionTestResult> {
    return this.app.testConnection(input);
  }

  async setupRemote(input: RemoteSetupInput): Promise<AppStatus> {
    await this.app.setupRemote(input);
    return this.app.status();
  }

  async listPairs(): Promise<PairView[]> {
    return this.app.engine.pairViews();
  }

  async addPair(input: AddPairInput): Promise<PairView> {
    const pair = await this.app.addPair(input);
    return this.pairView(pair.id);
  }

  async removePair(pairId: string): Promise<void> {
    const pair = this.app.requirePair(pairId);
    await this.app.removePair(pairId);
    // The journal keeps the folder's rows; this keeps what they belonged to, for the history.
    const removed = this.app.settings.get('removedPairs').filter((entry) => entry.id !== pairId);
    this.app.settings.set('removedPairs', [...removed, { ...pair, removedAt: Date.now() }]);
  }

  async pausePair(pairId: string): Promise<PairView> {
    this.app.setPaused(pairId, true);
    return this.pairView(pairId);
  }

  async resumePair(pairId: string): Promise<PairView> {
    this.app.setPaused(pairId, false);
    return this.pairView(pairId);
  }

  /** Failed files are queued again and waiting ones tried now; returns how many files that was. */
  async retryFailed(target: { pairId?: string; fileId?: number }): Promise<number> {
    const { failed, waiting } = this.app.engine.retryNow(
      target.fileId !== undefined ? { fileId: target.fileId } : target.pairId !== undefined ? { pairId: target.pairId } : undefined,
    );
    return failed + waiting;
  }

  async listFiles(input: { pairId: string; states?: FileView['state'][]; offset?: number; limit?: number }): Promise<{ files: FileView[]; total: number }> {
    this.app.requirePair(input.pairId);
    const all = this.app.engine.fileViews(input.pairId, input.states);
    const offset = input.offset ?? 0;
    return { files: all.slice(offset, offset + (input.limit ?? 200)), total: all.length };
  }

  async fileHistory(fileId: number): Promise<HistoryEntryView[]> {
    if (!this.app.journal.get(fileId)) throw new BridgeError('NOT_FOUND', `no file with id ${fileId}`);
    return this.app.journal.history(fileId).map((entry) => ({ fileId, ...entry }));
  }

  async historyFiles(limit: number): Promise<HistoryFileView[]> {
    const labels = pairLabels(this.app.journal.pairIds(), this.labelledPairs(), this.app.settings.get('removedPairs'));
    const files: HistoryFileView[] = [];
    for (const [pairId, label] of labels) {
      for (const file of this.app.engine.fileViews(pairId)) files.push({ ...file, folder: label.folder, patientName: label.patient, pairRemoved: label.removed });
    }
    return files.sort((a, b) => (b.syncedAt ?? b.updatedAt) - (a.syncedAt ?? a.updatedAt)).slice(0, limit);
  }

  async openFolder(pairId: string): Promise<string> {
    const pair = this.app.requirePair(pairId);
    await this.shell.openFolder?.(pair.folder);
    return pair.folder;
  }

  async chooseFolder(): Promise<string | null> {
    return this.shell.chooseFolder ? this.shell.chooseFolder() : null;
  }

  listPatients(query: { name?: string; identifier?: string; birthDate?: string; offset?: number; limit?: number }): Promise<PatientListResponse> {
    return this.app.apiClient().listPatients(query);
  }

  async searchDocuments(patientId: string, body: SearchBody): Promise<SearchResponse> {
    const answer = await this.app.apiClient().search(patientId, body);
    const local = this.shell.contentUrl?.bind(this.shell);
    if (!local) return answer;
    const through = (uri: string | null | undefined) => (uri ? (local(uri) ?? uri) : uri);
    return {
      ...answer,
      documents: answer.documents.map((document) => ({ ...document, storageDownloadUri: through(document.storageDownloadUri) ?? null, thumbnailDownloadUri: through(document.thumbnailDownloadUri) ?? null })),
    };
  }

  async documentVersions(patientId: string, documentId: string): Promise<DocumentVersionDto[]> {
    const versions = await this.app.apiClient().versions(patientId, documentId);
    const local = this.shell.contentUrl?.bind(this.shell);
    return versions.map((version) => {
      const link = version.storageDownloadUri;
      // A server older than contentLostAt does not say it (its lost versions' links then answer 404 saying so).
      return { ...version, storageDownloadUri: link && local ? (local(link) ?? link) : (link ?? null), contentLostAt: version.contentLostAt ?? null };
    });
  }

  async saveDocumentVersion(patientId: string, documentId: string, version: number): Promise<string | null> {
    if (!this.shell.chooseSaveFile) return null;
    const api = this.app.apiClient();
    const found = (await api.versions(patientId, documentId)).find((candidate) => candidate.version === version);
    if (!found) throw new BridgeError('NOT_FOUND', `document ${documentId} has no version ${version}`, `The server has no version ${version} of this file.`);
    if (found.contentLostAt || !found.storageDownloadUri) throw new BridgeError('NOT_FOUND', `version ${version} of document ${documentId} is marked lost on the server (${found.contentLostAt ?? 'no link'})`, 'Its stored file is lost on the server; IT can restore it from a backup.');
    const document = await api.getDocument(patientId, documentId);
    const destination = await this.shell.chooseSaveFile(versionFileName(document.fileName, version, found.current));
    if (destination === null) return null;
    await api.download(found.storageDownloadUri, destination);
    return destination;
  }

  async saveDocument(patientId: string, documentId: string): Promise<string | null> {
    if (!this.shell.chooseSaveFile) return null;
    const api = this.app.apiClient();
    const document = await api.getDocument(patientId, documentId);
    if (!document.storageDownloadUri) throw new BridgeError('NOT_FOUND', 'the document has no content yet');
    const destination = await this.shell.chooseSaveFile(document.fileName);
    if (destination === null) return null;
    // Through the engine's client: it trusts the clinic's CA kept in the sync home, as uploads do.
    await api.download(document.storageDownloadUri, destination);
    return destination;
  }

  async webhookActivity(limit: number): Promise<WebhookActivityView[]> {
    return this.app.journal.webhookActivity(limit);
  }

  async exportHistoryCsv(): Promise<string> {
    return historyCsv(this.app.journal, this.labelledPairs(), this.app.settings.get('removedPairs'), this.caseAssignmentRows());
  }

  /** The settings' pairs and the inbox cases synced as pairs (labelled by the case's own folder). */
  private labelledPairs(): SyncPair[] {
    return [...this.app.settings.get('pairs'), ...this.app.inbox.derivedPairs().map((pair) => ({ ...pair, folder: pair.only ? path.join(pair.folder, pair.only) : pair.folder }))];
  }

  private caseAssignmentRows(): AssignmentCsvRow[] {
    return this.app.inbox.assignmentViews(100_000).map((assignment) => ({
      at: assignment.at,
      folder: path.join(assignment.inboxFolder, assignment.caseName),
      patient: assignment.patientName ?? assignment.patientId,
      caseName: assignment.caseName,
      how: assignment.how,
      by: assignment.by,
      evidence: assignment.evidence,
      previousPatientId: assignment.previousPatientId,
    }));
  }

  async listCases(): Promise<InboxCaseView[]> {
    return this.app.inbox.cases().sort((a, b) => b.changedAt - a.changedAt);
  }

  assignCase(input: { inboxId: string; caseName: string; patientId: string }): Promise<InboxCaseView> {
    return this.app.inbox.assign(input.inboxId, input.caseName, input.patientId);
  }

  async caseAssignments(limit: number): Promise<CaseAssignmentView[]> {
    return this.app.inbox.assignmentViews(limit);
  }

  getSettings(): Promise<SettingsView> {
    return this.app.settingsView();
  }

  updateSettings(patch: SettingsPatch): Promise<SettingsView> {
    return this.app.updateSettings(patch);
  }

  private pairView(pairId: string): PairView {
    const view = this.app.engine.pairView(pairId);
    if (!view) throw new BridgeError('NOT_FOUND', `no sync folder with id ${pairId}`);
    return view;
  }
}

/** Validates and routes one call; never throws. */
export class BridgeDispatcher {
  private readonly validator = createBridgeCallValidator();

  constructor(private readonly api: BridgeApi) {}

  async call(method: string, args: unknown): Promise<BridgeEnvelope<unknown>> {
    const checked = this.validator.check(method, args);
    if (!checked.ok) return checked.envelope;
    try {
      const target = this.api[checked.method] as (...params: unknown[]) => Promise<unknown>;
      const value = await target.apply(this.api, checked.args);
      return { ok: true, value: value ?? null };
    } catch (error) {
      const coded = toCodedError(error);
      return { ok: false, error: coded.detail ? { code: coded.code, message: coded.message, detail: coded.detail } : { code: coded.code, message: coded.message } };
    }
  }
}
