/**
 * The engine with its state around it — settings, secrets, journal, server connection, webhooks —
 * as one object the desktop, the headless twin and the CLI all drive. It is handed what differs
 * between them (the embedded server, the shell) by their composition roots.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, rmSync, statSync, unwatchFile, watchFile, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AddPairInput, AppMode, AppStatus, BridgeEvent, ConnectionTestResult, RemoteSetupInput, SettingsPatch, SettingsView } from '../../../shared/bridge.js';
import { checkPath } from '../../../shared/names.js';
import { RECHECK_MINUTES, recheckMinutesProblem } from '../../../shared/recheck-interval.js';
import type { ApiClient } from '../api/api-client.js';
import { BandwidthLimiter } from '../upload/bandwidth.js';
import { ApiProblemError } from '../api/api-errors.js';
import { BridgeError, toCodedError } from './bridge-error.js';
import { OrganizationName } from './organization-name.js';
import { caFor, CLIENT_SECRET_ACCOUNT, connectionFrom, createApiClient, insecureAddress, testConnection, type ConnectionSettings } from '../api/connection.js';
import { SyncEngine, type EngineOptions } from '../engine/engine.js';
import type { EngineEvent } from '../engine/publisher.js';
import { lockSyncHome, type HomeLock } from '../home/home-lock.js';
import { PRIVATE_FILE_MODE } from '../home/home-modes.js';
import { appMode, EMBEDDED_DATA_FOLDER, EMBEDDED_MARKER, openHomeJournal } from '../home/home-state.js';
import type { Journal } from '../journal/journal.js';
import { describeOverlap, forbiddenFolder, overlappingPair, realFolder, type ProtectedFolders } from '../watch/pair-folders.js';
import type { SecretStore } from '../home/secrets.js';
import type { SettingsStore, SyncPair, SyncSettings, WebhookSettings } from '../home/settings.js';
import { describeLiveChanges, describePairChanges, KeptSettings, liveSettingsFrom, pairChanges, SettingsFileProblem, type LiveSettings } from '../home/settings-live.js';
import { CaCertificateError, parseCaCertificate, readTrustedCa, saveTrustedCa, SERVER_CA_FILE, type TrustedCa } from '../api/tls-trust.js';
import { WebhookWiring } from '../webhooks/subscription.js';
import { InboxApp } from '../inbox/inbox-app.js';

/** What the embedded server hands back once it runs (the demo organization, patient and client). */
export interface EmbeddedServerInfo {
  url: string;
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  organizationId: string;
  organizationName: string;
  demoPatient: { id: string; name: string };
}

/** The bundled server, started in-process by the composition root (the engine never imports server/). */
export interface EmbeddedServerHost {
  /** `preferredUrl`: where it ran last time, so saved links and resumable uploads stay valid. */
  start(preferredUrl?: string): Promise<EmbeddedServerInfo>;
  stop(): Promise<void>;
}

export interface SyncAppOptions {
  home: string;
  settings: SettingsStore;
  secrets: SecretStore;
  shell: 'desktop' | 'headless';
  version: string;
  embedded?: EmbeddedServerHost;
  /** Engine knobs tests and benchmarks turn (backoff, polling); the rest comes from settings. */
  engine?: Partial<Omit<EngineOptions, 'journal' | 'tuning' | 'api'>>;
  resumableThreshold?: number;
  /** Off for one-shot commands (`status`), which must not bind the listener's port. */
  webhooks?: boolean;
  /** What opening the sync home had to repair (sync-home.ts), shown until the app stops. */
  notices?: readonly string[];
  /** How often the kept CA certificate file is looked at for a change made by another process. */
  caCheckMs?: number;
  /** How often the settings file is looked at for a change made by another process (`patient-docs-sync config`, `add-pair`). */
  settingsCheckMs?: number;
  /** How often scanner inbox folders are listed (default: half the settle time, at most a second). */
  inboxPollMs?: number;
}

export const CA_CHECK_MS = 2000;
export const SETTINGS_CHECK_MS = 1000;

