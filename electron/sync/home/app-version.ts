import { readFileSync } from 'node:fs';

/**
 * This build's version (package.json), shown in the app's status and by the CLI. Read once.
 */
export const APP_VERSION = readPackageVersion();

function readPackageVersion(): string {
  // dist/electron/sync/home/app-version.js when built, electron/sync/home/app-version.ts under the test runner.
  for (const relative of ['../../../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'patient-docs' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not this one
    }
  }
  return '0.0.0';
}
