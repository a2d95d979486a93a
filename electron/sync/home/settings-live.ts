/**
 * The settings a running engine takes up without a restart when the settings file changes under it
 * (IT's `patient-docs-sync config` or `add-pair` next to a running `run` service or app): the ones
 * `config` can set, and the sync folders. Which changed, in one line for the log; and a file that
 * cannot be used changes nothing.
 */
import { existsSync } from 'node:fs';
import { RECHECK_MINUTES } from '../../../shared/recheck-interval.js';
import { BridgeError } from '../app/bridge-error.js';
import { SETTINGS_DEFAULTS, type SettingsStore, type SyncPair, type SyncSettings } from './settings.js';

export interface LiveSettings {
  concurrency: number;
  settleMs: number;
  rescanMinutes: number;
  recheckMinutes: number;
  ignorePatterns: string[];
  bandwidthLimit: number;
}

/**
 * The settings file as a running app reads it. IT may edit the file by hand while the app runs, or
 * break it (half saved): then every read gives the settings as they were last read, so nothing that
 * reads them (the status, a webhook, a page of the UI) fails, and `read()` says why the file is not used.
 */
export class KeptSettings implements SettingsStore {
  private lastGood: SyncSettings;

  constructor(private readonly file: SettingsStore) {
    try {
      this.lastGood = readSettingsFile(file);
    } catch (error) {
      if (!(error instanceof SettingsFileProblem)) throw error;
      // Opened moments ago (openSettingsChecked repairs a damaged file), so only gone since: the defaults.
      this.lastGood = { ...SETTINGS_DEFAULTS };
    }
  }

  get path(): string {
    return this.file.path;
  }

  /** The file as it is now; throws `SettingsFileProblem` when it cannot be used. */
  read(): SyncSettings {
    this.lastGood = readSettingsFile(this.file);
    return this.lastGood;
  }

  get store(): SyncSettings {
    try {
      return this.read();
    } catch (error) {
      if (error instanceof SettingsFileProblem) return this.lastGood;
      throw error;
    }
  }

  get<Key extends keyof SyncSettings>(key: Key): SyncSettings[Key] {
    return this.store[key];
  }

  set<Key extends keyof SyncSettings>(key: Key, value: SyncSettings[Key]): void {
    if (!existsSync(this.file.path)) {
      // Gone (deleted by hand): written again from the settings in force, so no sync folder is lost.
      const kept = { ...this.lastGood, [key]: value } as Record<keyof SyncSettings, SyncSettings[keyof SyncSettings]>;
      for (const name of Object.keys(kept) as Array<keyof SyncSettings>) this.file.set(name, kept[name]);
      return;
    }
    try {
      readSettingsFile(this.file);
    } catch (error) {
      // Someone is editing it by hand: not saved over. Said in the words of the status notice.
      if (error instanceof SettingsFileProblem) throw new BridgeError('UNAVAILABLE', undefined, `${error.message} Nothing was changed.`);
      throw error;
    }
    this.file.set(key, value);
  }
}

/** The settings file as it is now, a key left out at its default; throws `SettingsFileProblem` when it cannot be used. */
function readSettingsFile(settings: SettingsStore): SyncSettings {
  // conf reads an absent file as empty: that is not "every default" while a service runs on it.
  if (!existsSync(settings.path)) throw new SettingsFileProblem(settings.path, 'it is not there');
  let store: Partial<SyncSettings>;
  try {
    store = settings.store;
  } catch (error) {
    throw new SettingsFileProblem(settings.path, reasonOf(error));
  }
  // As conf fills them in at the next start.
  return { ...SETTINGS_DEFAULTS, ...store };
}

/** The live settings as the file has them now; throws `SettingsFileProblem` when it cannot be used. */
export function readLiveSettings(settings: SettingsStore): LiveSettings {
  return liveSettingsFrom(readSettingsFile(settings));
}

/** A key left out means its default, as at the next start (conf fills the defaults in then). */
export function liveSettingsFrom(store: Partial<SyncSettings>): LiveSettings {
  return {
    concurrency: store.concurrency ?? SETTINGS_DEFAULTS.concurrency,
    settleMs: store.settleMs ?? SETTINGS_DEFAULTS.settleMs,
    rescanMinutes: store.rescanMinutes ?? SETTINGS_DEFAULTS.rescanMinutes,
    recheckMinutes: store.recheckMinutes ?? RECHECK_MINUTES.default,
    ignorePatterns: store.ignorePatterns ?? SETTINGS_DEFAULTS.ignorePatterns,
    bandwidthLimit: store.bandwidthLimit ?? SETTINGS_DEFAULTS.bandwidthLimit,
  };
}

