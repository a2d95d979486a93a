/**
 * File-name and path rules (DESIGN §3 "Documents"). Pure functions shared by the server, which
 * enforces them, and the sync engine, which reports a file the server would refuse before sending it.
 */

export const MAX_FILE_NAME_LENGTH = 255;
export const MAX_PATH_LENGTH = 1024;
export const ROOT_PATH = '/';

export type NameCheck = { ok: true; value: string } | { ok: false; rule: string };

/**
 * C0 and C1 control characters, and the line and paragraph separators U+2028/U+2029, which break
 * a line wherever a name is shown or logged just as a newline does.
 */
const CONTROL_RANGES = '\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029';
/**
 * Unicode's bidirectional embedding, override and isolate controls. Counted among the control
 * characters the rules forbid: one of them makes a name display as another ("scan\u202Efdp.exe"
 * reads "scanexe.pdf"). The marks U+200E/U+200F stay allowed: they reorder nothing on their own
 * and real mixed-script names use them.
 */
const BIDI_RANGES = '\\u202a-\\u202e\\u2066-\\u2069';
const CONTROL_CHARACTERS = new RegExp(`[${CONTROL_RANGES}]`, 'u');
const BIDI_CONTROLS = new RegExp(`[${BIDI_RANGES}]`, 'u');
/**
 * Characters that show nothing where they stand: Unicode's default-ignorable code points and the
 * other format characters (zero-width space, soft hyphen, word joiner, the byte-order mark, the
 * Hangul fillers, tags, variation selectors…). Inside a name each makes a second name that looks
 * exactly like the first ("scan\u200B.stl" beside "scan.stl"), so names refuse them.
 *
 * Kept, because real text needs them: the zero-width non-joiner and joiner (Persian, Indic
 * scripts, emoji sequences such as 👨‍⚕️), the left-to-right and right-to-left marks of mixed-script
 * names, and the text and emoji presentation selectors U+FE0E/U+FE0F. They must stand between two
 * characters, and the uniqueness key (foldKey) leaves them out, so they never tell two names apart.
 */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}]/u;
// Alternations, not character classes: the joiners are not characters a class should hold.
const TEXT_MARKS = '\u200c|\u200d|\u200e|\u200f|\ufe0e|\ufe0f';
const ALLOWED_TEXT_MARK = new RegExp(`^(?:${TEXT_MARKS})$`, 'u');
const EDGE_TEXT_MARK = new RegExp(`^(?:${TEXT_MARKS})|(?:${TEXT_MARKS})$`, 'u');
/** What hides or turns text when a name is shown: controls, bidirectional controls and the invisible characters names refuse. */
const INVISIBLE_HAZARDS = new RegExp(`[${CONTROL_RANGES}${BIDI_RANGES}]|(?!${TEXT_MARKS})[\\p{Default_Ignorable_Code_Point}\\p{Cf}]`, 'gu');

