/**
 * The states of a file being synced (DESIGN §4), apart from bridge.ts: the journal and the views
 * use them without loading the bridge's schemas (typebox), which `patient-docs-sync status` does
 * not need.
 */
export const FILE_STATES = ['queued', 'creating', 'uploading', 'verifying', 'synced', 'waiting', 'failed'] as const;
export type FileState = (typeof FILE_STATES)[number];
export type StateCounts = Record<FileState, number>;

/** Why a file is skipped rather than failed: an empty file has nothing to upload, and Retry cannot help. */
export const SKIPPED_CODES: readonly string[] = ['EMPTY_FILE'];

/** A file the engine set aside for a reason staff need not act on (it is taken up once it changes). */
export function isSkipped(state: FileState, errorCode: string | null | undefined): boolean {
  return state === 'failed' && errorCode !== null && errorCode !== undefined && SKIPPED_CODES.includes(errorCode);
}

/**
 * The DICOM series a file belongs to, by its name: a slice of a CT or CBCT export (a `.dcm` file,
 * or one without an extension, as many scanners write them: IM1, IM2, …) is one of its folder's
 * series; null for any other file. Staff count a series as one item, not 300.
 */
export function dicomSeriesKey(relativePath: string): string | null {
  const slash = relativePath.lastIndexOf('/');
  const name = relativePath.slice(slash + 1);
  const dot = name.lastIndexOf('.');
  const looksDicom = dot > 0 ? name.slice(dot + 1).toLowerCase() === 'dcm' : /\d/.test(name);
  return looksDicom ? `${slash < 0 ? '' : relativePath.slice(0, slash)}/` : null;
}

/** Items for progress: each file, a DICOM series as one; done once all of its files are. */
export interface ItemProgress {
  done: number;
  total: number;
}
