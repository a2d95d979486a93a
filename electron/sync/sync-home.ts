/**
 * Where the engine keeps its state (DESIGN §4): `PATIENT_DOCS_SYNC_HOME`, else the OS's per-user
 * app-data folder. The desktop, the headless twin and the CLI share it, so IT can configure a
 * workstation with the CLI and the app sees the same pairs.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSecretStore, type SecretStore } from './secrets.js';
import { openSettings, type SettingsStore } from './settings.js';

export function defaultSyncHome(env: Record<string, string | undefined> = process.env, platform = process.platform): string {
  if (env.PATIENT_DOCS_SYNC_HOME) return path.resolve(env.PATIENT_DOCS_SYNC_HOME);
  const home = os.homedir();
  if (platform === 'win32') return path.join(env.APPDATA ?? path.join(home, 'AppData', 'Roaming'), 'Patient Docs');
  if (platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'Patient Docs');
  return path.join(env.XDG_CONFIG_HOME ?? path.join(home, '.config'), 'patient-docs');
}

export interface SyncHome {
  directory: string;
  settings: SettingsStore;
  secrets: SecretStore;
}

/** One keychain service per installation (per home), so two installs never share a secret. */
export function serviceName(directory: string): string {
  return `Patient Docs (${createHash('sha256').update(path.resolve(directory)).digest('hex').slice(0, 12)})`;
}

export async function openSyncHome(directory: string): Promise<SyncHome> {
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const settings = openSettings(directory);
  const secrets = await openSecretStore({ serviceName: serviceName(directory), fallbackFile: path.join(directory, 'secrets.enc'), probeTimeoutMs: 3000 });
  return { directory, settings, secrets };
}
