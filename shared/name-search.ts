/**
 * Finding a person by name the way staff type it (DESIGN §3 "Patients"): each word of the query,
 * in any order, anywhere in the name, ignoring case, accents and punctuation. "pearson jane" finds
 * "Jane Pearson", "muller" finds "Müller", "obrien" finds "O'Brien", "smith j" finds "Smith, John".
 * One function for the server's `GET /v1/patients?name=` and for the app, so both find the same.
 */

/** Letters that carry no combining mark to strip, but that people type as plain Latin letters. */
const PLAIN_LETTERS: Record<string, string> = { ß: 'ss', ẞ: 'ss', ø: 'o', æ: 'ae', œ: 'oe', ł: 'l', đ: 'd', ð: 'd', þ: 'th', ı: 'i', ŋ: 'n', ħ: 'h' };
const PLAIN_LETTER = new RegExp(`[${Object.keys(PLAIN_LETTERS).join('')}]`, 'gu');
const MARKS = /\p{M}+/gu;
/** Punctuation and symbols vanish (O'Brien → obrien, Smith-Jones → smithjones); they do not split a word. */
const PUNCTUATION = /[\p{P}\p{S}]+/gu;
const SPACES = /[\p{White_Space}\p{Default_Ignorable_Code_Point}]+/gu;

/** A name or a query as compared: lower case, no accents, no punctuation, single spaces. */
export function foldForSearch(text: string): string {
  return text
    .normalize('NFKD')
    .replace(MARKS, '')
    .toLowerCase()
    .replace(PLAIN_LETTER, (letter) => PLAIN_LETTERS[letter]!)
    .replace(PUNCTUATION, '')
    .replace(SPACES, ' ')
    .trim();
}

/** The words of a query, folded; none for a blank query (which matches every name). */
export function searchWords(query: string): string[] {
  const folded = foldForSearch(query);
  return folded === '' ? [] : [...new Set(folded.split(' '))];
}

/** Whether every word of the query occurs in the name (as a whole word or part of one), in any order. */
export function nameMatches(name: string, words: readonly string[]): boolean {
  if (words.length === 0) return true;
  const folded = foldForSearch(name);
  return words.every((word) => folded.includes(word));
}

/** `nameMatches` for a query not yet split into words. */
export function nameMatchesQuery(name: string, query: string): boolean {
  return nameMatches(name, searchWords(query));
}
