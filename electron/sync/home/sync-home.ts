/**
 * Where the engine keeps its state (DESIGN §4): `PATIENT_DOCS_SYNC_HOME`, else the OS's per-user
 * app-data folder. The desktop, the headless twin and the CLI share it, so IT can configure a
 * workstation with the CLI and the app sees the same pairs.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tightenHome } from './home-modes.js';
import { defaultSyncHome } from './home-path.js';
import { EMBEDDED_DATA_FOLDER } from './home-state.js';
import { openSecretStore, type SecretStore } from './secrets.js';
import { openSettingsChecked, settingsRecoveryNotice, type SettingsStore } from './settings.js';

export { defaultSyncHome };

export interface SyncHome {
  directory: string;
  settings: SettingsStore;
  secrets: SecretStore;
  /** What had to be repaired while opening (a damaged settings file), in plain words, to show once. */
  notices: string[];
}

const INSTALLATION_ID_FILE = 'installation-id';

/**
 * One keychain service per installation (per home), so two installs never share a secret. The name
 * also authenticates the encrypted secrets file, so it must survive the home folder being moved:
 * it comes from an id kept in the home, not from the folder's path.
 */
export function serviceName(directory: string): string {
  return `Patient Docs (${installationId(directory)})`;
}

function installationId(directory: string): string {
  const file = path.join(directory, INSTALLATION_ID_FILE);
  const stored = readId(file);
  if (stored) return stored;
  // The first id is the one the path gave before ids were kept, so a home made by an earlier
  // version keeps its keychain entries and its encrypted file readable.
  const id = createHash('sha256').update(path.resolve(directory)).digest('hex').slice(0, 12);
  try {
    writeFileSync(file, `${id}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    // Another process (the CLI next to the app) wrote it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readId(file) ?? id;
    throw error;
  }
  return id;
}

function readId(file: string): string | undefined {
  try {
    const id = readFileSync(file, 'utf8').trim();
    return /^[0-9a-f]{12}$/.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

export async function openSyncHome(directory: string): Promise<SyncHome> {
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  // The bundled server tightens its own data folder (server/private-files.ts).
  tightenHome(directory, [path.join(directory, EMBEDDED_DATA_FOLDER)]);
  const { settings, recovery } = openSettingsChecked(directory);
  const secrets = await openSecretStore({ serviceName: serviceName(directory), fallbackFile: path.join(directory, 'secrets.enc'), probeTimeoutMs: 3000 });
  return { directory, settings, secrets, notices: recovery ? [settingsRecoveryNotice(recovery)] : [] };
}
