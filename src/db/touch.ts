/**
 * How a store marks a row as changed. A store update that moves `updated_at` does it through this
 * helper, so the rule lives in one place: SQL `now()`, the same clock the column's default uses.
 * `now()` is the transaction's start time, so rows changed together in one transaction share one
 * `updated_at`, and the value never depends on the application's clock. Statements written as raw
 * SQL say `updated_at = now()` themselves, with the same meaning.
 */
import { type SQL, sql } from 'drizzle-orm';

/** `values` (an update's `set`) with `updated_at` set to the transaction's `now()`. */
export function withUpdatedAt<T extends object>(values: T): T & { updatedAt: SQL } {
  return { ...values, updatedAt: sql`now()` };
}
