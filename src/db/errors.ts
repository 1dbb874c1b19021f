/** Recognises database errors that callers answer as a client's mistake rather than a fault. */
function hasCode(error: unknown, code: string): boolean {
  for (let current: unknown = error; current; current = (current as { cause?: unknown }).cause) {
    if ((current as { code?: unknown }).code === code) return true;
  }
  return false;
}

/** A unique constraint refused the row (SQLSTATE 23505). */
export const isUniqueViolation = (error: unknown) => hasCode(error, '23505');

/** A number did not fit its column (SQLSTATE 22003), e.g. a balance beyond numeric(14, 4). */
export const isNumericOverflow = (error: unknown) => hasCode(error, '22003');

/** A foreign key refused the change (SQLSTATE 23503): the row it names is gone, or still in use. */
export const isForeignKeyViolation = (error: unknown) => hasCode(error, '23503');
