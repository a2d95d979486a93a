/**
 * Runs before every test file (vitest.config.ts `setupFiles`): the file's clean-ups registered
 * with afterThisFile run in its last afterAll hook, whichever worker runs it.
 */
import { afterAll } from 'vitest';
import { runFileCleanups } from './helpers/file-cleanup.js';

afterAll(runFileCleanups);
