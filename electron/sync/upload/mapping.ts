/**
 * Where a local file goes on the server (DESIGN §4): its folder relative to the sync folder maps
 * under the pair's remote base path, and the file name stays the file name. A name the server
 * would refuse is reported with a plain-language reason, so the caller can show it per file
 * instead of silently skipping the file.
 */
import path from 'node:path';
import { checkName, checkPath, foldKey, joinPath, visibleName } from '../../../shared/names.js';

export interface PairLocation {
  folder: string;
  remoteBasePath: string;
}

export type RemoteMapping =
  | { ok: true; relativePath: string; remotePath: string; fileName: string }
  | { ok: false; relativePath: string; reason: string };

/** The parts of `node:path` we use; `path.win32` lets tests speak Windows on any machine. */
export type PathFlavour = Pick<typeof path, 'relative' | 'sep' | 'isAbsolute'>;

/**
 * The journal's key for a file: relative to the sync folder, posix separators, spelled as on disk.
 * Not normalized: `René.stl` written decomposed (macOS, and copies of its files to NTFS or Linux)
 * is opened by that spelling only, and a composed `René.stl` beside it is another file. The server
 * name (NFC) comes from mapToRemote; two files that the server would take for one are told apart
 * by serverNameKey.
 */
export function toRelativePath(folder: string, absolutePath: string, flavour: PathFlavour = path): string {
  const relative = flavour.relative(folder, absolutePath);
  if (relative === '' || relative === '..' || relative.startsWith(`..${flavour.sep}`) || flavour.isAbsolute(relative)) {
    throw new Error(`'${absolutePath}' is not inside the sync folder '${folder}'`);
  }
  return relative.split(flavour.sep).join('/');
}

/**
 * Equal for two relative paths exactly when the server would hold them as one document of the
 * pair: it compares folder path and name NFC and case folded (shared/names.ts foldKey).
 */
export function serverNameKey(relativePath: string): string {
  return foldKey(relativePath);
}

/**
 * Maps a file given by its path relative to the sync folder (posix separators). The remote folder
 * and name are NFC, as the server stores them; `relativePath` stays as given.
 */
export function mapToRemote(pair: Pick<PairLocation, 'remoteBasePath'>, relativePath: string): RemoteMapping {
  const normalized = relativePath.normalize('NFC');
  const refuse = (reason: string): RemoteMapping => ({ ok: false, relativePath, reason });

  const base = checkPath(pair.remoteBasePath, 'path');
  if (!base.ok) {
    return refuse(`The server folder '${visibleName(pair.remoteBasePath)}' set for this sync folder is not valid: it ${ruleText(base.rule, 'path')}.`);
  }
  const segments = normalized.split('/');
  const rawFileName = segments.pop() ?? '';
  const folders: string[] = [];
  for (const segment of segments) {
    const folder = checkName(segment, 'name');
    if (!folder.ok) return refuse(`The folder name '${visibleName(segment)}' cannot be used on the server: it ${ruleText(folder.rule, 'name')}.`);
    folders.push(folder.value);
  }
  const fileName = checkName(rawFileName, 'name');
  if (!fileName.ok) return refuse(`The file name '${visibleName(rawFileName)}' cannot be used on the server: it ${ruleText(fileName.rule, 'name')}.`);

  const joined = joinPath(base.value, ...folders);
  const remotePath = checkPath(joined, 'path');
  if (!remotePath.ok) return refuse(`The folder path '${visibleName(joined)}' cannot be used on the server: it ${ruleText(remotePath.rule, 'path')}.`);
  return { ok: true, relativePath, remotePath: remotePath.value, fileName: fileName.value };
}

/** Maps a file given by its absolute local path. */
export function mapLocalFile(pair: PairLocation, absolutePath: string, flavour: PathFlavour = path): RemoteMapping {
  return mapToRemote(pair, toRelativePath(pair.folder, absolutePath, flavour));
}

/** `name must not be blank` → `must not be blank`: the rules of shared/names.ts read as a sentence. */
function ruleText(rule: string, label: string): string {
  return rule.startsWith(`${label} `) ? rule.slice(label.length + 1) : rule;
}
