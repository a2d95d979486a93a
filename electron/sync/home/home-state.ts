/**
 * What a sync home holds besides its settings and secrets — the journal and the marker of the
 * bundled server — opened the same way by the app (sync-app.ts) and by the CLI's `status`, which
 * only reads them and so starts without the engine, the watcher or the HTTP client.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { AppMode } from '../../../shared/bridge.js';
import type { Journal } from '../journal/journal.js';
import { journalRecoveryNotice, openJournal } from '../journal/open-journal.js';
import type { SettingsStore } from './settings.js';

/** The bundled server's data folder (database and stored files), inside the sync home. */
export const EMBEDDED_DATA_FOLDER = 'server-data';

/** Written while the app runs the bundled server: its URL, so the mode survives a restart. */
export const EMBEDDED_MARKER = 'embedded.json';

/** The home's journal, and the notices of what opening the home had to repair (with the journal's own, if it was damaged). */
export function openHomeJournal(home: string, notices: readonly string[] = []): { journal: Journal; notices: string[] } {
  const journal = openJournal(path.join(home, 'journal.db'));
  return { journal, notices: [...notices, ...(journal.recovery ? [journalRecoveryNotice(journal.recovery)] : [])] };
}

/** Not connected yet, connected to the bundled server this app runs, or to a remote one. */
export function appMode(home: string, settings: SettingsStore): AppMode {
  const serverUrl = settings.get('serverUrl');
  if (!serverUrl || !settings.get('clientId') || !settings.get('organizationId')) return 'unconfigured';
  return readMarker(home)?.serverUrl === serverUrl ? 'embedded' : 'remote';
}

function readMarker(home: string): { serverUrl?: string } | undefined {
  try {
    return JSON.parse(readFileSync(path.join(home, EMBEDDED_MARKER), 'utf8')) as { serverUrl?: string };
  } catch {
    return undefined;
  }
}
