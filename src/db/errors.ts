/**
 * Recognises database errors: those callers answer as a client's mistake rather than a fault, those
 * that only say a transaction lost a race with another and may simply run again, and what of them
 * may be told in a log line.
 */

/**
 * The database's own error (pg's or PGlite's: both carry a SQLSTATE `code` and a `severity`) inside
 * `error`, looked for through its `cause` chain, since Drizzle wraps it in an error of its own.
 */
export function databaseErrorOf(error: unknown): DatabaseDiagnostics | undefined {
  for (let current: unknown = error; current; current = (current as { cause?: unknown }).cause) {
    const { code, severity } = current as { code?: unknown; severity?: unknown };
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && typeof severity === 'string')
      return current as DatabaseDiagnostics;
  }
  return undefined;
}

/** The SQLSTATE of a database error. */
export const sqlStateOf = (error: unknown): string | undefined => databaseErrorOf(error)?.code;

/** The fields of a database error that name places, never values. */
export interface DatabaseDiagnostics {
  code: string;
  severity?: string;
  table?: string;
  column?: string;
  constraint?: string;
  dataType?: string;
  routine?: string;
}

const hasCode = (error: unknown, code: string) => sqlStateOf(error) === code;

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

/**
 * A value the database could not take (SQLSTATE class 22, "data exception": out of range, bad
 * encoding, malformed text for its type…). Requests are validated so that none gets this far; one
 * that still does is the client's value, answered 422 rather than 500.
 */
export const isDataException = (error: unknown) => sqlStateOf(error)?.startsWith('22') ?? false;

/**
 * What may be said of a database error in a log line or a stored job failure: the SQLSTATE and the
 * places it names. Never its message, detail or statement parameters — those hold the values (a
 * password hash, a sealed key, a whole assistant configuration, an email, a message's text).
 */
export function databaseErrorFacts(error: unknown): Record<string, string> | undefined {
  const found = databaseErrorOf(error);
  if (!found) return undefined;
  const facts: Record<string, string> = { sqlstate: found.code };
  const places = {
    severity: found.severity,
    table: found.table,
    column: found.column,
    constraint: found.constraint,
    data_type: found.dataType,
    routine: found.routine,
  };
  for (const [name, value] of Object.entries(places))
    if (typeof value === 'string' && value) facts[name] = value;
  return facts;
}

/** A database error told without its values: its facts, a message made of them, and the call stack. */
export interface ValueFreeError {
  facts: Record<string, string>;
  message: string;
  /** The frames only: the first lines of a stack repeat the message. */
  frames: string;
}

export function withoutValues(error: unknown): ValueFreeError | undefined {
  const facts = databaseErrorFacts(error);
  if (!facts) return undefined;
  const stack = (error as { stack?: unknown }).stack;
  const frames =
    typeof stack === 'string'
      ? stack
          .split('\n')
          .filter((line) => /^\s+at /.test(line))
          .join('\n')
      : '';
  const described = Object.entries(facts)
    .map(([name, value]) => `${name}=${value}`)
    .join(' ');
  return { facts, message: `database error (${described})`, frames };
}
