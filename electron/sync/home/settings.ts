/**
 * The engine's non-secret settings (DESIGN §4). One JSON schema serves `conf` (headless, here)
 * and electron-store (the desktop, which extends conf and takes the same `schema` option), so
 * both validate the same file the same way. Secrets never live here: see secrets.ts.
 */
import { closeSync, copyFileSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import Conf from 'conf';
import type { Options, Schema } from 'conf';
import { RECHECK_MINUTES } from '../../../shared/recheck-interval.js';

export interface SyncPair {
  id: string;
  folder: string;
  patientId: string;
  patientName?: string;
  remoteBasePath: string;
  paused: boolean;
  /**
   * Only this top-level entry of the folder belongs to the pair: a scanner inbox's case, synced as
   * a pair of its own once it has a patient (never saved in the settings' `pairs`).
   */
  only?: string;
}

/**
 * A scanner inbox (issue 27): one folder of many patients' cases, bound to the organization and a
 * remote base path; each top-level entry is a case, synced to `<remoteBasePath>/<case>` of the
 * patient it is assigned to (electron/sync/inbox/).
 */
export interface SyncInbox {
  id: string;
  folder: string;
  remoteBasePath: string;
  /** Clinic rules on case names, such as `{chart}_*` (inbox/folder-rules.ts). */
  rules: string[];
  paused: boolean;
}

/** A pair no longer synced, kept so its upload history still names its folder and patient. */
export interface RemovedPair extends SyncPair {
  removedAt: number;
}

export interface WebhookSettings {
  /** Port of the loopback listener; 0 picks a free one. */
  port: number;
  /** The address the server calls (e.g. a tunnel's https URL); the listener's own is never used. */
  publicUrl?: string;
  subscriptionId?: string;
}

// A type alias, not an interface: conf needs the implicit index signature only aliases have.
export type SyncSettings = {
  serverUrl?: string;
  tokenUrl?: string;
  clientId?: string;
  organizationId?: string;
  pairs: SyncPair[];
  removedPairs: RemovedPair[];
  /** Absent until the first inbox is added, so a file without one stays readable by versions before inboxes. */
  inboxes?: SyncInbox[];
  /** Files uploaded at once. */
  concurrency: number;
  /** How long a file must stay unchanged before it is uploaded. */
  settleMs: number;
  /** Minutes between full rescans of each folder; 0 turns them off. */
  rescanMinutes: number;
  /**
   * Minutes between checks of the synced files against the server; 0 turns them off. Absent (the
   * default, RECHECK_MINUTES.default) until IT sets it, so a file never set stays readable by
   * versions before this setting.
   */
  recheckMinutes?: number;
  ignorePatterns: string[];
  /** Upload bandwidth limit in bytes per second; 0 means none. */
  bandwidthLimit: number;
  webhook: WebhookSettings;
};

export const SETTINGS_DEFAULTS: SyncSettings = {
  pairs: [],
  removedPairs: [],
  concurrency: 3,
  settleMs: 2000,
  rescanMinutes: 10,
  ignorePatterns: [],
  bandwidthLimit: 0,
  webhook: { port: 8787 },
};

const UUID = { type: 'string', format: 'uuid' } as const;
const HTTP_URL = { type: 'string', format: 'uri', pattern: '^https?://' } as const;
const PAIR = {
  type: 'object',
  required: ['id', 'folder', 'patientId', 'remoteBasePath', 'paused'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', minLength: 1 },
    folder: { type: 'string', minLength: 1 },
    patientId: UUID,
    patientName: { type: 'string' },
    remoteBasePath: { type: 'string', pattern: '^/', maxLength: 1024 },
    paused: { type: 'boolean' },
  },
} as const;

const INBOX = {
  type: 'object',
  required: ['id', 'folder', 'remoteBasePath', 'rules', 'paused'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 64 },
    folder: { type: 'string', minLength: 1 },
    remoteBasePath: { type: 'string', pattern: '^/', maxLength: 1024 },
    rules: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 256 } },
    paused: { type: 'boolean' },
  },
} as const;