/** A settings file changed into one that cannot be used: the running engine keeps what it has. */
export class SettingsFileProblem extends Error {
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`The settings file ${file} was changed but cannot be used (${reason}): the settings from before stay in force until it is fixed.`);
  }
}

function reasonOf(error: unknown): string {
  if (error instanceof SyntaxError) return 'it is not valid JSON';
  const code = (error as NodeJS.ErrnoException).code;
  if (code) return `it cannot be read: ${code}`;
  const message = error instanceof Error ? error.message : String(error);
  // conf's "Config schema violation: `concurrency` must be <= 32; …": the complaints are what IT needs.
  return message.replace(/^Config schema violation: /, 'not allowed: ');
}

/** What differs, in plain words ("files uploaded at once: 2 (was 3)"); empty when nothing does. */
export function describeLiveChanges(before: LiveSettings, after: LiveSettings): string[] {
  const changes: string[] = [];
  const changed = <Key extends keyof LiveSettings>(key: Key, label: string, say: (value: LiveSettings[Key]) => string) => {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) changes.push(`${label}: ${say(after[key])} (was ${say(before[key])})`);
  };
  const every = (minutes: number) => (minutes === 0 ? 'never' : `every ${minutes} minutes`);
  changed('recheckMinutes', 'synced files checked on the server', every);
  changed('concurrency', 'files uploaded at once', String);
  changed('settleMs', 'a file must stay unchanged for', (ms) => `${ms} ms`);
  changed('rescanMinutes', 'folders rescanned', every);
  changed('ignorePatterns', 'files ignored', (patterns) => (patterns.length === 0 ? 'none' : patterns.join(', ')));
  changed('bandwidthLimit', 'upload limit', (limit) => (limit === 0 ? 'none' : `${limit} bytes/s`));
  return changes;
}

/** Sync folders saved by another process (`add-pair`, or the file edited by hand), against the ones the engine runs. */
export interface PairChanges {
  /** Not run yet: started. */
  added: SyncPair[];
  /** Run, and no longer in the file: stopped (their journal rows stay, as with "Stop syncing"). */
  removed: SyncPair[];
  /** The same id with another folder, patient or server path: stopped and started again, as a restart would. */
  changed: SyncPair[];
  /** Only paused or resumed. */
  paused: SyncPair[];
  resumed: SyncPair[];
}

export function pairChanges(running: readonly SyncPair[], saved: readonly SyncPair[]): PairChanges {
  const before = new Map(running.map((pair) => [pair.id, pair]));
  const after = new Map(saved.map((pair) => [pair.id, pair]));
  const changes: PairChanges = { added: [], removed: [], changed: [], paused: [], resumed: [] };
  for (const pair of saved) {
    const was = before.get(pair.id);
    if (!was) changes.added.push(pair);
    else if (was.folder !== pair.folder || was.patientId !== pair.patientId || was.remoteBasePath !== pair.remoteBasePath || was.patientName !== pair.patientName) changes.changed.push(pair);
    else if (was.paused !== pair.paused) (pair.paused ? changes.paused : changes.resumed).push(pair);
  }
  for (const pair of running) if (!after.has(pair.id)) changes.removed.push(pair);
  return changes;
}

/** The same, in plain words ("now syncing C:\\Scans → Jane Roe /scans"). */
export function describePairChanges(changes: PairChanges): string[] {
  const target = (pair: SyncPair) => `${pair.patientName ?? `patient ${pair.patientId}`} ${pair.remoteBasePath}`;
  return [
    ...changes.added.map((pair) => `now syncing ${pair.folder} → ${target(pair)}${pair.paused ? ' (paused)' : ''}`),
    ...changes.changed.map((pair) => `${pair.folder} now syncs to ${target(pair)}`),
    ...changes.removed.map((pair) => `no longer syncing ${pair.folder}`),
    ...changes.paused.map((pair) => `${pair.folder} paused`),
    ...changes.resumed.map((pair) => `${pair.folder} resumed`),
  ];
}
