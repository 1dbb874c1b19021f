/**
 * Fixed-window request counters in `rate_limit_windows`, shared by every process of a cluster. One
 * atomic upsert counts a request and reads the count, so concurrent requests (in one process or
 * several) never lose a count, and the window comes from the database clock, so processes whose
 * clocks differ still agree on it. A limit on outcomes (failed sign-ins per address) peeks before
 * the work and counts after it.
 */
import { sql } from 'drizzle-orm';
import type { Executor } from './client.js';

export interface RateWindowDecision {
  allowed: boolean;
  limit: number;
  /** Requests left in the current window after this one. */
  remaining: number;
  /** Whole seconds (at least 1) until the current window ends. */
  retryAfterSeconds: number;
}

/**
 * Says whether one more count in `bucket`'s current window would be within `limit`, without counting
 * it: for limits on outcomes (failed sign-ins) that are checked before the work and counted after.
 */
export async function peekRateWindow(
  ex: Executor,
  bucket: string,
  limit: number,
  windowMs: number,
): Promise<RateWindowDecision> {
  const result = (await ex.execute(sql`
    select c.now_ms, c.window_start_ms, coalesce((
      select w.count from rate_limit_windows as w
      where w.bucket = ${bucket}::text and w.window_start >= to_timestamp(c.window_start_ms / 1000)
    ), 0) as count
    from (
      select n.now_ms, floor(n.now_ms / ${windowMs}::float8) * ${windowMs}::float8 as window_start_ms
      from (select extract(epoch from clock_timestamp())::float8 * 1000 as now_ms) as n
    ) as c`)) as unknown as {
    rows: Array<{ count: number; window_start_ms: number; now_ms: number }>;
  };
  return decide(result.rows[0]!, limit, windowMs, 1);
}

/**
 * Counts one request in `bucket`'s current window of `windowMs` and says whether it is within
 * `limit`. Refused requests are counted too (they cost nothing more, and the count only matters
 * until the window ends).
 */
export async function takeRateWindow(
  ex: Executor,
  bucket: string,
  limit: number,
  windowMs: number,
): Promise<RateWindowDecision> {
  // A statement that reaches the row after a concurrent one moved it to a newer window (its own
  // clock reading being a moment older) counts itself in that newer window instead of resetting it.
  const result = (await ex.execute(sql`
    insert into rate_limit_windows as w (bucket, window_start, count)
    select ${bucket}::text, to_timestamp(floor(c.now_ms / ${windowMs}::float8) * ${windowMs}::float8 / 1000), 1
    from (select extract(epoch from clock_timestamp())::float8 * 1000 as now_ms) as c
    on conflict (bucket) do update set
      count = case when w.window_start >= excluded.window_start then w.count + 1 else 1 end,
      window_start = greatest(w.window_start, excluded.window_start)
    returning w.count,
      extract(epoch from w.window_start)::float8 * 1000 as window_start_ms,
      extract(epoch from clock_timestamp())::float8 * 1000 as now_ms`)) as unknown as {
    rows: Array<{ count: number; window_start_ms: number; now_ms: number }>;
  };
  return decide(result.rows[0]!, limit, windowMs, 0);
}

/** `extra`: counts the caller still means to add (a peek asks about the next one). */
function decide(
  row: { count: number; window_start_ms: number; now_ms: number },
  limit: number,
  windowMs: number,
  extra: number,
): RateWindowDecision {
  const count = Number(row.count) + extra;
  const endsInMs = Number(row.window_start_ms) + windowMs - Number(row.now_ms);
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    retryAfterSeconds: Math.max(1, Math.ceil(endsInMs / 1000)),
  };
}
