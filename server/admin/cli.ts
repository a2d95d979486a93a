/**
 * `patient-docs-admin`: what the admin API does, from a shell on the server machine. It works on
 * the same database as the server (same PATIENT_DOCS_DATA_DIR / PATIENT_DOCS_DATABASE_URL), so it
 * needs no admin token: access to the data directory is the authority.
 *
 * This entry loads only what parsing the flags and printing the usage need (cli-run.ts); a
 * command's code (and the database, the schemas…) is loaded once a command is asked for.
 */
import { runAdminCommand } from './cli-run.js';

void runAdminCommand(process.argv.slice(2)).then(({ code, stdout, stderr }) => {
  process.stdout.write(stdout);
  process.stderr.write(stderr);
  // A failure exits at once; a success once what the command opened is closed.
  if (code !== 0) process.exit(code);
});
