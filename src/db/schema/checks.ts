/**
 * CHECK constraints over closed sets of strings, rendered from the same `as const` lists the code
 * uses (provider ids, statuses). PostgreSQL keeps a constraint's text, and drizzle-kit compares it
 * with the last snapshot, so the SQL must be literal — no bound parameters — and byte-for-byte what
 * a hand-written `in ('a', 'b')` gives; the values are checked first because they are inlined.
 */
import { type SQL, sql } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';

/** Characters an inlined value may hold: nothing that could end the quoted string. */
const SAFE_VALUE = /^[A-Za-z0-9_-]+$/;

/** `column in ('a', 'b', …)` for a CHECK constraint. */
export function oneOf(column: PgColumn, values: readonly string[]): SQL {
  if (values.length === 0) throw new Error('A CHECK list needs at least one value');
  for (const value of values) {
    if (!SAFE_VALUE.test(value)) throw new Error(`Unsafe value in a CHECK list: ${JSON.stringify(value)}`);
  }
  return sql`${column} in ${sql.raw(`(${values.map((value) => `'${value}'`).join(', ')})`)}`;
}