/** The settings file changed under a running app: what was applied, or why it could not be. */
export type SettingsFileEvent = { kind: 'applied'; message: string } | { kind: 'problem'; message: string };

const MINUTE_MS = 60_000;

export class SyncApp {
  readonly journal: Journal;
  readonly engine: SyncEngine;
  readonly limiter: BandwidthLimiter;
  private readonly webhooks: WebhookWiring;
  /** The scanner inboxes: their cases are synced as pairs of their own once they have a patient. */
  readonly inbox: InboxApp;
  private readonly listeners = new Set<(event: BridgeEvent) => void>();
  private api: ApiClient | null = null;
  private clientSecretMissing = false;
  private embeddedInfo: EmbeddedServerInfo | null = null;
  private readonly organizationName = new OrganizationName();
  private started = false;
  private stopForwarding: (() => void) | undefined;
  /** Repairs made at start (a damaged journal or settings file), in plain words: told once, this run. */
  readonly notices: string[];
  /** The settings `config` can change, as this process applied them last (see watchSettings). */
  private live: LiveSettings;
  /** Why the settings file as it is now cannot be used (a running app keeps what it had), else null. */
  private settingsProblem: string | null = null;
  private readonly settingsListeners = new Set<(event: SettingsFileEvent) => void>();
  private settingsReload: Promise<void> = Promise.resolve();
  /** The settings file, read so that a file broken under the running app fails nothing (see KeptSettings). */
  private readonly kept: KeptSettings;

  constructor(private readonly options: SyncAppOptions) {
    ({ journal: this.journal, notices: this.notices } = openHomeJournal(options.home, options.notices));
    this.kept = new KeptSettings(options.settings);
    this.live = liveSettingsFrom(this.kept.store);
    this.limiter = new BandwidthLimiter(this.live.bandwidthLimit);
    // An interval given by the caller (the CLI's PATIENT_DOCS_SYNC_RECHECK_MS, tests) wins over Settings.
    this.engine = new SyncEngine({
      journal: this.journal,
      tuning: this.tuning(),
      recheckMs: this.live.recheckMinutes * MINUTE_MS,
      folderRefusal: (folder) => forbiddenFolder(folder, this.protectedFolders()),
      ...options.engine,
    });
    this.inbox = new InboxApp({
      settings: this.kept,
      journal: this.journal,
      engine: this.engine,
      api: () => this.api,
      settleMs: () => this.live.settleMs,
      ignorePatterns: () => this.live.ignorePatterns,
      forbiddenFolder: (folder) => forbiddenFolder(folder, this.protectedFolders()),
      ...(options.inboxPollMs !== undefined ? { pollMs: options.inboxPollMs } : {}),
      onChanged: () => this.emit({ type: 'cases' }),
    });
    this.webhooks = new WebhookWiring({
      journal: this.journal,
      secrets: options.secrets,
      onDocumentsChanged: (patientId) => this.emit({ type: 'documents-changed', patientId }),
      onContentLost: () => this.engine.recheckSoon(),
      onActivity: () => {
        const [latest] = this.journal.webhookActivity(1);
        if (latest) this.emit({ type: 'webhook', activity: latest });
      },
    });
  }

  get settings(): SettingsStore {
    return this.kept;
  }

  get secrets(): SecretStore {
    return this.options.secrets;
  }

