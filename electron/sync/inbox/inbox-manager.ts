/**
 * The scanner inboxes (issue 27, DESIGN §4): each top-level entry of an inbox folder is a case.
 * A case is looked at until it stops changing, identified (identify.ts) against the patients the
 * server lets the organization see, and — only once it has a patient — synced as a pair of its own
 * (`only`: that entry; base: the inbox's remote path), so its files go through the same stability
 * gate, journal, create → upload → verify and versions as any pair's. Nothing of a case is
 * uploaded before that. A case's assignment may change until an upload of it has begun.
 */
import { randomUUID } from 'node:crypto';
import { BridgeError } from '../app/bridge-error.js';
import { readdir } from 'node:fs/promises';
import type { FileRecord } from '../journal/file-record.js';
import type { SyncInbox, SyncPair } from '../home/settings.js';
import { createIgnoreMatcher } from '../watch/ignore.js';
import type { CaseRecord, CaseStore, PendingDecision } from './case-store.js';
import { describeEvidence } from './evidence.js';
import { identifyCase } from './identify.js';
import type { InboxCaseView } from '../../../shared/bridge.js';
import { candidatesFor, type PatientFinder } from './patient-directory.js';
import { readCase } from './read-case.js';

export type CaseView = InboxCaseView;
export type CaseState = InboxCaseView['state'];

/** What the manager needs of the engine: derived pairs come and go like any pair. */
export interface InboxEngine {
  addPair(pair: SyncPair): Promise<unknown>;
  removePair(pairId: string): Promise<void>;
  setPaused(pairId: string, paused: boolean): unknown;
  pairList(): SyncPair[];
  settlingCount(pairId: string): number;
}

export interface InboxManagerOptions {
  store: CaseStore;
  journal: { byPair(pairId: string): FileRecord[] };
  engine: InboxEngine;
  /** The server, when connected; identification waits while it is null or does not answer. */
  finder: () => PatientFinder | null;
  settleMs: number;
  ignorePatterns: readonly string[];
  /** The OS account assignments are recorded under. */
  user: string;
  now?: () => number;
  /** How often inbox folders are listed (new cases, cases still being written). */
  pollMs?: number;
  onChanged?: () => void;
  onError?: (error: unknown) => void;
}

/** Refused in plain words: a coded bridge error, shown as it is by the app and the CLI. */
export class InboxError extends BridgeError {
  constructor(code: 'NOT_FOUND' | 'INVALID_INPUT' | 'CONFLICT', message: string) {
    super(code, undefined, message);
  }
}

/** A case waiting for the server (not connected, or it did not answer) is identified again after this long. */
export const IDENTIFY_RETRY_MS = 5000;

/** A case that waits for a patient is identified again this often (a patient added on the server meanwhile). */
export const REIDENTIFY_MS = 60_000;

interface Watching {
  /** The case's files as last listed ("count/bytes/newest"), and since when unchanged. */
  shape: string;
  since: number;
  /** The shape identification last ran on; undefined: not yet (or to run again). */
  identifiedShape?: string;
  retryAt?: number;
}

export class InboxManager {
  private inboxes = new Map<string, SyncInbox>();
  private readonly watching = new Map<string, Watching>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private started = false;
  private readonly now: () => number;
  private ignorePatterns: readonly string[];

  constructor(private readonly options: InboxManagerOptions) {
    this.now = options.now ?? Date.now;
    this.ignorePatterns = options.ignorePatterns;
  }

  /** The pairs of the cases already assigned: given to the engine with the settings' pairs at start. */
  derivedPairs(inboxes: readonly SyncInbox[]): SyncPair[] {
    const byId = new Map(inboxes.map((inbox) => [inbox.id, inbox]));
    return this.options.store
      .assigned()
      .filter((record) => byId.has(record.inboxId))
      .map((record) => toPair(byId.get(record.inboxId)!, record));
  }

  isDerived(pairId: string): boolean {
    return this.options.store.assigned().some((record) => record.pairId === pairId);
  }

  loadedInboxes(): SyncInbox[] {
    return [...this.inboxes.values()];
  }

