/**
 * Recognises database errors: those callers answer as a client's mistake rather than a fault, and
 * those that only say a transaction lost a race with another and may simply run again.
 */
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

/** PostgreSQL broke a deadlock by aborting this transaction (SQLSTATE 40P01). */
export const isDeadlock = (error: unknown) => hasCode(error, '40P01');

/** A concurrent transaction made this one's reads stale (SQLSTATE 40001, serialization_failure). */
export const isSerializationFailure = (error: unknown) => hasCode(error, '40001');

/**
 * The transaction lost a race rather than did anything wrong: run again from the start, it would
 * very likely succeed (PostgreSQL's advice for both SQLSTATEs). See `retryOnConflict` (retry.ts).
 */
export const isTransientConflict = (error: unknown) => isDeadlock(error) || isSerializationFailure(error);
