/**
 * The engine's non-secret settings (DESIGN §4). One JSON schema serves `conf` (headless, here)
 * and electron-store (the desktop, which extends conf and takes the same `schema` option), so
 * both validate the same file the same way. Secrets never live here: see secrets.ts.
 */
import Conf from 'conf';
import type { Options, Schema } from 'conf';

export interface SyncPair {
  id: string;
  folder: string;
  patientId: string;
  patientName?: string;
  remoteBasePath: string;
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
  /** Files uploaded at once. */
  concurrency: number;
  /** How long a file must stay unchanged before it is uploaded. */
  settleMs: number;
  /** Minutes between full rescans of each folder; 0 turns them off. */
  rescanMinutes: number;
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
  concurrency: { type: 'integer', minimum: 1, maximum: 32 },
  settleMs: { type: 'integer', minimum: 0 },
  rescanMinutes: { type: 'number', minimum: 0 },
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

/** Headless settings in `<directory>/settings.json`. Throws when a value breaks the schema. */
export function openSettings(directory: string): SettingsStore {
  return new Conf<SyncSettings>({ ...settingsOptions, cwd: directory });
}
