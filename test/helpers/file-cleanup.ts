/**
 * Clean-up that belongs to the test file now running, for helpers that start something on first
 * use and keep it for the rest of the file (a PostgreSQL cluster, an S3-compatible server).
 *
 * A worker runs many test files one after another in one process (`isolate: false` in
 * vitest.config.ts), and a helper module is imported once per worker, not once per file: a hook
 * a helper registered at its import would run after the first file only. So a helper registers
 * its clean-up here when it starts the thing, and test/setup-file.ts, which runs before every file,
 * runs the list in that file's afterAll (after the file's own afterAll hooks).
 */
const cleanups: Array<() => unknown> = [];

/** Runs `cleanup` when the current test file ends. */
export function afterThisFile(cleanup: () => unknown): void {
  cleanups.push(cleanup);
}

/** Runs and forgets every clean-up registered during the file, last registered first; throws the first failure after running them all. */
export async function runFileCleanups(): Promise<void> {
  let failure: unknown;
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup();
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure !== undefined) throw failure;
}
