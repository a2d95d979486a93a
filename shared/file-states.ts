/**
 * The states of a file being synced (DESIGN §4), apart from bridge.ts: the journal and the views
 * use them without loading the bridge's schemas (typebox), which `patient-docs-sync status` does
 * not need.
 */
export const FILE_STATES = ['queued', 'creating', 'uploading', 'verifying', 'synced', 'waiting', 'failed'] as const;
export type FileState = (typeof FILE_STATES)[number];
export type StateCounts = Record<FileState, number>;