  /** The inboxes, without watching them (a one-shot command: `cases`, `assign`). */
  load(inboxes: readonly SyncInbox[]): void {
    this.inboxes = new Map(inboxes.map((inbox) => [inbox.id, inbox]));
  }

  start(inboxes: readonly SyncInbox[]): void {
    this.load(inboxes);
    this.started = true;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.started = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.ticking;
  }

  /** The settings' inboxes changed (added by `add-inbox`, paused, removed). */
  async setInboxes(inboxes: readonly SyncInbox[]): Promise<void> {
    const next = new Map(inboxes.map((inbox) => [inbox.id, inbox]));
    for (const [id, inbox] of this.inboxes) {
      const kept = next.get(id);
      if (kept && kept.folder === inbox.folder && kept.remoteBasePath === inbox.remoteBasePath && kept.paused === inbox.paused) continue;
      for (const record of this.options.store.assigned().filter((candidate) => candidate.inboxId === id)) await this.options.engine.removePair(record.pairId!);
    }
    const old = this.inboxes;
    this.inboxes = next;
    for (const [id, inbox] of next) {
      const before = old.get(id);
      if (before && before.folder === inbox.folder && before.remoteBasePath === inbox.remoteBasePath && before.paused === inbox.paused) continue;
      for (const record of this.options.store.assigned().filter((candidate) => candidate.inboxId === id)) await this.options.engine.addPair(toPair(inbox, record));
    }
    this.schedule(0);
  }

  setIgnorePatterns(patterns: readonly string[]): void {
    this.ignorePatterns = patterns;
  }

  /** Lists every inbox now (instead of at the next poll); resolves once that look is done. */
  async refresh(): Promise<void> {
    await this.ticking;
    await this.tick();
  }

  cases(inboxId?: string): CaseView[] {
    const ids = inboxId === undefined ? [...this.inboxes.keys()] : [inboxId];
    return ids.flatMap((id) => this.options.store.list(id).map((record) => this.view(record)));
  }

  caseView(inboxId: string, name: string): CaseView | undefined {
    const record = this.options.store.get(inboxId, name);
    return record && this.view(record);
  }

  /**
   * Staff (or IT through the CLI) confirm a case's patient. Allowed until an upload of the case has
   * begun; after that refused, with the reason (its files stay filed where they are).
   */
  async assign(inboxId: string, name: string, patient: { id: string; name: string | null }, how: 'automatic' | 'confirmed' = 'confirmed', by = this.options.user): Promise<CaseView> {
    const inbox = this.inboxes.get(inboxId);
    if (!inbox) throw new InboxError('NOT_FOUND', `There is no inbox ${inboxId}.`);
    let record = this.options.store.get(inboxId, name);
    if (!record || record.gone) {
      await this.refresh();
      record = this.options.store.get(inboxId, name);
    }
    if (!record || record.gone) throw new InboxError('NOT_FOUND', `There is no case '${name}' in ${inbox.folder}.`);
    const patientId = patient.id.toLowerCase();
    if (record.patientId === patientId) return this.view(record);
    if (record.pairId !== null) {
      // Held while deciding: a file of the case must not start uploading to the patient being replaced.
      this.options.engine.setPaused(record.pairId, true);
      const begun = this.uploadBegun(record.pairId);
      if (begun) {
        this.options.engine.setPaused(record.pairId, inbox.paused);
        throw new InboxError(
          'CONFLICT',
          `'${name}' cannot go to another patient: ${begun} of its files ${begun === 1 ? 'was' : 'were'} already sent to ${record.patientName ?? record.patientId}. ` +
            'Files already filed stay where they are; IT can move them on the server.',
        );
      }
      await this.options.engine.removePair(record.pairId);
    }
    const evidence = record.evidence.filter((item) => item.kind !== 'order').map(describeEvidence);
    const assigned = this.options.store.assign({ inboxId, name, pairId: record.pairId ?? randomUUID(), patientId, patientName: patient.name, by, how, evidence });
    if (this.started) await this.options.engine.addPair(toPair(inbox, assigned));
    this.options.onChanged?.();
    return this.view(assigned);
  }

