/**
 * A patient's identifiers (a chart number, a national id, a scanner's patient id) and birth date:
 * the rules the admin API, the seed file, the admin CLI and `GET /v1/patients` share. An identifier
 * is a (system, value) pair, e.g. `{"system": "chart", "value": "10231"}`; as a filter it is written
 * `system|value` (`identifier=chart|10231`), so a system never holds a `|` (a value may).
 */

export const IDENTIFIER_SYSTEM_MAX = 64;
export const IDENTIFIER_VALUE_MAX = 128;
export const IDENTIFIERS_PER_PATIENT_MAX = 20;
/** The identifier system staff know as the chart (file) number; the app shows it first. */
export const CHART_SYSTEM = 'chart';

export interface PatientIdentifier {
  system: string;
  value: string;
}

const CONTROL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\ud800-\udfff]/u;
const EDGE_SPACE = /^[\p{White_Space}]|[\p{White_Space}]$/u;

function codePoints(value: string): number {
  let length = 0;
  for (const _ of value) length += 1;
  return length;
}

/** Text an identifier part may be: not empty, no space at either end, no control or format characters. */
function isIdentifierText(value: string, max: number): boolean {
  const length = codePoints(value);
  return length >= 1 && length <= max && !EDGE_SPACE.test(value) && !CONTROL.test(value);
}

export function isIdentifierSystem(value: string): boolean {
  return isIdentifierText(value, IDENTIFIER_SYSTEM_MAX) && !value.includes('|');
}

export function isIdentifierValue(value: string): boolean {
  return isIdentifierText(value, IDENTIFIER_VALUE_MAX);
}

/** `system|value` read as an identifier (split at the first `|`), or undefined when either part breaks the rules. */
export function parseIdentifierFilter(text: string): PatientIdentifier | undefined {
  const bar = text.indexOf('|');
  if (bar < 0) return undefined;
  const identifier = { system: text.slice(0, bar), value: text.slice(bar + 1) };
  return isIdentifierSystem(identifier.system) && isIdentifierValue(identifier.value) ? identifier : undefined;
}

export function isIdentifierFilter(text: string): boolean {
  return parseIdentifierFilter(text) !== undefined;
}

export function formatIdentifier(identifier: PatientIdentifier): string {
  return `${identifier.system}|${identifier.value}`;
}

/** The first identifier that appears twice in one patient's list, if any. */
export function repeatedIdentifier(identifiers: readonly PatientIdentifier[]): PatientIdentifier | undefined {
  const seen = new Set<string>();
  for (const identifier of identifiers) {
    const key = formatIdentifier(identifier);
    if (seen.has(key)) return identifier;
    seen.add(key);
  }
  return undefined;
}

/** Earliest birth date taken: older records are typing errors, not patients. */
export const EARLIEST_BIRTH_DATE = '1850-01-01';
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * Today's date where the day has begun first (UTC+14): a birth date entered anywhere on Earth
 * today is never "in the future" because the server's clock is in another time zone.
 */
export function latestBirthDate(now: Date = new Date()): string {
  return new Date(now.getTime() + 14 * 60 * 60 * 1000).toISOString().slice(0, 10);
}

/** `YYYY-MM-DD`, a day that exists (no 31 April, 29 February only in leap years), from 1850 to today. */
export function isBirthDate(value: string, now: Date = new Date()): boolean {
  const match = DATE.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  const real = date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
  return real && value >= EARLIEST_BIRTH_DATE && value <= latestBirthDate(now);
}

/**
 * The identifier that tells a patient apart in a list: the chart number when there is one, else
 * the first identifier; undefined when the patient has none.
 */
export function distinguishingIdentifier(identifiers: readonly PatientIdentifier[] | undefined): PatientIdentifier | undefined {
  return identifiers?.find((identifier) => identifier.system === CHART_SYSTEM) ?? identifiers?.[0];
}

/** Whether a patient passes GET /v1/patients' filters (the server's rule, for the app's demo and scripted engines). */
export function matchesPatientFilter(
  patient: { name: string; identifiers?: readonly PatientIdentifier[] | undefined; birthDate?: string | null | undefined },
  filter: { name?: string | undefined; identifier?: string | undefined; birthDate?: string | undefined },
  nameMatchesQuery: (name: string, query: string) => boolean,
): boolean {
  if (filter.name !== undefined && !nameMatchesQuery(patient.name, filter.name)) return false;
  if (filter.birthDate !== undefined && patient.birthDate !== filter.birthDate) return false;
  if (filter.identifier !== undefined) {
    const wanted = parseIdentifierFilter(filter.identifier);
    if (!wanted || !(patient.identifiers ?? []).some((identifier) => identifier.system === wanted.system && identifier.value === wanted.value)) return false;
  }
  return true;
}

/**
 * What staff typed into a patient search box, read as GET /v1/patients' filters: a birth date
 * (1984-03-02, or 02.03.1984 / 02/03/1984 in the order of the computer's locale) anywhere among the
 * words; the other words are the name; a single word with a digit may also be a chart number.
 */
export interface PatientSearch {
  /** The words that are not the birth date; undefined when none. */
  name: string | undefined;
  birthDate: string | undefined;
  /** The word to try as a chart number (`chart|word`), when the name is one word with a digit in it. */
  chart: string | undefined;
}

const LOCAL_DATE = /^(\d{1,2})[./-](\d{1,2})[./-](\d{4})$/;

export function readPatientSearch(text: string, options: { dayFirst: boolean; now?: Date }): PatientSearch {
  let birthDate: string | undefined;
  const words: string[] = [];
  for (const word of text.trim().split(/\s+/u).filter(Boolean)) {
    const date = birthDate === undefined ? asBirthDate(word.replace(/[,;]$/u, ''), options) : undefined;
    if (date !== undefined) birthDate = date;
    else words.push(word);
  }
  const name = words.length > 0 ? words.join(' ') : undefined;
  const single = words.length === 1 ? words[0]!.replace(/^#/u, '') : undefined;
  const chart = single !== undefined && /\d/u.test(single) && isIdentifierValue(single) ? single : undefined;
  return { name, birthDate, chart };
}

function asBirthDate(word: string, options: { dayFirst: boolean; now?: Date }): string | undefined {
  let iso = word;
  const local = LOCAL_DATE.exec(word);
  if (local) {
    const [first, second, year] = [local[1]!.padStart(2, '0'), local[2]!.padStart(2, '0'), local[3]!];
    iso = options.dayFirst ? `${year}-${second}-${first}` : `${year}-${first}-${second}`;
  }
  return isBirthDate(iso, options.now) ? iso : undefined;
}
