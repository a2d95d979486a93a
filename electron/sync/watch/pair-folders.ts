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