  /** Subscribes to what the UI shows; the engine builds its snapshots only while someone listens. */
  onEvent(listener: (event: BridgeEvent) => void): () => void {
    this.listeners.add(listener);
    this.stopForwarding ??= this.engine.onEvent((event) => this.forward(event));
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size > 0) return;
      this.stopForwarding?.();
      this.stopForwarding = undefined;
    };
  }

  private forward(event: EngineEvent): void {
    switch (event.type) {
      case 'pairs-changed':
        return this.emit({ type: 'pairs', pairs: event.pairs });
      case 'files-changed':
        return this.emit({ type: 'files', pairId: event.pairId, files: event.files });
      case 'online-changed':
      case 'disk-full-changed':
        return this.emitStatus();
      case 'file-synced':
      case 'file-failed':
      case 'engine-error':
        return;
    }
  }

  /** Connects (starting the embedded server when that is the mode), starts watching and syncing. */
  async start(): Promise<void> {
    this.homeLock ??= lockSyncHome(this.options.home);
    this.started = true;
    if (this.mode() === 'embedded' && this.options.embedded) {
      const info = await this.startEmbedded();
      // The port may have been taken by something else since the last launch.
      if (info.url !== this.settings.get('serverUrl')) {
        this.settings.set('serverUrl', info.url);
        this.settings.set('tokenUrl', info.tokenUrl);
        writeMarker(this.options.home, info.url);
      }
      // The bundled server's secret may have been made again (its old one was in a keychain that
      // is not usable now): the connection uses whatever the server was seeded with.
      if (info.clientId === this.settings.get('clientId') && (await this.secrets.get(CLIENT_SECRET_ACCOUNT)) !== info.clientSecret) {
        await this.secrets.set(CLIENT_SECRET_ACCOUNT, info.clientSecret);
      }
    }
    await this.connect();
    await this.engine.start([...this.settings.get('pairs'), ...this.inbox.derivedPairs()]);
    this.inbox.start();
    await this.startWebhooks();
    this.watchTrustedCa();
    this.watchSettings();
  }

  async stop(): Promise<void> {
    this.started = false;
    unwatchFile(this.caFile(), this.onCaFileChanged);
    unwatchFile(this.settings.path, this.onSettingsFileChanged);
    await this.settingsReload;
    await this.inbox.stop();
    await this.engine.stop();
    await this.webhooks.stop();
    if (this.embeddedInfo) await this.options.embedded?.stop();
    this.embeddedInfo = null;
    this.journal.close();
    this.homeLock?.release();
    this.homeLock = undefined;
  }

  private homeLock: HomeLock | undefined;

  mode(): AppMode {
    return appMode(this.options.home, this.settings);
  }

  apiClient(): ApiClient {
    if (!this.api) throw new BridgeError('NOT_CONFIGURED');
    return this.api;
  }

  async status(): Promise<AppStatus> {
    const connection = this.connection();
    const webhook = this.webhooks.current();
    return {
      mode: this.mode(),
      shell: this.options.shell,
      server: connection
        ? {
            url: connection.serverUrl,
            tokenUrl: connection.tokenUrl,
            clientId: connection.clientId,
            organizationId: connection.organizationId,
            organizationName:
              this.embeddedInfo?.organizationId === connection.organizationId
                ? this.embeddedInfo.organizationName
                : this.organizationName.nameFor(this.api, connection.organizationId, () => this.emitStatus()),
            trustedCertificates: (readTrustedCa(this.options.home)?.certificates ?? []).map(({ subject, fingerprint, validTo }) => ({ subject, fingerprint, validTo })),
          }
        : null,
      // Without a client secret nothing can reach the server, whatever the last request did.
      online: this.engine.isOnline && this.api !== null,
      secrets: { backend: this.secrets.backend, warning: this.secrets.warning ?? null, clientSecretMissing: this.clientSecretMissing },
      webhook: { ...webhook, publicUrl: this.settings.get('webhook').publicUrl ?? null },
      version: this.options.version,
      demoPatientId: this.mode() === 'embedded' ? (this.embeddedInfo?.demoPatient.id ?? null) : null,
      notices: [...(this.engine.diskFullMessage ? [this.engine.diskFullMessage] : []), ...(this.settingsProblem ? [this.settingsProblem] : []), ...this.notices],
    };
  }

  /** "This computer runs the server": the bundled server with a demo organization, patient and client. */
  async setupEmbedded(): Promise<EmbeddedServerInfo> {
    if (!this.options.embedded) throw new BridgeError('UNAVAILABLE', 'this build has no bundled server');
    const info = await this.startEmbedded();
    await this.saveConnection({ serverUrl: info.url, tokenUrl: info.tokenUrl, clientId: info.clientId, organizationId: info.organizationId }, info.clientSecret);
    writeMarker(this.options.home, info.url);
    await this.reconnect();
    return info;
  }

  /** The server's certificate may need more than the system's CAs: a clinic CA kept here, or NODE_EXTRA_CA_CERTS. */
  trustsPrivateCa(): boolean {
    return this.privateCa;
  }

  /** Set at each (re)connect, so a page of documents does not read the CA file once per link. */
  private privateCa = false;

  /** The connection test, trusting the CA kept in the sync home unless the input gives another. */
  testConnection(input: RemoteSetupInput): Promise<ConnectionTestResult> {
    return testConnection(input, readTrustedCa(this.options.home));
  }

  async setupRemote(input: RemoteSetupInput): Promise<void> {
    const stored = readTrustedCa(this.options.home);
    const result = await testConnection(input, stored);
    if (!result.ok) throw new BridgeError(result.error?.code ?? 'UNREACHABLE', result.error?.detail);
    // Kept in the sync home next to the settings, so the engine, the CLI and the app all trust it.
    saveTrustedCa(this.options.home, caFor(input, stored));
    await this.saveConnection(connectionFrom(input), input.clientSecret);
    rmSync(path.join(this.options.home, EMBEDDED_MARKER), { force: true });
    if (this.embeddedInfo) await this.options.embedded?.stop();
    this.embeddedInfo = null;
    await this.reconnect();
  }

  async addPair(input: AddPairInput): Promise<SyncPair> {
    const folder = path.resolve(input.folder);
    if (!existsSync(folder)) throw new BridgeError('FOLDER_MISSING', `'${folder}' does not exist`);
    if (!statSync(folder).isDirectory()) throw new BridgeError('FOLDER_MISSING', undefined, `'${folder}' is a file, not a folder: choose the folder the scanner exports to.`);
    if (path.parse(folder).root === folder) throw new BridgeError('INVALID_INPUT', undefined, `'${folder}' is a whole drive: choose the folder the scanner exports to.`);
    const forbidden = forbiddenFolder(folder, this.protectedFolders());
    if (forbidden) throw new BridgeError('INVALID_INPUT', undefined, forbidden);
    const base = checkPath(input.remoteBasePath?.trim() || '/', 'path');
    if (!base.ok) throw new BridgeError('INVALID_NAME', `remote path: ${base.rule}`);
    const pairs = this.settings.get('pairs');
    const overlap = overlappingPair(pairs, folder, path, realFolder);
    if (overlap) throw new BridgeError('CONFLICT', undefined, describeOverlap(folder, overlap));
    const inbox = overlappingPair(this.inbox.inboxes().map((candidate) => ({ ...candidate, patientId: '', patientName: 'the scanner inbox' })), folder, path, realFolder);
    if (inbox) throw new BridgeError('CONFLICT', undefined, describeOverlap(folder, inbox));
    await this.checkPatient(input.patientId);
    const pair: SyncPair = { id: randomUUID(), folder, patientId: input.patientId.toLowerCase(), remoteBasePath: base.value, paused: false };
    if (input.patientName) pair.patientName = input.patientName;
    this.settings.set('pairs', [...pairs, pair]);
    if (this.started) await this.engine.addPair(pair);
    return pair;
  }

  /**
   * One look at the scanner inboxes without watching them (`patient-docs-sync cases`, `assign`):
   * connected first, so that cases are identified against the server's patients.
   */
  async lookAtInboxes(): Promise<void> {
    if (!this.api) await this.connect();
    await this.inbox.manager.refresh();
  }

  /** What a scan folder may never be, hold or lie in (pair-folders.ts): this app's own state. */
  private protectedFolders(): ProtectedFolders {
    return { syncHome: this.options.home, serverData: path.join(this.options.home, EMBEDDED_DATA_FOLDER) };
  }

  /**
   * A pair for a patient the server does not know, or may not share with this clinic, would fail
   * every file: say so now. When the server cannot be reached the pair is kept (files wait).
   */
  private async checkPatient(patientId: string): Promise<void> {
    if (!this.api) await this.connect();
    if (!this.api) return;
    try {
      await this.api.search(patientId.toLowerCase(), { offset: 0, limit: 1 });
    } catch (error) {
      if (error instanceof ApiProblemError && [400, 403, 404].includes(error.status)) {
        const coded = toCodedError(error);
        throw new BridgeError(coded.code, coded.detail);
      }
    }
  }

  async removePair(pairId: string): Promise<void> {
    this.refuseInboxCase(pairId);
    this.requirePair(pairId);
    this.settings.set('pairs', this.settings.get('pairs').filter((pair) => pair.id !== pairId));
    await this.engine.removePair(pairId);
  }

  setPaused(pairId: string, paused: boolean): void {
    this.refuseInboxCase(pairId);
    this.requirePair(pairId);
    this.settings.set('pairs', this.settings.get('pairs').map((pair) => (pair.id === pairId ? { ...pair, paused } : pair)));
    this.engine.setPaused(pairId, paused);
  }

  /** A sync folder, or a scanner inbox's case synced as one (its folder: the case's own). */
  requirePair(pairId: string): SyncPair {
    const pair = this.settings.get('pairs').find((candidate) => candidate.id === pairId);
    if (pair) return pair;
    const inboxCase = this.inbox.isDerived(pairId) ? this.engine.pairList().find((candidate) => candidate.id === pairId) : undefined;
    if (inboxCase) return { ...inboxCase, folder: inboxCase.only ? path.join(inboxCase.folder, inboxCase.only) : inboxCase.folder };
    throw new BridgeError('NOT_FOUND', `no sync folder with id ${pairId}`);
  }

  /** A case of a scanner inbox is not stopped or paused on its own: its inbox is (it goes on with the inbox). */
  private refuseInboxCase(pairId: string): void {
    if (this.settings.get('pairs').some((pair) => pair.id === pairId) || !this.inbox.isDerived(pairId)) return;
    throw new BridgeError('INVALID_INPUT', undefined, 'This is a case of the scanner inbox: it syncs with its inbox, and its patient is chosen in the Inbox view.');
  }

  async settingsView(): Promise<SettingsView> {
    const secret = await this.secrets.get(CLIENT_SECRET_ACCOUNT);
    const webhook = this.settings.get('webhook');
    return {
      concurrency: this.settings.get('concurrency'),
      settleMs: this.settings.get('settleMs'),
      rescanMinutes: this.settings.get('rescanMinutes'),
      recheckMinutes: this.recheckMinutes(),
      ignorePatterns: this.settings.get('ignorePatterns'),
      bandwidthLimitBytesPerSecond: this.settings.get('bandwidthLimit'),
      webhook: { port: webhook.port, publicUrl: webhook.publicUrl ?? null },
      maskedSecret: secret ? `••••••••${secret.slice(-4)}` : null,
    };
  }

  async updateSettings(patch: SettingsPatch): Promise<SettingsView> {
    const settings = this.settings;
    // Checked as a whole before anything is saved: a refused patch changes nothing.
    const webhook = patch.webhook ? this.nextWebhookSettings(patch.webhook) : undefined;
    const ca = patch.caCertificate === undefined ? undefined : caCertificateFrom(patch.caCertificate);
    const recheckProblem = patch.recheckMinutes === undefined ? null : recheckMinutesProblem(patch.recheckMinutes);
    if (recheckProblem) throw new BridgeError('INVALID_INPUT', undefined, recheckProblem);
    if (patch.concurrency !== undefined) settings.set('concurrency', patch.concurrency);
    if (patch.settleMs !== undefined) settings.set('settleMs', patch.settleMs);
    if (patch.rescanMinutes !== undefined) settings.set('rescanMinutes', patch.rescanMinutes);
    if (patch.ignorePatterns !== undefined) settings.set('ignorePatterns', patch.ignorePatterns);
    if (patch.recheckMinutes !== undefined) {
      settings.set('recheckMinutes', patch.recheckMinutes);
      this.engine.setRecheckMs(patch.recheckMinutes * MINUTE_MS);
    }
    if (patch.bandwidthLimitBytesPerSecond !== undefined) {
      settings.set('bandwidthLimit', patch.bandwidthLimitBytesPerSecond);
      this.limiter.setLimit(patch.bandwidthLimitBytesPerSecond);
    }
    if (webhook) settings.set('webhook', webhook);
    if (ca !== undefined) saveTrustedCa(this.options.home, ca);
    if (patch.clientSecret !== undefined) await this.secrets.set(CLIENT_SECRET_ACCOUNT, patch.clientSecret);
    if (patch.clientSecret !== undefined || ca !== undefined) await this.connect();
    // Applied here, so the settings watch finds nothing new in this process's own change (and still
    // finds a change another process made meanwhile).
    this.live = {
      ...this.live,
      ...(patch.concurrency !== undefined ? { concurrency: patch.concurrency } : {}),
      ...(patch.settleMs !== undefined ? { settleMs: patch.settleMs } : {}),
      ...(patch.rescanMinutes !== undefined ? { rescanMinutes: patch.rescanMinutes } : {}),
      ...(patch.ignorePatterns !== undefined ? { ignorePatterns: patch.ignorePatterns } : {}),
      ...(patch.recheckMinutes !== undefined ? { recheckMinutes: patch.recheckMinutes } : {}),
      ...(patch.bandwidthLimitBytesPerSecond !== undefined ? { bandwidthLimit: patch.bandwidthLimitBytesPerSecond } : {}),
    };
    await this.engine.setTuning(this.tuning());
    if (patch.webhook && this.started) await this.startWebhooks();
    this.emitStatus();
    return this.settingsView();
  }

  /** The settings file changed under the running app (`patient-docs-sync config` or `add-pair` from another process). */
  onSettingsFileChange(listener: (event: SettingsFileEvent) => void): () => void {
    this.settingsListeners.add(listener);
    return () => this.settingsListeners.delete(listener);
  }

  /** The server calls only https callbacks (SPEC §5.7), so an http public URL could never work. */
  private nextWebhookSettings(patch: NonNullable<SettingsPatch['webhook']>): WebhookSettings {
    const next: WebhookSettings = { ...this.settings.get('webhook'), ...(patch.port !== undefined ? { port: patch.port } : {}) };
    if (patch.publicUrl === undefined) return next;
    const url = patch.publicUrl?.trim();
    if (!url) {
      delete next.publicUrl;
      return next;
    }
    let parsed: URL;
    try {
      if (/\s/.test(url)) throw new Error('spaces');
      parsed = new URL(url);
    } catch {
      throw new BridgeError('INVALID_INPUT', `the public URL '${url}' is not a valid address`);
    }
    if (parsed.protocol !== 'https:') throw new BridgeError('INVALID_INPUT', 'the public URL must start with https:// (the server calls only https addresses)');
    next.publicUrl = url;
    return next;
  }

  emitStatus(): void {
    if (this.listeners.size === 0) return;
    void this.status().then((status) => this.emit({ type: 'status', status }));
  }

  private recheckMinutes(): number {
    return this.settings.get('recheckMinutes') ?? RECHECK_MINUTES.default;
  }

  /** What the engine runs with: the settings as this process last applied them. */
  private tuning(): EngineOptions['tuning'] {
    const { concurrency, settleMs, rescanMinutes, ignorePatterns } = this.live;
    return { concurrency, settleMs, rescanMinutes, ignorePatterns };
  }

  private connection(): ConnectionSettings | null {
    const store: SyncSettings = this.settings.store;
    if (!store.serverUrl || !store.clientId || !store.organizationId) return null;
    return { serverUrl: store.serverUrl, tokenUrl: store.tokenUrl ?? `${store.serverUrl}/oauth2/token`, clientId: store.clientId, organizationId: store.organizationId };
  }

  private async saveConnection(connection: ConnectionSettings, clientSecret: string): Promise<void> {
    await this.secrets.set(CLIENT_SECRET_ACCOUNT, clientSecret);
    this.settings.set('serverUrl', connection.serverUrl);
    this.settings.set('tokenUrl', connection.tokenUrl);
    this.settings.set('clientId', connection.clientId);
    this.settings.set('organizationId', connection.organizationId);
  }

  private caFile(): string {
    return path.join(this.options.home, SERVER_CA_FILE);
  }

  /**
   * IT may save the clinic's CA from another process while this one syncs (`patient-docs-sync
   * connect --ca-file` next to a running `run` service, or next to the app): the file is looked at
   * every few seconds, and a changed CA connects again, so files waiting on the certificate go at once.
   */
  private watchTrustedCa(): void {
    unwatchFile(this.caFile(), this.onCaFileChanged);
    watchFile(this.caFile(), { persistent: false, interval: this.options.caCheckMs ?? CA_CHECK_MS }, this.onCaFileChanged);
  }

  private readonly onCaFileChanged = (): void => {
    if (!this.started || (readTrustedCa(this.options.home)?.pem ?? null) === this.connectedCaPem) return;
    // Should connecting fail (a keychain gone meanwhile), the files keep waiting with their reason
    // and the next change of the file tries again.
    void this.reconnect().catch(() => undefined);
  };

  /**
   * IT changes settings with `patient-docs-sync config` or adds a folder with `add-pair` while a
   * `run` service or the app runs: the file is looked at every second (a stat, as for the CA file:
   * conf replaces it by a rename, which a stat sees and an fs.watch on the file would lose), and the
   * settings `config` can change and the sync folders are applied as they are from Settings. A file
   * that cannot be used changes nothing; the status says why. The connection (`connect`) and the
   * webhook listener still take a restart.
   */
  private watchSettings(): void {
    unwatchFile(this.settings.path, this.onSettingsFileChanged);
    watchFile(this.settings.path, { persistent: false, interval: this.options.settingsCheckMs ?? SETTINGS_CHECK_MS }, this.onSettingsFileChanged);
  }

  private readonly onSettingsFileChanged = (): void => {
    // One after the other: applying a new ignore list restarts the folder watches.
    this.settingsReload = this.settingsReload.then(() => this.applySettingsFile()).catch((error: unknown) => {
      this.tellSettings({ kind: 'problem', message: `The changed settings could not be applied: ${error instanceof Error ? error.message : String(error)}` });
    });
  };

  private async applySettingsFile(): Promise<void> {
    if (!this.started) return;
    let saved: SyncSettings;
    try {
      saved = this.kept.read();
    } catch (error) {
      if (!(error instanceof SettingsFileProblem)) throw error;
      if (error.message === this.settingsProblem) return;
      this.settingsProblem = error.message;
      this.tellSettings({ kind: 'problem', message: error.message });
      this.emitStatus();
      return;
    }
    const wasBroken = this.settingsProblem !== null;
    this.settingsProblem = null;
    const next = liveSettingsFrom(saved);
    // The app's own changes reach the engine as they are saved, so only another process's differ here.
    // A scanner inbox's cases are pairs the engine runs that the settings' list does not hold.
    const pairs = pairChanges(this.engine.pairList().filter((pair) => !this.inbox.isDerived(pair.id)), saved.pairs);
    const inboxesChanged = JSON.stringify(saved.inboxes ?? []) !== JSON.stringify(this.inbox.manager.loadedInboxes());
    const changes = [...describeLiveChanges(this.live, next), ...describePairChanges(pairs), ...(inboxesChanged ? ['the scanner inboxes'] : [])];
    if (changes.length === 0) {
      if (wasBroken) this.tellSettings({ kind: 'applied', message: `The settings file ${this.settings.path} can be used again; nothing in it changed.` });
      if (wasBroken) this.emitStatus();
      return;
    }
    this.live = next;
    this.limiter.setLimit(next.bandwidthLimit);
    // An interval the process was started with (PATIENT_DOCS_SYNC_RECHECK_MS) still wins, as at its start.
    if (this.options.engine?.recheckMs === undefined) this.engine.setRecheckMs(next.recheckMinutes * MINUTE_MS);
    await this.engine.setTuning(this.tuning());
    for (const pair of [...pairs.removed, ...pairs.changed]) await this.engine.removePair(pair.id);
    for (const pair of [...pairs.added, ...pairs.changed]) await this.engine.addPair(pair);
    for (const pair of [...pairs.paused, ...pairs.resumed]) this.engine.setPaused(pair.id, pair.paused);
    await this.inbox.applySettings(saved.inboxes ?? [], next.ignorePatterns);
    this.tellSettings({ kind: 'applied', message: `Settings changed in ${this.settings.path}, applied without a restart: ${changes.join('; ')}.` });
    this.emitStatus();
  }

  private tellSettings(event: SettingsFileEvent): void {
    for (const listener of this.settingsListeners) listener(event);
  }

  /** The CA the current connection trusts (null: none kept), to tell a changed file from a touched one. */
  private connectedCaPem: string | null = null;

  private async connect(): Promise<void> {
    const connection = this.connection();
    const secret = connection ? await this.secrets.get(CLIENT_SECRET_ACCOUNT) : undefined;
    const ca = readTrustedCa(this.options.home);
    this.connectedCaPem = ca?.pem ?? null;
    this.privateCa = Boolean(connection?.serverUrl.startsWith('https:')) && (ca !== null || Boolean(process.env.NODE_EXTRA_CA_CERTS));
    this.clientSecretMissing = connection !== null && !secret;
    // A server address saved by an older version that would carry the secret in clear text is not used.
    const insecure = connection ? (insecureAddress(connection.serverUrl) ?? insecureAddress(connection.tokenUrl)) : null;
    this.api = connection && secret && !insecure ? createApiClient(connection, secret, { limiter: this.limiter, ca, ...(this.options.resumableThreshold !== undefined ? { resumableThreshold: this.options.resumableThreshold } : {}) }) : null;
    this.engine.setApi(this.api);
  }

  private async reconnect(): Promise<void> {
    await this.connect();
    if (this.started) await this.startWebhooks();
    this.emitStatus();
  }

  private async startWebhooks(): Promise<void> {
    if (this.options.webhooks === false) return;
    const webhook = this.settings.get('webhook');
    const subscriptionId = await this.webhooks.start({
      port: webhook.port,
      publicUrl: webhook.publicUrl ?? null,
      subscriptionId: webhook.subscriptionId ?? null,
      api: this.api,
      // The embedded server is this computer's: it reaches the listener over loopback (and allows that callback).
      loopback: this.mode() === 'embedded',
    });
    if (subscriptionId === (webhook.subscriptionId ?? null)) return;
    const { subscriptionId: _old, ...rest } = this.settings.get('webhook');
    this.settings.set('webhook', subscriptionId ? { ...rest, subscriptionId } : rest);
  }

  private async startEmbedded(): Promise<EmbeddedServerInfo> {
    this.embeddedInfo ??= await this.options.embedded!.start(this.settings.get('serverUrl'));
    return this.embeddedInfo;
  }

  private emit(event: BridgeEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}

/** The bundled server's marker, private like the rest of the home (a file from before keeps its mode: chmod). */
function writeMarker(home: string, serverUrl: string): void {
  const file = path.join(home, EMBEDDED_MARKER);
  writeFileSync(file, JSON.stringify({ serverUrl }), { mode: PRIVATE_FILE_MODE });
  chmodSync(file, PRIVATE_FILE_MODE);
}

/** The CA of a settings patch ('' forgets it); a file that is no certificate is refused before anything is saved. */
function caCertificateFrom(text: string): TrustedCa | null {
  if (text.trim() === '') return null;
  try {
    return parseCaCertificate(text);
  } catch (error) {
    if (error instanceof CaCertificateError) throw new BridgeError('BAD_CA_FILE', error.message);
    throw error;
  }
}
