/**
 * The per-file sync states (DESIGN §4) and which moves between them are legal. Pure rules, so the
 * journal can refuse a move that would lose track of a file (e.g. jumping from `queued` straight to
 * `synced` without the verification that "synced" promises).
 */

import { FILE_STATES, type FileState } from '../../../shared/file-states.js';

// One list of states for the engine and the UI: the bridge contract owns it.
export { FILE_STATES, type FileState };

/** States in which a step was under way; after a crash, a restart resumes them. */
export const IN_FLIGHT_STATES: readonly FileState[] = ['creating', 'uploading', 'verifying'];

export const HISTORY_EVENTS = ['queued', 'uploaded', 'verified', 'failed', 'version', 'adopted', 'deleted-locally', 'ignored'] as const;
export type HistoryEvent = (typeof HISTORY_EVENTS)[number];

// Every working state may fall back to `queued` (the file changed under it), to `waiting` (retry
// later) or to `failed` (a permanent refusal). Forward moves follow the pipeline; `waiting` resumes
// at whichever step the row's fields say is next, so it may enter any working state.
const LEGAL_MOVES: Record<FileState, readonly FileState[]> = {
  // `uploading` directly: a modified file whose document exists becomes a new version;
  // `verifying` directly: an adopted document may already hold these bytes.
  // `queued` again: still queued, with fields the pipeline learned (e.g. the document is gone).
  queued: ['queued', 'creating', 'uploading', 'verifying', 'waiting', 'failed'],
  creating: ['creating', 'uploading', 'verifying', 'queued', 'waiting', 'failed'],
  uploading: ['uploading', 'verifying', 'queued', 'waiting', 'failed'],
  // back to `uploading`: verification found the content missing or short.
  verifying: ['verifying', 'uploading', 'synced', 'queued', 'waiting', 'failed'],
  waiting: ['creating', 'uploading', 'verifying', 'queued', 'waiting', 'failed'],
  // `failed` directly: the server lost the file and it is gone from the folder too (engine recheck).
  synced: ['queued', 'failed'],
  // `synced` directly: a scan failed as lost on the server and gone from the folder, whose stored
  // file IT restored (engine recheck: a hasContent search by id shows these very bytes again).
  failed: ['queued', 'synced'],
};

export function canTransition(from: FileState, to: FileState): boolean {
  return LEGAL_MOVES[from].includes(to);
}

export function isFileState(value: string): value is FileState {
  return (FILE_STATES as readonly string[]).includes(value);
}

export class IllegalTransitionError extends Error {
  constructor(
    readonly fileId: number,
    readonly from: FileState,
    readonly to: FileState,
  ) {
    super(`file ${fileId} cannot move from '${from}' to '${to}'`);
    this.name = 'IllegalTransitionError';
  }
}
