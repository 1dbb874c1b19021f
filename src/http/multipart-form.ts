/**
 * The parts of a multipart upload form other than its file, read the same way by every upload route
 * (contact imports, knowledge documents): a file sent in another field is drained and refused, a
 * field the route does not know, a value cut at the size limit or one holding NUL bytes is refused
 * with a validation issue naming it; the rest is kept as text for the route to validate.
 */
import type { MultipartFile, MultipartValue } from '@fastify/multipart';
import type { ValidationIssue } from '../domains/errors.js';
import { nulIssues } from '../lib/nul.js';

/** A file part outside the `file` field: drained (so the form reads on) and refused. True when refused. */
export function refusedFilePart(part: MultipartFile, issues: ValidationIssue[]): boolean {
  if (part.fieldname === 'file') return false;
  part.file.resume();
  issues.push({
    loc: ['body', part.fieldname],
    msg: 'The file goes in a field named "file"',
    type: 'extra_forbidden',
  });
  return true;
}

/** A field part: kept in `values` when the route knows it and its value is whole and clean, else an issue. */
export function acceptFormField(
  part: MultipartValue,
  known: ReadonlySet<string>,
  values: Record<string, string>,
  issues: ValidationIssue[],
): void {
  if (!known.has(part.fieldname)) {
    issues.push({
      loc: ['body', part.fieldname],
      msg: 'Extra inputs are not permitted',
      type: 'extra_forbidden',
    });
  } else if (part.valueTruncated) {
    issues.push({ loc: ['body', part.fieldname], msg: 'The value is too long', type: 'string_too_long' });
  } else {
    const value = String(part.value);
    const nul = nulIssues(value, ['body', part.fieldname]);
    if (nul.length > 0) issues.push(...nul);
    else values[part.fieldname] = value;
  }
}
