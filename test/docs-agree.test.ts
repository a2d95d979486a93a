/**
 * The README, CONTRIBUTING and docs/ agree with the code: every environment variable they name is
 * one the code reads, and every one the code reads is documented; every `npm run` script exists;
 * every repository path and bench command they name exists; every relative link (and its #anchor)
 * resolves. A reader who copies a command or follows a link from the docs meets what they promise.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');

/** Every page a reader is sent to: the README, CONTRIBUTING and each page of docs/. */
const PAGES = ['README.md', 'CONTRIBUTING.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
/** The pages that document variables (the README only points to them). */
const DOC_PAGES = PAGES.filter((page) => page.startsWith('docs/'));
/** Where the product's code lives: every variable it reads must be documented. */
const CODE_FOLDERS = ['server', 'electron', 'scripts', 'bin', 'shared'];
/** The tests' and benches' own code (helpers, set-up, benches, not test files): a variable the docs name may be one of theirs. */
const TOOL_FOLDERS = ['test', 'bench'];
/** Top-level folders: a path in the docs that begins with one of them names a file of this repository. */
const REPOSITORY_FOLDERS = ['server', 'electron', 'shared', 'renderer', 'test', 'bench', 'scripts', 'bin', 'build', 'docs', '.ci'];

const VARIABLE = /PATIENT_DOCS_[A-Z0-9_]*[A-Z0-9]/g;

function read(relative: string): string {
  return fs.readFileSync(path.join(ROOT, relative), 'utf8');
}

function codeFiles(folder: string): string[] {
  const found: string[] = [];
  const walk = (relative: string): void => {
    for (const entry of fs.readdirSync(path.join(ROOT, relative), { withFileTypes: true })) {
      const child = `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else if (/\.(ts|tsx|cts|mts|js|mjs|cjs)$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name)) found.push(child);
    }
  };
  if (fs.existsSync(path.join(ROOT, folder))) walk(folder);
  return found;
}

/**
 * Variables the code reads: `env.NAME` (also `process.env.NAME`, `env?.NAME`), `env['NAME']`,
 * `const { NAME } = process.env`, and a name handed to a reader as a literal (`parseSize('NAME', …)`,
 * `['NAME', default, min, max]`). A name only inside a message or an error code is not a read.
 */
function variablesReadByCode(folders: readonly string[] = CODE_FOLDERS): Map<string, string> {
  const readers = [
    /\benv\??\.(PATIENT_DOCS_\w+)/g,
    /\benv\[\s*['"`](PATIENT_DOCS_\w+)['"`]\s*\]/g,
    // An argument or list item; lookarounds so that two in a row (f(env, 'A', 'B')) are both read.
    /(?<=[([,]\s*)['"](PATIENT_DOCS_\w+)['"](?=\s*[,)\]])/g,
  ];
  const destructured = /\{([^{}]*)\}\s*=\s*(?:process\.)?env\b/g;
  const variables = new Map<string, string>();
  for (const file of folders.flatMap(codeFiles)) {
    const text = read(file);
    for (const reader of readers) for (const match of text.matchAll(reader)) variables.set(match[1]!, file);
    for (const match of text.matchAll(destructured)) for (const name of match[1]!.match(VARIABLE) ?? []) variables.set(name, file);
  }
  return variables;
}

function variablesNamedIn(pages: readonly string[]): Map<string, string> {
  const variables = new Map<string, string>();
  for (const page of pages) for (const name of read(page).match(VARIABLE) ?? []) if (!variables.has(name)) variables.set(name, page);
  return variables;
}

/** Fenced code blocks and inline code spans of a Markdown page. */
function codeOf(markdown: string): string[] {
  const fenced = [...markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((match) => match[1]!);
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '');
  const inline = [...prose.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!);
  return [...fenced, ...inline];
}

/** Repository paths named in code: `server/app.ts`, `test/proxy-nginx*.e2e.test.ts`, `docs/`. */
function pathsIn(code: string): string[] {
  const start = `(?:${REPOSITORY_FOLDERS.map((folder) => folder.replace('.', '\\.')).join('|')})`;
  const pattern = new RegExp(`(?:^|[\\s"'(=@\`])(?:\\./)?(${start}/[\\w.*/-]*)`, 'g');
  return [...code.matchAll(pattern)].map((match) => match[1]!.replace(/[.,:;]+$/, ''));
}

/** Whether a path exists; a `*` in its last segment matches any characters there. */
function exists(relative: string): boolean {
  if (!relative.includes('*')) return fs.existsSync(path.join(ROOT, relative));
  const folder = path.dirname(relative);
  const name = new RegExp(`^${path.basename(relative).replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
  return !folder.includes('*') && fs.existsSync(path.join(ROOT, folder)) && fs.readdirSync(path.join(ROOT, folder)).some((entry) => name.test(entry));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const withoutCode = markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '');
  return new Set([...withoutCode.matchAll(/^#{1,6}\s+(.+)$/gm)].map((match) => anchorOf(match[1]!)));
}

describe('docs and code agree', () => {
  it('every PATIENT_DOCS_* variable the README or docs name is one the code (or the tests’ tooling) reads', () => {
    const read = variablesReadByCode([...CODE_FOLDERS, ...TOOL_FOLDERS]);
    const unknown = [...variablesNamedIn(PAGES)].filter(([name]) => !read.has(name)).map(([name, page]) => `${name} (named in ${page})`);
    expect(unknown).toEqual([]);
  });

  it('every PATIENT_DOCS_* variable the code reads is documented in a docs/ page', () => {
    const documented = variablesNamedIn(DOC_PAGES);
    const undocumented = [...variablesReadByCode()].filter(([name]) => !documented.has(name)).map(([name, file]) => `${name} (read in ${file})`);
    expect(undocumented).toEqual([]);
  });

  it('every `npm run <script>`, `npm start` and `npm test` in the docs is a script of package.json', () => {
    const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts);
    const missing: string[] = [];
    for (const page of PAGES) {
      for (const match of read(page).matchAll(/\bnpm (?:run(?:-script)? ([\w:-]+)|(start|test)\b)/g)) {
        const script = match[1] ?? match[2]!;
        if (!scripts.includes(script)) missing.push(`npm run ${script} (${page})`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('every bench command and repository path named in the docs’ code exists', () => {
    const missing: string[] = [];
    for (const page of PAGES) {
      for (const code of codeOf(read(page))) {
        for (const match of code.matchAll(/\bnode (?:\.\/)?([\w./-]+\.m?js)\b/g)) if (!exists(match[1]!)) missing.push(`node ${match[1]} (${page})`);
        for (const named of pathsIn(code)) if (!exists(named)) missing.push(`${named} (${page})`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('every relative link between the docs resolves, anchors included', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      const text = read(page).replace(/^```[^\n]*\n[\s\S]*?^```/gm, '');
      for (const match of text.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: — not ours to check here
        const [file = '', anchor] = target.split('#');
        const resolved = file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), file));
        if (resolved.startsWith('..') || !fs.existsSync(path.join(ROOT, resolved))) {
          broken.push(`${target} (${page}): no such file`);
          continue;
        }
        if (anchor !== undefined && !anchorsOf(read(resolved)).has(anchor)) broken.push(`${target} (${page}): no heading with that anchor`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('keeps the README a page a newcomer reads through: at most 150 lines, linking every docs/ page', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(150);
    const unlinked = DOC_PAGES.filter((page) => !readme.includes(`](${page})`));
    expect(unlinked).toEqual([]);
  });

  it('finds what it checks: the variables, scripts, paths and links it looks for are there to look at', () => {
    // Guards the checks above against passing on nothing (a pattern that no longer matches).
    expect(variablesReadByCode().has('PATIENT_DOCS_DATA_DIR')).toBe(true);
    expect(variablesReadByCode().has('PATIENT_DOCS_SYNC_HOME')).toBe(true);
    expect(variablesNamedIn(DOC_PAGES).has('PATIENT_DOCS_TRUSTED_PROXIES')).toBe(true);
    expect(pathsIn('see `test/helpers/nginx.ts` and docs/nginx.conf.example')).toEqual(['test/helpers/nginx.ts', 'docs/nginx.conf.example']);
    expect(anchorOf('`patient-docs-sync` (workstations without a display)')).toBe('patient-docs-sync-workstations-without-a-display');
    expect(anchorOf("A server with the clinic's own certificate")).toBe('a-server-with-the-clinics-own-certificate');
  });
});
