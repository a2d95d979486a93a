/**
 * Which files in a sync folder are never uploaded (DESIGN §4): temporary and system files that
 * scanner software, Office and the OS leave behind, plus glob patterns the user adds.
 */
import { createRequire } from 'node:module';

type Matcher = (input: string) => boolean;
type Picomatch = (patterns: readonly string[], options: { nocase: boolean; dot: boolean }) => Matcher;

// picomatch ships no type declarations (and @types/picomatch is not a dependency); this is the one
// call we make. The posix build matches our posix relative paths the same way on every platform.
const picomatch = createRequire(import.meta.url)('picomatch/posix') as Picomatch;

const SYSTEM_NAMES = new Set(['thumbs.db', 'desktop.ini', '.ds_store']);
const TEMPORARY_SUFFIXES = ['.tmp', '.part'];
/** Office lock files (`~$report.docx`) and the like. */
const LOCK_PREFIX = '~$';

/** Is this one file or folder name a temporary, system or hidden one? Case-insensitive. */
export function isBuiltInIgnoredName(name: string): boolean {
  const lower = name.toLowerCase();
  return (
    lower.startsWith('.') ||
    lower.startsWith(LOCK_PREFIX) ||
    SYSTEM_NAMES.has(lower) ||
    TEMPORARY_SUFFIXES.some((suffix) => lower.endsWith(suffix))
  );
}

/**
 * Returns the ignore test for a pair. It takes a path relative to the sync folder (either
 * separator) and is true when the file, or any folder it sits in, is ignored — so a watcher can
 * skip a whole ignored folder without descending into it.
 *
 * A user pattern without `/` (`*.bak`, `old-exports`) matches a name at any depth, like
 * .gitignore; one with `/` (`exports/raw/**`) matches from the sync folder down.
 */
export function createIgnoreMatcher(userPatterns: readonly string[] = []): (relativePath: string) => boolean {
  // NFC on both sides: a name on disk may be decomposed (macOS) while the pattern was typed composed.
  const patterns = userPatterns.map((pattern) => pattern.trim().replace(/\\/g, '/').normalize('NFC')).filter((pattern) => pattern.length > 0);
  const options = { nocase: true, dot: true };
  const nameMatches = compile(patterns.filter((pattern) => !pattern.includes('/')), options);
  const pathMatches = compile(
    patterns.filter((pattern) => pattern.includes('/')).map((pattern) => pattern.replace(/^\/+/, '')),
    options,
  );

  return (relativePath) => {
    const segments = relativePath.normalize('NFC').replace(/\\/g, '/').split('/').filter((segment) => segment.length > 0);
    return segments.some((segment, index) => {
      if (isBuiltInIgnoredName(segment) || nameMatches(segment)) return true;
      return pathMatches(segments.slice(0, index + 1).join('/'));
    });
  };
}

function compile(patterns: readonly string[], options: { nocase: boolean; dot: boolean }): Matcher {
  return patterns.length === 0 ? () => false : picomatch(patterns, options);
}
