/**
 * The scanner inboxes inside SyncApp: adding and removing them in the settings, the cases and
 * their assignments (InboxManager), a case's patient confirmed by staff or IT. SyncApp hands in what
 * it owns (settings, engine, journal, the server connection) and starts and stops this with itself.
 */
import { existsSync, statSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import path from 'node:path';
import type { CaseAssignmentView } from '../../../shared/bridge.js';
import { checkPath } from '../../../shared/names.js';
import type { ApiClient } from '../api/api-client.js';
import type { SettingsStore, SyncInbox, SyncPair } from '../home/settings.js';
import type { Journal } from '../journal/journal.js';
import { overlappingPair, realFolder } from '../watch/pair-folders.js';
import { CaseStore } from './case-store.js';
import { checkRule } from './folder-rules.js';
import { candidatesFor } from './patient-directory.js';
import { InboxError, InboxManager, type CaseView, type InboxEngine } from './inbox-manager.js';

export interface InboxAppOptions {
  settings: SettingsStore;
  journal: Journal;
  engine: InboxEngine;
  api: () => ApiClient | null;
  settleMs: () => number;
  ignorePatterns: () => readonly string[];
  forbiddenFolder: (folder: string) => string | undefined;
  onChanged?: () => void;
  onError?: (error: unknown) => void;
  pollMs?: number;
}

export interface AddInboxInput {
  folder: string;
  remoteBasePath?: string;
  rules?: string[];
}

export class InboxApp {
  readonly manager: InboxManager;
  readonly store: CaseStore;
  /** The last thing that went wrong looking at the inboxes (a folder that cannot be read), for the CLI and the status. */
  lastProblem: string | null = null;

  constructor(private readonly options: InboxAppOptions) {
    this.store = new CaseStore(options.journal.database);
    this.manager = new InboxManager({
      store: this.store,
      journal: options.journal,
      engine: options.engine,
      finder: options.api,
      settleMs: options.settleMs(),
      ignorePatterns: options.ignorePatterns(),
      user: osAccount(),
      ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
      ...(options.onChanged ? { onChanged: options.onChanged } : {}),
      onError: (error) => {
        this.lastProblem = error instanceof Error ? error.message : String(error);
        options.onError?.(error);
      },
    });
    this.manager.load(this.inboxes());
  }

  inboxes(): SyncInbox[] {
    return this.options.settings.get('inboxes') ?? [];
  }

  /** The engine pairs of the assigned cases (started with the settings' pairs). */
  derivedPairs(): SyncPair[] {
    return this.manager.derivedPairs(this.inboxes());
  }

  isDerived(pairId: string): boolean {
    return this.manager.isDerived(pairId);
  }

  start(): void {
    this.manager.start(this.inboxes());
  }

  stop(): Promise<void> {
    return this.manager.stop();
  }

  /** The settings file changed (another process ran `add-inbox`, `config`). */
  async applySettings(inboxes: readonly SyncInbox[], ignorePatterns: readonly string[]): Promise<void> {
    this.manager.setIgnorePatterns(ignorePatterns);
    await this.manager.setInboxes(inboxes);
  }

  async addInbox(input: AddInboxInput, pairs: readonly SyncPair[]): Promise<SyncInbox> {
    const folder = path.resolve(input.folder);
    if (!existsSync(folder) || !statSync(folder).isDirectory()) throw new InboxError('INVALID_INPUT', `'${folder}' is not a folder: choose the folder the scanner exports to.`);
    if (path.parse(folder).root === folder) throw new InboxError('INVALID_INPUT', `'${folder}' is a whole drive: choose the folder the scanner exports to.`);
    const forbidden = this.options.forbiddenFolder(folder);
    if (forbidden) throw new InboxError('INVALID_INPUT', forbidden);
    const base = checkPath(input.remoteBasePath?.trim() || '/scans', 'path');
    if (!base.ok) throw new InboxError('INVALID_INPUT', `remote path: ${base.rule}`);
    for (const rule of input.rules ?? []) {
      const problem = checkRule(rule);
      if (problem) throw new InboxError('INVALID_INPUT', problem);
    }
    const inboxes = this.inboxes();
    // An inbox is a folder like a pair's: one place each, so a scan is never filed twice.
    const asPairs = inboxes.map((inbox) => ({ id: inbox.id, folder: inbox.folder, patientId: '', patientName: 'the scanner inbox', remoteBasePath: inbox.remoteBasePath, paused: false }));
    const overlap = overlappingPair([...pairs, ...asPairs], folder, path, realFolder);
    if (overlap) throw new InboxError('INVALID_INPUT', `'${folder}' overlaps '${overlap.pair.folder}', which is already synced: a folder can sync to one place only.`);
    const inbox: SyncInbox = { id: randomUUID(), folder, remoteBasePath: base.value, rules: input.rules ?? [], paused: false };
    this.options.settings.set('inboxes', [...inboxes, inbox]);
    // Watched at once by a running app (another process's `add-inbox` arrives with the settings file).
    await this.manager.setInboxes(this.inboxes());
    return inbox;
  }

  /** The inbox at this folder (as given on the command line), or the only one when none is named. */
  inboxAt(folder: string | undefined): SyncInbox {
    const inboxes = this.inboxes();
    if (folder === undefined) {
      if (inboxes.length === 1) return inboxes[0]!;
      throw new InboxError('INVALID_INPUT', inboxes.length === 0 ? 'There is no inbox: add one first.' : 'There is more than one inbox: name its folder.');
    }
    const wanted = path.resolve(folder);
    const inbox = inboxes.find((candidate) => candidate.folder === wanted || candidate.id === folder);
    if (!inbox) throw new InboxError('NOT_FOUND', `'${wanted}' is no inbox.`);
    return inbox;
  }

  cases(inboxId?: string): CaseView[] {
    return this.manager.cases(inboxId);
  }

  /** Assignments of every inbox, newest first, with the inbox's folder. */
  assignmentViews(limit: number): CaseAssignmentView[] {
    const folders = new Map(this.inboxes().map((inbox) => [inbox.id, inbox.folder]));
    return this.store.assignments(limit).map((assignment) => ({
      id: assignment.id,
      inboxFolder: folders.get(assignment.inboxId) ?? 'an inbox no longer synced',
      caseName: assignment.caseName,
      patientId: assignment.patientId,
      patientName: assignment.patientName,
      at: assignment.at,
      by: assignment.by,
      how: assignment.how,
      evidence: assignment.evidence,
      previousPatientId: assignment.previousPatientId,
    }));
  }

  /**
   * A person confirms a case's patient. The patient must be one the organization may see: asked of
   * the server when it answers (a typo in a UUID is refused, not filed); when it cannot be reached
   * the assignment is kept and the files say why they wait.
   */
  async assign(inboxId: string, caseName: string, patientId: string): Promise<CaseView> {
    const id = patientId.trim().toLowerCase();
    const api = this.options.api();
    let name: string | null = null;
    if (api) {
      let found;
      try {
        found = await candidatesFor([{ kind: 'identifier', system: 'patient-id', value: id, source: 'folder-name' }], api);
      } catch {
        found = undefined;
      }
      if (found && found.length === 0) throw new InboxError('NOT_FOUND', `No patient this organization may see has the id ${patientId}.`);
      name = found?.[0]?.name ?? null;
    }
    return this.manager.assign(inboxId, caseName, { id, name }, 'confirmed');
  }
}

/** The account assignments are recorded under ("who"), as the operating system names it. */
export function osAccount(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? process.env.USERNAME ?? 'unknown';
  }
}
