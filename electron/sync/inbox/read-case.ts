/**
 * One look at a case of the inbox (a top-level folder or loose file): how many files, how many
 * bytes, when it last changed, which scanner wrote it, and every piece of evidence it holds — its
 * name, order XML files, the headers of a few DICOM files (a series repeats the same tags).
 */
import { lstat, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { dedupeEvidence, type Evidence } from './evidence.js';
import { DICOM_HEADER_BYTES, evidenceFromDicomHead, looksLikeDicom, readHead } from './dicom-header.js';
import { evidenceFromName } from './folder-rules.js';
import { evidenceFromManifest } from './manifests.js';

export interface CaseScan {
  name: string;
  isFolder: boolean;
  fileCount: number;
  bytes: number;
  /** The newest mtime of its files (ms); the case's own for an empty folder. */
  changedAt: number;
  /** "iTero", "3Shape", "Medit", "DICOM", "PDF", "3D scan", or null. */
  scanner: string | null;
  evidence: Evidence[];
}

/** Order files are kilobytes; a bigger .xml is not one. */
const MAX_MANIFEST_BYTES = 1024 * 1024;
/** DICOM headers read per case: a series says the same in every file. */
const MAX_DICOM_FILES = 4;
const MAX_DEPTH = 6;

export async function readCase(inboxFolder: string, name: string, rules: readonly string[], isIgnored: (relativePath: string) => boolean = () => false): Promise<CaseScan | undefined> {
  const absolute = path.join(inboxFolder, name);
  const own = await lstat(absolute).catch(() => undefined);
  if (!own || (!own.isDirectory() && !own.isFile())) return undefined;
  const isFolder = own.isDirectory();
  const files: Array<{ relativePath: string; absolute: string; size: number; mtimeMs: number }> = [];
  if (isFolder) await walk(absolute, name, 0, files, isIgnored);
  else files.push({ relativePath: name, absolute, size: own.size, mtimeMs: own.mtimeMs });
  const evidence: Evidence[] = [...evidenceFromName(name, !isFolder, rules)];
  let dicomRead = 0;
  let dicomSeen = false;
  for (const file of files) {
    const extension = path.extname(file.relativePath).toLowerCase();
    if (extension === '.xml' && file.size <= MAX_MANIFEST_BYTES) {
      const text = await readFile(file.absolute, 'utf8').catch(() => '');
      evidence.push(...evidenceFromManifest(text, path.basename(file.relativePath)));
    } else if ((extension === '.dcm' || extension === '' || extension === '.dicom') && dicomRead < MAX_DICOM_FILES && file.size >= 132) {
      const head = await readHead(file.absolute, Math.min(DICOM_HEADER_BYTES, file.size)).catch(() => undefined);
      if (head && looksLikeDicom(head)) {
        dicomSeen = true;
        dicomRead += 1;
        evidence.push(...evidenceFromDicomHead(head));
      }
    }
  }
  const kept = dedupeEvidence(evidence);
  return {
    name,
    isFolder,
    fileCount: files.length,
    bytes: files.reduce((sum, file) => sum + file.size, 0),
    changedAt: files.reduce((newest, file) => Math.max(newest, file.mtimeMs), isFolder ? own.mtimeMs : 0),
    scanner: scannerOf(kept, files, dicomSeen),
    evidence: kept,
  };
}

async function walk(folder: string, relative: string, depth: number, files: Array<{ relativePath: string; absolute: string; size: number; mtimeMs: number }>, isIgnored: (relativePath: string) => boolean): Promise<void> {
  if (depth > MAX_DEPTH) return;
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const relativePath = `${relative}/${entry.name}`;
    if (isIgnored(relativePath)) continue;
    const absolute = path.join(folder, entry.name);
    if (entry.isDirectory()) await walk(absolute, relativePath, depth + 1, files, isIgnored);
    else if (entry.isFile()) {
      const stat = await lstat(absolute).catch(() => undefined);
      if (stat) files.push({ relativePath, absolute, size: stat.size, mtimeMs: stat.mtimeMs });
    }
  }
}

function scannerOf(evidence: readonly Evidence[], files: ReadonlyArray<{ relativePath: string }>, dicom: boolean): string | null {
  const sources = new Set(evidence.map((item) => item.source));
  if (sources.has('itero-export') || evidence.some((item) => item.kind === 'order' && item.source === 'folder-name')) return 'iTero';
  if (sources.has('3shape-order')) return '3Shape';
  if (sources.has('medit-order')) return 'Medit';
  if (dicom) return 'DICOM';
  const extensions = new Set(files.map((file) => path.extname(file.relativePath).toLowerCase()));
  if (['.stl', '.ply', '.obj'].some((extension) => extensions.has(extension))) return '3D scan';
  if (extensions.has('.pdf')) return 'PDF';
  return null;
}