/** `U+200B`: how a rule names a character nobody can see. */
function codePointName(character: string): string {
  return `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** The first invisible character a name may not hold, if any. */
function forbiddenInvisible(value: string): string | undefined {
  for (const character of value) if (INVISIBLE.test(character) && !ALLOWED_TEXT_MARK.test(character)) return character;
  return undefined;
}

/**
 * Half of a UTF-16 surrogate pair without its other half. JSON can carry one ("\\ud800"), but it
 * is not a character: stored as UTF-8 it turns into U+FFFD, so the name kept would differ from the
 * one echoed, and two different names would become one.
 */
const LONE_SURROGATE = /[\ud800-\udfff]/u;
/**
 * Nothing a person could see or type back: white space, default-ignorable characters (zero-width
 * space and joiners, the Hangul fillers, the byte-order mark) and the blank Braille pattern.
 */
const NOTHING_VISIBLE = /^[\p{White_Space}\p{Default_Ignorable_Code_Point}\u2800]*$/u;

function isBlank(value: string): boolean {
  return NOTHING_VISIBLE.test(value);
}

function codePointLength(value: string): number {
  let length = 0;
  for (const _ of value) length += 1;
  return length;
}

/**
 * A person's or an organization's name as the admin API and the seed file take it: not blank, and
 * none of the characters the file-name rules forbid for hiding or turning text.
 */
export function isDisplayName(value: string): boolean {
  return !isBlank(value) && !LONE_SURROGATE.test(value) && !CONTROL_CHARACTERS.test(value) && !BIDI_CONTROLS.test(value);
}

/**
 * A name as it may be shown to a person: every control and bidirectional control character
 * written out as ⟨U+202E⟩, so a name that the rules refuse (a local file the sync engine reports,
 * a document stored before the rule) cannot display as another name or turn the text after it.
 */
export function visibleName(value: string): string {
  return value.replace(INVISIBLE_HAZARDS, (character) => `⟨${codePointName(character)}⟩`);
}

/**
 * `lookAlikes: false` leaves out the rules against look-alike names (invisible characters, edge
 * marks, a trailing dot): for a search's folder filter, which may name a folder stored before those
 * rules, and compares keys that leave those characters out anyway.
 */
interface NameRules {
  lookAlikes: boolean;
}

/** Why a name would pass for another: an invisible character, or a joiner or mark at its edge. */
function lookAlikeRule(value: string, label: string): string | undefined {
  const invisible = forbiddenInvisible(value);
  if (invisible !== undefined) return `${label} must not contain the invisible character ${codePointName(invisible)}, which would make it look like another name`;
  if (EDGE_TEXT_MARK.test(value)) return `${label} must not begin or end with an invisible joiner, direction mark or presentation selector`;
  return undefined;
}

/** Validates one name (a file name or a path segment) and returns its NFC form. */
export function checkName(raw: string, label = 'fileName', rules: NameRules = { lookAlikes: true }): NameCheck {
  if (LONE_SURROGATE.test(raw)) return { ok: false, rule: `${label} must be valid Unicode text (it holds half of a surrogate pair)` };
  const value = raw.normalize('NFC');
  if (isBlank(value)) return { ok: false, rule: `${label} must not be blank (it has no visible character)` };
  if (codePointLength(value) > MAX_FILE_NAME_LENGTH) {
    return { ok: false, rule: `${label} must be at most ${MAX_FILE_NAME_LENGTH} characters` };
  }
  if (value.includes('/') || value.includes('\\')) return { ok: false, rule: `${label} must not contain '/' or '\\'` };
  if (CONTROL_CHARACTERS.test(value)) return { ok: false, rule: `${label} must not contain control characters` };
  if (BIDI_CONTROLS.test(value)) {
    return { ok: false, rule: `${label} must not contain bidirectional control characters (U+202A–U+202E, U+2066–U+2069), which make a name display as another` };
  }
  const lookAlike = rules.lookAlikes ? lookAlikeRule(value, label) : undefined;
  if (lookAlike !== undefined) return { ok: false, rule: lookAlike };
  if (value === '.' || value === '..') return { ok: false, rule: `${label} must not be '.' or '..'` };
  if (value !== value.trim()) return { ok: false, rule: `${label} must not begin or end with spaces` };
  // Windows drops trailing dots: "scan.stl." would be "scan.stl" there, a second file of one name.
  if (rules.lookAlikes && value.endsWith('.')) return { ok: false, rule: `${label} must not end with '.'` };
  return { ok: true, value };
}

export function checkFileName(raw: string): NameCheck {
  return checkName(raw, 'fileName');
}

/** A search's folder filter: the path rules but the look-alike ones, so a folder stored before them can still be opened. */
export function checkPathFilter(raw: string): NameCheck {
  return checkPath(raw, 'path', { lookAlikes: false });
}

/**
 * Validates a folder path and returns its canonical form: NFC, a leading '/', no trailing '/'
 * (except the root), every segment a valid name.
 */
export function checkPath(raw: string, label = 'path', rules: NameRules = { lookAlikes: true }): NameCheck {
  const value = raw.normalize('NFC');
  if (!value.startsWith('/')) return { ok: false, rule: `${label} must begin with '/'` };
  if (value === ROOT_PATH) return { ok: true, value };
  // The limit applies to the path as stored, after its trailing '/' is dropped.
  const trimmed = value.endsWith('/') ? value.slice(0, -1) : value;
  if (codePointLength(trimmed) > MAX_PATH_LENGTH) {
    return { ok: false, rule: `${label} must be at most ${MAX_PATH_LENGTH} characters` };
  }
  const segments = trimmed.slice(1).split('/');
  for (const segment of segments) {
    if (segment.length === 0) return { ok: false, rule: `${label} must not contain empty segments ('//')` };
    const check = checkName(segment, `${label} segment`, rules);
    if (!check.ok) return check;
  }
  return { ok: true, value: trimmed };
}

/**
 * Lower-case letters that Unicode's simple case folding (CaseFolding.txt, status C) maps to another
 * letter, each with the letter it meets: toLowerCase() alone keeps the final sigma apart from σ
 * ("ΟΔΟΣ" and "οδοσ" would be two names), the long s ſ from s, the micro sign µ from μ, and Greek
 * and old Cyrillic letter variants from their plain forms. Windows and macOS treat such names as one.
 */
const FOLD_AFTER_LOWER: Record<string, string> = {
  '\u00b5': '\u03bc', '\u017f': 's', '\u0345': '\u03b9', '\u03c2': '\u03c3', '\u03d0': '\u03b2', '\u03d1': '\u03b8',
  '\u03d5': '\u03c6', '\u03d6': '\u03c0', '\u03f0': '\u03ba', '\u03f1': '\u03c1', '\u03f5': '\u03b5', '\u1c80': '\u0432',
  '\u1c81': '\u0434', '\u1c82': '\u043e', '\u1c83': '\u0441', '\u1c84': '\u0442', '\u1c85': '\u0442', '\u1c86': '\u044a',
  '\u1c87': '\u0463', '\u1c88': '\ua64b', '\u1e9b': '\u1e61', '\u1fbe': '\u03b9',
  // The capital ẞ lowers to ß, which upper case alone would have made SS.
  '\u00df': 'ss',
};
// An alternation, not a character class: one of the letters (U+0345) is a combining mark.
const FOLDED_AFTER_LOWER = new RegExp(Object.keys(FOLD_AFTER_LOWER).join('|'), 'gu');

/** Every default-ignorable or format character: none of them is seen, so none tells two names apart. */
const UNSEEN = /[\p{Default_Ignorable_Code_Point}\p{Cf}]/gu;
/** Dots that end a name or a folder of a path: Windows drops them. */
const TRAILING_DOTS = /\.+(?=\/|$)/g;
const DOTLESS_I = '\u0131';

/**
 * Full Unicode case folding, as far as a look-alike matters: upper case then lower case applies
 * the full mappings (ß and ẞ → ss, ŉ → ʼn, ᾳ → αι, İ → i̇), then the letters above. The Turkish
 * dotless ı is kept apart from i, as case folding keeps it.
 */
function caseFold(value: string): string {
  return value
    .split(DOTLESS_I)
    .map((part) => part.toUpperCase().toLowerCase())
    .join(DOTLESS_I)
    .replace(FOLDED_AFTER_LOWER, (letter) => FOLD_AFTER_LOWER[letter]!);
}

/**
 * The key that uniqueness, path filters and name searches compare (docs/security.md "Names that
 * look alike"): compatibility forms folded (NFKC: fullwidth letters, ligatures, the no-break and
 * other spaces), case folded in full (ß = ss, İ = i̇), characters nobody sees left out (joiners,
 * direction marks, presentation selectors, and any invisible character a stored name still holds),
 * and the dots that end a name or folder dropped. Names with one key are one name: the second is
 * refused (409), so a clinic never sees two "scan.stl" that are different files. Every store
 * computes its keys with this function.
 */
export function foldKey(value: string): string {
  const visible = value.normalize('NFKC').replace(UNSEEN, '');
  return caseFold(visible).normalize('NFKC').replace(TRAILING_DOTS, '');
}

export function joinPath(base: string, ...segments: string[]): string {
  const parts = [base, ...segments].flatMap((part) => part.split('/')).filter((part) => part.length > 0);
  return parts.length === 0 ? ROOT_PATH : `/${parts.join('/')}`;
}

/** `scan.stl` → `STL`; no extension → `BIN` (DESIGN §3). */
export function fileTypeFromName(fileName: string): string {
  const dot = fileName.lastIndexOf('.');
  if (dot <= 0 || dot === fileName.length - 1) return 'BIN';
  const extension = fileName.slice(dot + 1).toUpperCase();
  return FILE_TYPE_PATTERN.test(extension) ? extension : 'BIN';
}

export const FILE_TYPE_PATTERN = /^[A-Z0-9]{1,16}$/;

/**
 * The name an earlier version is saved under, so it is not taken for (or saved over) the current
 * file: "upper (version 1).stl". The current version keeps the file's own name.
 */
export function versionFileName(fileName: string, version: number, current: boolean): string {
  if (current) return fileName;
  const dot = fileName.lastIndexOf('.');
  const [stem, extension] = dot > 0 ? [fileName.slice(0, dot), fileName.slice(dot)] : [fileName, ''];
  return `${stem} (version ${version})${extension}`;
}
