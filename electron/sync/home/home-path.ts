/**
 * Where a sync home is when PATIENT_DOCS_SYNC_HOME does not say (apart from sync-home.ts, so the
 * CLI's usage can name it without loading the settings and secret stores).
 */
import os from 'node:os';
import path from 'node:path';

export function defaultSyncHome(env: Record<string, string | undefined> = process.env, platform = process.platform): string {
  if (env.PATIENT_DOCS_SYNC_HOME) return path.resolve(env.PATIENT_DOCS_SYNC_HOME);
  const home = os.homedir();
  if (platform === 'win32') return path.join(env.APPDATA ?? path.join(home, 'AppData', 'Roaming'), 'Patient Docs');
  if (platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'Patient Docs');
  return path.join(env.XDG_CONFIG_HOME ?? path.join(home, '.config'), 'patient-docs');
}
