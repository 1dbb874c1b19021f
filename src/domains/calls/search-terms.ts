/**
 * How call search reads a query and what it indexes for phone numbers. Full-text search matches
 * whole lexemes or their prefixes, not substrings, so a number is indexed as every suffix of its
 * digits (3 digits or more): "14155552671" is also "4155552671", "5552671", … "671". A partial
 * number typed anywhere in the number is then the prefix of one of those suffixes, which a GIN index
 * answers without scanning (`'5552:*'`).
 */

/** Fewest characters (besides spaces) a search query may have (platform-api.md Limits). */
export const MIN_QUERY_LENGTH = 3;
/** Fewest digits a partial phone number may have (decisions §6). */
export const MIN_NUMBER_DIGITS = 3;

/** Every digit suffix of 3 or more digits of each number, without repeats. */
export function phoneLexemes(numbers: ReadonlyArray<string | null | undefined>): string[] {
  const lexemes = new Set<string>();
  for (const number of numbers) {
    const digits = (number ?? '').replace(/\D/g, '');
    for (let start = 0; start <= digits.length - MIN_NUMBER_DIGITS; start++) lexemes.add(digits.slice(start));
  }
  return [...lexemes];
}

/** A Postgres array literal of digit lexemes (digits only: nothing in it needs quoting). */
export function digitArrayLiteral(lexemes: readonly string[]): string {
  return `{${lexemes.join(',')}}`;
}

export type CallSearchQuery =
  /** Looks like (part of) a phone number: its digits, matched as a prefix of a digit suffix. */
  | { kind: 'number'; digits: string }
  /** Words: web-search syntax ("quoted phrases", or, -excluded), stemmed in English. */
  | { kind: 'words'; text: string };

/** Characters people write phone numbers with besides digits. */
const NUMBER_LIKE = /^[+\d\s().-]+$/;

export function readSearchQuery(q: string): CallSearchQuery {
  const text = q.trim();
  const digits = text.replace(/\D/g, '');
  if (NUMBER_LIKE.test(text) && digits.length >= MIN_NUMBER_DIGITS) return { kind: 'number', digits };
  return { kind: 'words', text };
}
