import { configDefaults, defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/helpers/longest-first-sequencer.js';

const INCLUDE = ['shared/**/*.test.ts', 'server/**/*.test.ts', 'electron/**/*.test.ts', 'renderer/**/*.test.{ts,tsx}', 'test/**/*.test.ts'];

/**
 * Files whose work is CPU-bound and timed (thumbnail renders checked against a time bound, the
 * server's 20 s render timeout; new folders found within the settle time, some rounds with every
 * core kept busy on purpose): they run one at a time after all the others, with the machine to
 * themselves, so a second file's CPU cannot push them past a limit that a clinic's machine would
 * meet, and their own load does not slow another file's timed waits. They are kept small: the
 * rest of what they cover is in files that run two at a time (test/content.e2e.test.ts holds the
 * content routes, test/content-renders.e2e.test.ts the renders of real scans alone;
 * test/watch-new-folders-sync.e2e.test.ts syncs new folders to a server under generous deadlines,
 * the stress file keeps the rounds timed file by file).
 */
const ALONE = ['server/thumbnails/thumbnails.test.ts', 'test/content-renders.e2e.test.ts', 'test/watch-new-folders.stress.test.ts'];

/**
 * Every other file runs two at a time: most of their time is waiting (processes starting, servers,
 * polls, retry delays), not CPU. Each file has its own ports (port 0), temp folders, keyring and
 * nginx prefix, so two files never share state. Not three on the 2-core machines the suite is sized
 * for: the files' own servers, clusters and browsers then queue for the CPU, the timed waits stretch
 * (the several-instances revocation bound of a second was missed) and the run is no shorter.
 */
const WORKERS = 2;

/**
 * Files that exercise the store through real routes, run a second time on PostgreSQL (a real
 * cluster each, test/helpers/postgres.ts): the test server helper takes its database from
 * PATIENT_DOCS_TEST_DATABASE (webhooks.e2e's server processes too: delivery, retries on time and
 * the take-over of a killed instance's claims). The store contract suite runs both databases by itself. The route
 * suites themselves (server-core, auth-matrix, every-route) run on PostgreSQL in the deployment
 * project below, through nginx, so they are not run a third time here.
 */
const ON_POSTGRES = ['test/audit-patients.e2e.test.ts', 'test/audit-links.e2e.test.ts', 'test/hostile-input.property.test.ts', 'test/patient-identifiers.test.ts', 'test/webhooks.e2e.test.ts'];

/**
 * Files that exercise content storage through real routes (one-shot and tus uploads, downloads,
 * Range/ETag, versions, thumbnails, damaged and missing content, kill -9 with uploads in flight),
 * run a second time with content in an S3-compatible server (s3rver on loopback,
 * test/helpers/s3.ts): the test server helpers (in-process and server processes, the admin CLI)
 * take their storage from PATIENT_DOCS_TEST_STORAGE. content-renders.e2e runs after the others, alone,
 * as on disk (timed renders); the others two at a time. Picked for the S3 code paths they reach, not
 * every route again. The backend's own tests and the two-instance S3 test start their s3rver
 * themselves.
 */
const ON_S3 = ['test/content.e2e.test.ts', 'test/srv-crash.e2e.test.ts', 'test/srv-content-missing.e2e.test.ts', 'test/srv-versions-lost.e2e.test.ts'];
const ON_S3_ALONE = ['test/content-renders.e2e.test.ts'];

/**
 * The route suites run a third time through a whole deployment (DESIGN §6): two instances on one
 * PostgreSQL database and one bucket of the S3-compatible server, behind one nginx doing
 * round-robin over HTTPS (PATIENT_DOCS_TEST_DEPLOYMENT=nginx, test/helpers/deployment.ts), so each
 * request of a test may land on either instance.
 */
const THROUGH_NGINX = ['test/server-core.test.ts', 'test/auth-matrix.test.ts', 'test/every-route.property.test.ts', 'test/tus-across-instances.test.ts'];

/**
 * Files that replace a module with `vi.mock`: they run in a fresh process each, so the stand-in
 * never reaches another file's imports. They run beside the other files (same workers, same
 * group): a project with one worker and `isolate: true` would be held back by vitest until every
 * other file had finished, and run alone at the end.
 */
const MOCKING = ['electron/sync/watch/watcher.test.ts'];

/**
 * A worker process runs file after file (`isolate: false`): the modules a file imports (Fastify,
 * the AWS SDK, the server's own code) are loaded once per worker instead of once per file; the
 * whole run spends 53 s importing instead of 330 s with a process per file. Each file still makes
 * its own servers, folders and databases; a helper that keeps something for the rest of a file
 * cleans it up through test/helpers/file-cleanup.ts, run by test/setup-file.ts at the end of
 * every file.
 */
const common = { testTimeout: 60_000, hookTimeout: 120_000, pool: 'forks', isolate: false, setupFiles: ['test/setup-file.ts'] } as const;

export default defineConfig({
  test: {
    // Once for the whole run (the projects below do not repeat it): builds dist/ before any file runs.
    globalSetup: ['test/global-setup.ts'],
    // Longest files first, by the durations in test/file-times.json: the same order on every machine.
    sequence: { sequencer: LongestFirstSequencer },
    reporters: ['default', './test/helpers/slowest-files-reporter.ts'],
    projects: [
      { test: { ...common, name: 'parallel', include: INCLUDE, exclude: [...configDefaults.exclude, ...ALONE, ...MOCKING], maxWorkers: WORKERS, sequence: { groupOrder: 0 } } },
      { test: { ...common, name: 'isolated', include: MOCKING, isolate: true, maxWorkers: WORKERS, sequence: { groupOrder: 0 } } },
      {
        test: { ...common, name: 'postgres', include: ON_POSTGRES, maxWorkers: WORKERS, sequence: { groupOrder: 0 }, env: { PATIENT_DOCS_TEST_DATABASE: 'postgres' } },
      },
      {
        test: {
          ...common,
          name: 'deployment',
          include: THROUGH_NGINX,
          maxWorkers: WORKERS,
          sequence: { groupOrder: 0 },
          env: { PATIENT_DOCS_TEST_DEPLOYMENT: 'nginx', PATIENT_DOCS_TEST_DATABASE: 'postgres', PATIENT_DOCS_TEST_STORAGE: 's3' },
        },
      },
      { test: { ...common, name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } } },
      { test: { ...common, name: 's3', include: ON_S3, maxWorkers: WORKERS, sequence: { groupOrder: 0 }, env: { PATIENT_DOCS_TEST_STORAGE: 's3' } } },
      { test: { ...common, name: 's3-alone', include: ON_S3_ALONE, maxWorkers: 1, sequence: { groupOrder: 1 }, env: { PATIENT_DOCS_TEST_STORAGE: 's3' } } },
    ],
  },
});