  /** How many files of the case have begun an upload (a document made, bytes sent, a try made). */
  private uploadBegun(pairId: string): number {
    return this.options.journal.byPair(pairId).filter((file) => file.documentId !== null || file.bytesDone > 0 || file.attempts > 0 || (file.state !== 'queued' && file.state !== 'failed')).length;
  }

  private schedule(delay: number): void {
    if (!this.started) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.ticking = this.tick()
        .catch((error: unknown) => this.options.onError?.(error))
        .finally(() => {
          this.ticking = undefined;
          this.schedule(this.pollMs());
        });
    }, delay);
  }

  private pollMs(): number {
    return this.options.pollMs ?? Math.min(1000, Math.max(100, Math.floor(this.options.settleMs / 2)));
  }

  private async tick(): Promise<void> {
    for (const inbox of this.inboxes.values()) await this.look(inbox);
    this.looks += 1;
  }

  private looks = 0;

  /**
   * Every inbox was listed, and every case in it that has no patient was identified as it is now
   * (none still being written): what `run --once` waits for besides the engine.
   */
  isSettled(): boolean {
    if (this.looks === 0 && this.inboxes.size > 0) return false;
    for (const inbox of this.inboxes.values()) {
      for (const record of this.options.store.list(inbox.id)) {
        if (record.pairId) continue;
        const watching = this.watching.get(key(inbox.id, record.name));
        if (!watching || watching.identifiedShape !== watching.shape) return false;
      }
    }
    return true;
  }

  /** One look at an inbox: new and changed cases, cases gone, assignments another process made. */
  private async look(inbox: SyncInbox): Promise<void> {
    const isIgnored = createIgnoreMatcher(this.ignorePatterns);
    let names: string[];
    try {
      names = (await readdir(inbox.folder, { withFileTypes: true })).filter((entry) => (entry.isDirectory() || entry.isFile()) && !isIgnored(entry.name)).map((entry) => entry.name);
    } catch {
      return; // A missing folder is looked for again at the next poll.
    }
    const present = new Set(names);
    for (const record of this.options.store.list(inbox.id)) {
      if (!present.has(record.name)) {
        this.options.store.markGone(inbox.id, record.name);
        this.watching.delete(key(inbox.id, record.name));
        this.options.onChanged?.();
      }
    }
    await this.adoptAssignments(inbox);
    for (const name of names) {
      const record = this.options.store.get(inbox.id, name);
      if (record?.pairId && !record.gone) continue;
      await this.lookAtCase(inbox, name, isIgnored);
    }
  }

  /** Assignments recorded by another process on this computer (`patient-docs-sync assign` beside a running app). */
  private async adoptAssignments(inbox: SyncInbox): Promise<void> {
    const running = new Map(this.options.engine.pairList().map((pair) => [pair.id, pair]));
    for (const record of this.options.store.assigned().filter((candidate) => candidate.inboxId === inbox.id)) {
      const pair = running.get(record.pairId!);
      if (pair && pair.patientId === record.patientId) continue;
      if (pair) await this.options.engine.removePair(pair.id);
      await this.options.engine.addPair(toPair(inbox, record));
      this.options.onChanged?.();
    }
  }

  private async lookAtCase(inbox: SyncInbox, name: string, isIgnored: (relativePath: string) => boolean): Promise<void> {
    const scan = await readCase(inbox.folder, name, inbox.rules, isIgnored);
    if (!scan) return;
    const id = key(inbox.id, name);
    const shape = `${scan.fileCount}/${scan.bytes}/${scan.changedAt}`;
    const now = this.now();
    let watching = this.watching.get(id);
    const before = this.options.store.get(inbox.id, name);
    if (!watching || watching.shape !== shape) {
      // First seen: unchanged since its newest file was written. Changed under the watch: since now.
      watching = { shape, since: watching ? now : Math.min(now, scan.changedAt) };
      this.watching.set(id, watching);
    }
    if (!before || before.gone || before.fileCount !== scan.fileCount || before.bytes !== scan.bytes || before.changedAt !== Math.round(scan.changedAt) || JSON.stringify(before.evidence) !== JSON.stringify(scan.evidence)) {
      this.options.store.saw(inbox.id, name, scan);
      this.options.onChanged?.();
    }
    // Identified once it stopped changing: a scanner writes its order file last as often as first.
    if (now - watching.since < this.options.settleMs || scan.fileCount === 0) {
      if (!before?.decision) this.options.store.decided(inbox.id, name, { kind: 'needs-patient', reason: 'The scanner is still writing this case.', suggestions: [] });
      return;
    }
    if (watching.identifiedShape === shape && (watching.retryAt === undefined || now < watching.retryAt)) return;
    await this.identify(inbox, name, scan.evidence, watching, shape);
  }

  private async identify(inbox: SyncInbox, name: string, evidence: CaseRecord['evidence'], watching: Watching, shape: string): Promise<void> {
    watching.identifiedShape = shape;
    const finder = this.options.finder();
    if (!finder) {
      watching.retryAt = this.now() + IDENTIFY_RETRY_MS;
      this.decide(inbox, name, { kind: 'needs-patient', reason: 'Not connected to the server: the case is identified once it is.', suggestions: [] });
      return;
    }
    let decision;
    try {
      decision = identifyCase(evidence, await candidatesFor(evidence, finder));
    } catch (error) {
      watching.retryAt = this.now() + IDENTIFY_RETRY_MS;
      this.decide(inbox, name, { kind: 'needs-patient', reason: `The server could not be asked who this case is (${(error as Error).message}); asked again in a moment.`, suggestions: [] });
      return;
    }
    // A patient may be added or given a chart number on the server meanwhile: asked again now and then.
    watching.retryAt = this.now() + REIDENTIFY_MS;
    if (decision.kind !== 'auto') return this.decide(inbox, name, decision);
    const patient = (await candidatesFor(evidence, finder)).find((candidate) => candidate.id === decision.patientId);
    await this.assign(inbox.id, name, { id: decision.patientId, name: patient?.name ?? null }, 'automatic');
  }

  private decide(inbox: SyncInbox, name: string, decision: PendingDecision): void {
    const before = this.options.store.get(inbox.id, name);
    if (before?.pairId) return;
    if (JSON.stringify(before?.decision) === JSON.stringify(decision)) return;
    this.options.store.decided(inbox.id, name, decision);
    this.options.onChanged?.();
  }

  private view(record: CaseRecord): CaseView {
    const files = record.pairId ? this.options.journal.byPair(record.pairId).filter((file) => !file.deletedLocally) : [];
    const filesSynced = files.filter((file) => file.state === 'synced').length;
    const settling = record.pairId ? this.options.engine.settlingCount(record.pairId) : 0;
    const state: CaseState = record.pairId
      ? files.length > 0 && filesSynced === files.length && settling === 0 && files.length >= record.fileCount
        ? 'synced'
        : 'assigned'
      : record.decision?.kind === 'conflict'
        ? 'conflict'
        : 'needs-patient';
    return {
      inboxId: record.inboxId,
      name: record.name,
      state,
      reason: record.pairId ? null : (record.decision?.reason ?? 'Not looked at yet.'),
      fileCount: record.fileCount,
      bytes: record.bytes,
      scanner: record.scanner,
      firstSeenAt: record.firstSeenAt,
      changedAt: record.changedAt,
      evidence: record.evidence.map(describeEvidence),
      suggestions: record.pairId ? [] : (record.decision?.suggestions ?? []),
      patientId: record.patientId,
      patientName: record.patientName,
      assignedAt: record.assignedAt,
      assignedBy: record.assignedBy,
      assignedHow: record.assignedHow,
      filesSynced,
      filesKnown: files.length,
    };
  }
}

function key(inboxId: string, name: string): string {
  return `${inboxId}\u0000${name}`;
}

/** The pair a case is synced as: the inbox folder restricted to the case, to the inbox's base path. */
export function toPair(inbox: SyncInbox, record: CaseRecord): SyncPair {
  return {
    id: record.pairId!,
    folder: inbox.folder,
    only: record.name,
    patientId: record.patientId!,
    ...(record.patientName ? { patientName: record.patientName } : {}),
    remoteBasePath: inbox.remoteBasePath,
    paused: inbox.paused,
  };
}