export const settingsSchema: Schema<SyncSettings> = {
  serverUrl: HTTP_URL,
  tokenUrl: HTTP_URL,
  clientId: { type: 'string', minLength: 1 },
  organizationId: UUID,
  pairs: { type: 'array', items: PAIR },
  // Pairs no longer synced, as they were: the history still names their folder and patient.
  removedPairs: {
    type: 'array',
    items: { ...PAIR, required: [...PAIR.required, 'removedAt'], properties: { ...PAIR.properties, removedAt: { type: 'integer', minimum: 0 } } },
  },
  inboxes: { type: 'array', items: INBOX },
  concurrency: { type: 'integer', minimum: 1, maximum: 32 },
  settleMs: { type: 'integer', minimum: 0 },
  rescanMinutes: { type: 'number', minimum: 0 },
  // 0 (off), or 15 minutes to 7 days: a setting that checked every minute would search the server all day.
  recheckMinutes: { anyOf: [{ const: 0 }, { type: 'integer', minimum: RECHECK_MINUTES.min, maximum: RECHECK_MINUTES.max }] },
  ignorePatterns: { type: 'array', items: { type: 'string' } },
  bandwidthLimit: { type: 'integer', minimum: 0 },
  webhook: {
    type: 'object',
    required: ['port'],
    additionalProperties: false,
    properties: {
      port: { type: 'integer', minimum: 0, maximum: 65535 },
      publicUrl: HTTP_URL,
      subscriptionId: { type: 'string', minLength: 1 },
    },
  },
};

/** The schema and defaults as both conf and electron-store take them. */
export const settingsOptions = {
  configName: 'settings',
  schema: settingsSchema,
  defaults: SETTINGS_DEFAULTS,
  // Unknown keys are refused, so a secret cannot end up in this plain file by mistake.
  // `__internal__` is where conf and electron-store keep their own bookkeeping.
  rootSchema: { additionalProperties: false, patternProperties: { '^__internal__$': {} } },
  // Folder paths, patient ids and the server address: for this user only, like the rest of the home.
  configFileMode: 0o600,
} satisfies Partial<Options<SyncSettings>>;

/** What the engine needs of a settings store; conf and electron-store both provide it. */
export interface SettingsStore {
  get<Key extends keyof SyncSettings>(key: Key): SyncSettings[Key];
  set<Key extends keyof SyncSettings>(key: Key, value: SyncSettings[Key]): void;
  readonly store: SyncSettings;
  readonly path: string;
}

/** A settings file that could not be read and was moved aside (never deleted). */
export interface SettingsRecovery {
  setAsideAs: string;
  /** True when the copy kept at the last good start or change was put back in its place. */
  restored: boolean;
}

export interface OpenedSettings {
  settings: SettingsStore;
  recovery?: SettingsRecovery;
}

/**
 * Headless settings in `<directory>/settings.json`. conf writes it atomically (a temp file,
 * fsync, rename), yet a disk that lies about flushing can still leave it empty or full of zeros
 * after a power cut. A file that does not parse or breaks the schema is moved aside and the copy
 * kept beside it (`settings.last-good.json`, refreshed at every good start and change) takes its
 * place, else the defaults: the app starts either way, and `recovery` says what happened.
 */
