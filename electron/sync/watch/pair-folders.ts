/**
 * Which folders may become sync folders. A scan must go to one patient, once: a folder already
 * synced, or one inside or around a synced folder, would send the same file to two patients (or to
 * one patient twice, under two paths).
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { SyncPair } from '../home/settings.js';

export interface FolderOverlap {
  pair: SyncPair;
  /** How the new folder stands to the pair's: the same folder, inside it, or around it. */
  relation: 'same' | 'inside' | 'contains';
}

/** The parts of `node:path` used; `path.win32` lets tests speak Windows (where case does not matter). */
export type FolderPathFlavour = Pick<typeof path, 'relative' | 'resolve' | 'isAbsolute' | 'sep'>;

const within = (parent: string, child: string, flavour: FolderPathFlavour) => {
  const relative = flavour.relative(parent, child);
  return relative === '' ? 'same' : relative !== '..' && !relative.startsWith(`..${flavour.sep}`) && !flavour.isAbsolute(relative) ? 'inside' : null;
};

/**
 * `canonical` names a folder the way the file system does (links resolved): a link to a synced
 * folder is that folder, whatever path it is given by.
 */
export function overlappingPair(pairs: readonly SyncPair[], folder: string, flavour: FolderPathFlavour = path, canonical: (folder: string) => string = (given) => given): FolderOverlap | undefined {
  const candidate = flavour.resolve(canonical(folder));
  for (const pair of pairs) {
    const existing = flavour.resolve(canonical(pair.folder));
    const inside = within(existing, candidate, flavour);
    if (inside) return { pair, relation: inside };
    if (within(candidate, existing, flavour)) return { pair, relation: 'contains' };
  }
  return undefined;
}

/** A plain sentence for the refusal. */
export function describeOverlap(folder: string, { pair, relation }: FolderOverlap): string {
  const patient = pair.patientName ?? `patient ${pair.patientId}`;
  const where = relation === 'same' ? `'${folder}' already syncs` : relation === 'inside' ? `'${folder}' is inside '${pair.folder}', which already syncs` : `'${folder}' holds '${pair.folder}', which already syncs`;
  return `${where} to ${patient} (${pair.remoteBasePath}). A folder can sync to one place only, so that each scan goes to one patient, once.`;
}

/** The folder with every link resolved, or as given when it cannot be resolved (a share that is not mounted). */
export function realFolder(folder: string): string {
  try {
    return realpathSync.native(folder);
  } catch {
    return path.resolve(folder);
  }
}

/**
 * Folders that hold the app's own state rather than scans: the sync home (settings, journal, the
 * encrypted secrets and their key) and the bundled server's data folder (its database and stored
 * files, which lies in the sync home today but is named on its own so that it stays covered).
 */
export interface ProtectedFolders {
  syncHome: string;
  serverData?: string;
}

export interface ForbiddenFolderOptions {
  flavour?: FolderPathFlavour;
  /** Real paths, links resolved (realFolder); the identity in tests of another platform. */
  canonical?: (folder: string) => string;
  platform?: NodeJS.Platform;
}

/** Folders of the system whose "files" are the computer's memory, processes and devices, per platform. */
export function systemFolders(platform: NodeJS.Platform): string[] {
  if (platform === 'win32') return [];
  if (platform === 'darwin') return ['/dev', '/.vol', '/private/var/vm', '/System/Volumes/VM'];
  return ['/proc', '/sys', '/dev'];
}

/** Windows names that open a device rather than a file, in any folder (`C:\scans\CON`). */
const WINDOWS_DEVICE_NAME = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?$/i;

/** A Windows path in the device namespace (`\\.\PhysicalDrive0`, `\\?\GLOBALROOT\…`), or naming a device. */
function windowsDevicePath(folder: string): boolean {
  const slashed = folder.replace(/\//g, '\\');
  if (slashed.startsWith('\\\\.\\')) return true;
  // `\\?\C:\…` and `\\?\UNC\server\share\…` are long ordinary paths; anything else is an object of the kernel.
  if (slashed.startsWith('\\\\?\\') && !/^\\\\\?\\([a-z]:\\|unc\\)/i.test(slashed)) return true;
  return slashed.split('\\').some((part) => WINDOWS_DEVICE_NAME.test(part.trim()));
}

/**
 * Why `folder` may never be a scan folder, or undefined when it may: it is, holds or lies inside
 * the sync home, the bundled server's data folder or a system folder of the platform (/proc, /sys,
 * /dev; the device namespace on Windows). Real paths are compared, so a link that leads there is
 * refused like the folder itself. Checked when a folder is added and again before every scan.
 */
export function forbiddenFolder(folder: string, folders: ProtectedFolders, options: ForbiddenFolderOptions = {}): string | undefined {
  const flavour = options.flavour ?? path;
  const canonical = options.canonical ?? realFolder;
  const platform = options.platform ?? process.platform;
  const real = flavour.resolve(canonical(folder));
  const shown = real === flavour.resolve(folder) ? `'${folder}'` : `'${folder}' (which leads to '${real}')`;
  const choose = 'Choose the folder the scanner exports to.';
  if (platform === 'win32' && (windowsDevicePath(folder) || windowsDevicePath(real))) {
    return `${shown} names a device of Windows, not a folder of files: it can never be a scan folder. ${choose}`;
  }
  // The server's folder lies in the sync home: a folder in it is told by the server's reason, a
  // folder around the home by the home's.
  const owned = [
    { folder: folders.serverData, what: 'where the bundled server keeps its database and stored files', why: 'the server would upload its own files to itself' },
    { folder: folders.syncHome, what: 'where Patient Docs keeps its settings, journal and secrets', why: 'its secrets would be uploaded' },
  ].flatMap(({ folder: guardedFolder, ...rest }) => (guardedFolder ? [{ guarded: flavour.resolve(canonical(guardedFolder)), ...rest }] : []));
  const matches = owned.flatMap((entry) => {
    const relation = within(entry.guarded, real, flavour) ?? (within(real, entry.guarded, flavour) ? 'contains' : null);
    return relation ? [{ ...entry, relation }] : [];
  });
  const match = matches.find(({ relation }) => relation !== 'contains') ?? matches.at(-1);
  if (match) {
    const { relation, guarded, what, why } = match;
    const where = relation === 'same' ? `${shown} is the folder ${what}` : relation === 'inside' ? `${shown} is inside '${guarded}', ${what}` : `${shown} holds '${guarded}', ${what}`;
    return `${where}: it can never be a scan folder (${why}). ${choose}`;
  }
  for (const system of systemFolders(platform)) {
    const relation = within(system, real, flavour) ?? (within(real, system, flavour) ? 'contains' : null);
    if (!relation) continue;
    const where = relation === 'contains' ? `${shown} holds the system folder '${system}'` : `${shown} is ${relation === 'same' ? 'the' : 'inside the'} system folder '${system}'`;
    return `${where}, whose entries are the computer's processes, memory and devices, not files: it can never be a scan folder. ${choose}`;
  }
  return undefined;
}
