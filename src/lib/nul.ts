/**
 * Where a value holds U+0000, which PostgreSQL cannot store in `text` or `jsonb`: the check behind
 * the request guard (http/nul.ts) and the contact-file reader, as validation issues.
 */
import type { ValidationIssue } from '../domains/errors.js';

export const NUL = '\u0000';
export const NUL_MESSAGE = 'The text holds a NUL character (U+0000)';

/** The issue of one place that holds NUL. */
export function nulIssue(loc: Array<string | number>): ValidationIssue {
  return { loc, msg: NUL_MESSAGE, type: 'string_nul' };
}

/** Whether any string or object key in `value` holds NUL: the common case, without allocating. */
function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes(NUL);
  if (typeof value !== 'object' || value === null || Buffer.isBuffer(value)) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (holdsNul(item)) return true;
    return false;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (key.includes(NUL) || holdsNul((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

/** An issue at the place of every string (or object key) in `value` that holds NUL. */
export function nulIssues(value: unknown, loc: Array<string | number>): ValidationIssue[] {
  return holdsNul(value) ? placesOfNul(value, loc, []) : [];
}

function placesOfNul(
  value: unknown,
  loc: Array<string | number>,
  found: ValidationIssue[],
): ValidationIssue[] {
  if (typeof value === 'string') {
    if (value.includes(NUL)) found.push(nulIssue(loc));
  } else if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) placesOfNul(item, [...loc, index], found);
  } else if (typeof value === 'object' && value !== null && !Buffer.isBuffer(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes(NUL)) found.push(nulIssue([...loc, key]));
      else placesOfNul(item, [...loc, key], found);
    }
  }
  return found;
}
