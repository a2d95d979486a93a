/** `admin migrate` from the CLI: the flags, the progress on stderr, the summary on stdout. */
import type { ServerConfig } from '../../config.js';
import type { ParsedValues } from '../cli-common.js';
import { migrateInstallation, migrationSummary } from './migrate.js';
import { MigrationProgress } from './progress.js';
import { migrationTargets } from './targets.js';

export async function migrateCommand(config: ServerConfig, values: ParsedValues): Promise<string> {
  const targets = migrationTargets({ toDatabase: values['to-database'], toStorage: values['to-storage'] });
  const progress = new MigrationProgress({ isTTY: process.stderr.isTTY, columns: process.stderr.columns, write: (text) => process.stderr.write(text) });
  const report = await migrateInstallation(config, targets, progress);
  return migrationSummary(report, targets);
}
