/**
 * The order test files start in (vitest.config.ts `sequence.sequencer`), the same on every machine.
 *
 * Vitest orders files by the durations of the last run on this machine (node_modules/.vite), and by
 * file size where it has none, as on a fresh CI machine: there, a long file could start last and run
 * on while the other workers sit idle. Here the durations come from test/file-times.json, kept in
 * the repository (`PATIENT_DOCS_TEST_WRITE_TIMES=1 npm test` rewrites it, see
 * test/helpers/slowest-files-reporter.ts), and the order is:
 * - the groups in `sequence.groupOrder`, as vitest runs them;
 * - within a group, project by project (a worker process runs the files of one project only, so
 *   interleaving projects would start a process per file), the projects with fewer files first:
 *   the project of many short files comes last, and its shortest files close the group;
 * - within a project, the longest file first; a file with no recorded time (a new one) before all.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export const FILE_TIMES = path.resolve(import.meta.dirname, '../file-times.json');

/** Seconds each file took in a full run, by `project:path` (the path from the repository's root). */
export type FileTimes = Record<string, number>;

export function readFileTimes(): FileTimes {
  try {
    return JSON.parse(readFileSync(FILE_TIMES, 'utf8')) as FileTimes;
  } catch {
    return {};
  }
}

/** A file's key in test/file-times.json, also the name the slowest-files list prints: `project:path from the root`. */
export function fileKey(projectName: string, relativePath: string): string {
  return `${projectName}:${relativePath}`;
}

/** The fields of a vitest TestSpecification the order reads. */
export interface OrderedFile {
  readonly moduleId: string;
  readonly project: { readonly name: string; readonly config: { readonly sequence: { readonly groupOrder: number } } };
}

/** `files` in the order they start (see above), `times` by `project:path` from `root`. */
export function orderFiles<File extends OrderedFile>(files: readonly File[], times: FileTimes, root: string): File[] {
  const filesOf = new Map<string, number>();
  for (const file of files) filesOf.set(file.project.name, (filesOf.get(file.project.name) ?? 0) + 1);
  const seconds = (file: File): number => times[fileKey(file.project.name, path.relative(root, file.moduleId))] ?? Number.POSITIVE_INFINITY;
  return [...files].sort(
    (a, b) =>
      a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
      filesOf.get(a.project.name)! - filesOf.get(b.project.name)! ||
      a.project.name.localeCompare(b.project.name) ||
      compareDescending(seconds(a), seconds(b)) ||
      a.moduleId.localeCompare(b.moduleId),
  );
}

export default class LongestFirstSequencer extends BaseSequencer {
  override sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    return Promise.resolve(orderFiles(files, readFileTimes(), this.ctx.config.root));
  }
}

function compareDescending(a: number, b: number): number {
  if (a === b) return 0;
  return a > b ? -1 : 1;
}