export function openSettingsChecked(directory: string): OpenedSettings {
  const file = path.join(directory, `${settingsOptions.configName}.json`);
  const backup = path.join(directory, `${settingsOptions.configName}.last-good.json`);
  let recovery: SettingsRecovery | undefined;
  let settings: Conf<SyncSettings>;
  try {
    settings = new Conf<SyncSettings>({ ...settingsOptions, cwd: directory });
    void settings.store; // conf reads lazily when the file exists: check it now
  } catch (error) {
    if (!isUnreadableSettings(error)) throw error;
    // Settings this version has no place for are a newer version's (the app went back after a
    // failed update), not damage: replacing them would drop every sync folder for both versions.
    if (isFromNewerVersion(error)) throw new NewerSettingsError(file, (error as Error).message);
    const setAsideAs = `${file}.unreadable-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    renameSync(file, setAsideAs);
    let restored = restoreBackup(backup, file);
    try {
      settings = new Conf<SyncSettings>({ ...settingsOptions, cwd: directory });
      void settings.store;
    } catch (restoreError) {
      if (!restored || !isUnreadableSettings(restoreError)) throw restoreError;
      // The copy breaks the schema too (written by another version): start from the defaults.
      rmSync(file, { force: true });
      restored = false;
      settings = new Conf<SyncSettings>({ ...settingsOptions, cwd: directory });
    }
    recovery = { setAsideAs, restored };
  }
  keepBackup(file, backup);
  settings.onDidAnyChange(() => keepBackup(file, backup));
  return recovery ? { settings, recovery } : { settings };
}

/** Headless settings in `<directory>/settings.json`. Throws when a value breaks the schema. */
export function openSettings(directory: string): SettingsStore {
  return openSettingsChecked(directory).settings;
}

/** Plain words for the user, once, when the settings file had to be replaced. */
export function settingsRecoveryNotice(recovery: SettingsRecovery): string {
  const kept = `The damaged file was kept as ${recovery.setAsideAs}.`;
  return recovery.restored
    ? `The settings file on this computer was damaged (often after a power cut); the copy saved at the last change was put back. Check that every sync folder is listed. ${kept}`
    : `The settings file on this computer was damaged (often after a power cut) and no saved copy was found: connect to the server and add the sync folders again. ${kept}`;
}

/** A settings file a newer version of the app wrote, with settings this version does not know. */
export class NewerSettingsError extends Error {
  readonly code = 'SETTINGS_FROM_NEWER_VERSION';
  constructor(
    readonly file: string,
    readonly violation: string,
  ) {
    super(
      `The settings file ${file} was written by a newer version of Patient Docs (it has settings this version does not know). ` +
        'It was left as it is. Install the newer version again to go on syncing; nothing is uploaded until then.',
    );
  }
}

const UNKNOWN_PROPERTY = / must NOT have additional properties$/;

/** Every complaint is a property this version does not know (conf lists them joined by '; '). */
function isFromNewerVersion(error: unknown): boolean {
  if (!(error instanceof Error) || !error.message.startsWith('Config schema violation:')) return false;
  const complaints = error.message.slice('Config schema violation:'.length).trim().split('; ');
  return complaints.length > 0 && complaints.every((complaint) => UNKNOWN_PROPERTY.test(complaint));
}

function isUnreadableSettings(error: unknown): boolean {
  if (error instanceof SyntaxError) return true;
  return error instanceof Error && error.message.startsWith('Config schema violation:');
}

function restoreBackup(backup: string, file: string): boolean {
  try {
    const text = readFileSync(backup, 'utf8');
    JSON.parse(text);
    // Checked like the file itself when conf opens it; a bad copy fails that check, not silently.
    copyFileSync(backup, file);
    return true;
  } catch {
    return false;
  }
}

/** The last settings that parsed, beside the file, written atomically like conf writes its own. */
function keepBackup(file: string, backup: string): void {
  try {
    const text = readFileSync(file, 'utf8');
    JSON.parse(text);
    const temporary = `${backup}.tmp`;
    const descriptor = openSync(temporary, 'w', settingsOptions.configFileMode);
    try {
      writeSync(descriptor, text);
      fsyncSync(descriptor);
    } finally {
      closeSync(descriptor);
    }
    renameSync(temporary, backup);
  } catch {
    // A backup is a convenience: a full disk or a missing file must not stop the app.
    rmSync(`${backup}.tmp`, { force: true });
  }
}
